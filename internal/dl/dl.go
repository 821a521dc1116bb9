// Package dl loads optional native libraries with dlopen and binds their
// entry points to Go functions, for the bindings of NVIDIA's libraries
// (package cuda: the CUDA runtime, driver API, NVRTC, cuBLAS; package
// nccl: NCCL). Nothing of those libraries is needed at build time: each
// binding declares the few prototypes it calls and hands a Trampoline
// that wraps a symbol's address as a typed Go function.
//
// Loading and symbol lookup sit behind two small interfaces (Loader,
// Library), as in go-nvml, so that the lifecycle (library missing, symbol
// missing, double close) is tested without the library, and so that a
// Library may supply Go functions in place of C symbols (GoSymbols): the
// host-memory fake of package cuda and the NCCL fakes of the tests do.
// Written here rather than taken from go-nvml, whose dynamicLibrary is
// internal to it.
//
// A missing library or symbol is a *LibraryError that names the library,
// the paths tried, dlerror's text and what to install, and wraps
// fault.ErrNotBuilt. Without cgo, Dlopen loads nothing and says why.
package dl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"unsafe"

	"github.com/weft-hpc/weft/internal/fault"
)

// ErrClosed: the library was unloaded already.
var ErrClosed = fault.ErrClosed

// Loader opens a shared library; Dlopen is the real one.
type Loader interface {
	Open(path string) (Library, error)
}

// Library is an opened shared library.
type Library interface {
	// Sym returns the address of a symbol, or an error naming it.
	Sym(name string) (unsafe.Pointer, error)
	// Close unloads the library (dlclose).
	Close() error
}

// GoSymbols is an optional ability of a Library: it supplies Go functions
// in place of C symbols, keyed like the fields of a binding's API table
// ("cudaMalloc", "cudaMemcpy/h2d"). Fakes implement it.
type GoSymbols interface {
	// GoSym returns a function of type typ for key, or nil to fall back
	// to the C symbol.
	GoSym(key string, typ reflect.Type) any
}

// Spec names a library and how to find it.
type Spec struct {
	Lib   string   // the usual name, used in messages ("libnccl.so.2")
	Names []string // sonames to try, most preferred first
	Env   string   // WEFT_* variable naming an explicit path, tried first
	Hint  string   // what to install, for the error
}

// Candidates is the list of names and paths to try: the explicit path
// (explicit, from the Spec's variable), the sonames (found through
// LD_LIBRARY_PATH and the loader cache), then the same sonames in
// cudaHome's lib64 and lib and in /usr/local/cuda's lib64 and
// targets/x86_64-linux/lib.
func (s Spec) Candidates(explicit, cudaHome string) []string {
	var c []string
	if explicit != "" {
		c = append(c, explicit)
	}
	c = append(c, s.Names...)
	var dirs []string
	if cudaHome != "" {
		dirs = append(dirs, filepath.Join(cudaHome, "lib64"), filepath.Join(cudaHome, "lib"))
	}
	dirs = append(dirs, "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib")
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			continue
		}
		for _, n := range s.Names {
			c = append(c, filepath.Join(d, n))
		}
	}
	return c
}

// Lib is one loaded library and its lifecycle.
type Lib struct {
	Spec Spec
	Path string // what the loader accepted

	mu     sync.Mutex
	lib    Library
	closed bool
}

// Load tries the candidates in order and returns the first that opens,
// or a *LibraryError.
func Load(ld Loader, s Spec, candidates []string) (*Lib, error) {
	var last error
	for _, p := range candidates {
		l, err := ld.Open(p)
		if err == nil {
			return &Lib{Spec: s, Path: p, lib: l}, nil
		}
		last = err
	}
	reason := "no candidates"
	if last != nil {
		reason = last.Error()
	}
	return nil, &LibraryError{Lib: s.Lib, Tried: candidates, Reason: reason, Hint: s.Hint}
}

// Close unloads the library once; a second call returns an error wrapping
// ErrClosed.
func (d *Lib) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("%s: %w", d.Spec.Lib, ErrClosed)
	}
	d.closed = true
	return d.lib.Close()
}

// Trampoline wraps the C symbol at p as the Go function of API field key;
// ok is false when the binding has none for key (a build without cgo).
type Trampoline func(key string, p unsafe.Pointer) (f any, ok bool)

// Binder fills an API table from a library, one field per symbol. The
// first failure is kept in Err and later calls do nothing.
type Binder struct {
	Lib   *Lib
	Tramp Trampoline
	Err   error
}

// Fn sets *dst (a pointer to a func field) to the function for key: a Go
// function when the library supplies one, else the C symbol (the part of
// key before a '/') wrapped by its trampoline. A missing required symbol
// is an error; a missing optional one leaves *dst nil.
func (b *Binder) Fn(key string, dst any, optional bool) {
	if b.Err != nil {
		return
	}
	v := reflect.ValueOf(dst).Elem()
	if g, ok := b.Lib.lib.(GoSymbols); ok {
		if f := g.GoSym(key, v.Type()); f != nil {
			v.Set(reflect.ValueOf(f)) // panics on a fake of the wrong type: a test bug
			return
		}
	}
	sym, _, _ := strings.Cut(key, "/")
	p, err := b.Lib.lib.Sym(sym)
	if err != nil || p == nil {
		if optional {
			return
		}
		reason := "dlsym failed"
		if err != nil {
			reason = err.Error()
		}
		b.Err = &LibraryError{Lib: b.Lib.Spec.Lib, Symbol: sym, Tried: []string{b.Lib.Path}, Reason: reason,
			Hint: "this version is too old for Weft or the file is not " + b.Lib.Spec.Lib + "; " + b.Lib.Spec.Hint}
		return
	}
	f, ok := b.Tramp(key, p)
	if !ok {
		b.Err = fmt.Errorf("%s: no trampoline for %s in this build: %w", b.Lib.Spec.Lib, key, fault.ErrNotBuilt)
		return
	}
	v.Set(reflect.ValueOf(f))
}

// LibraryError says that a native library could not be loaded or lacks a
// symbol, what was tried and what to install. It wraps fault.ErrNotBuilt.
type LibraryError struct {
	Lib    string   // the library's usual name, "libnccl.so.2"
	Symbol string   // the missing symbol, "" when the library itself is missing
	Tried  []string // names and paths given to dlopen, in order
	Reason string   // dlerror() of the last attempt, or why no attempt was made
	Hint   string   // what to install or set
}

func (e *LibraryError) Error() string {
	if e.Symbol != "" {
		return fmt.Sprintf("%s has no symbol %s (%s): %s", e.Lib, e.Symbol, e.Reason, e.Hint)
	}
	return fmt.Sprintf("%s not found (tried %s: %s): %s", e.Lib, strings.Join(e.Tried, ", "), e.Reason, e.Hint)
}

func (e *LibraryError) Unwrap() error { return fault.ErrNotBuilt }

// IsNotFound reports whether err says that a native library or one of its
// symbols is missing (or the binary has no cgo), as opposed to a failure
// of a library that loaded.
func IsNotFound(err error) bool { return errors.Is(err, fault.ErrNotBuilt) }
