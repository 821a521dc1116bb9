package nccl

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"unsafe"
)

// The native boundary: loading and symbol lookup sit behind these two tiny
// interfaces (go-nvml's dynamicLibrary), so the lifecycle (library missing,
// symbol missing, double close) and the Go logic above it are tested with a
// fake, without a GPU and without cgo.

// loader opens a shared library; the real one is dlopen (dl_cgo.go).
type loader interface {
	open(path string) (library, error)
}

// library is an opened shared library.
type library interface {
	// sym returns the address of a symbol, or an error naming it.
	sym(name string) (unsafe.Pointer, error)
	// close unloads the library (dlclose).
	close() error
}

// goSymbols is an optional ability of a library: it supplies Go functions
// in place of C symbols, keyed like the fields of the API tables ("ncclGetUniqueId",
// "cudaMemcpy/h2d"). Fakes implement it; real libraries do not.
type goSymbols interface {
	// goSym returns a function of type typ for key, or nil to fall back
	// to the C symbol.
	goSym(key string, typ reflect.Type) any
}

// libSpec names a library and how to find it.
type libSpec struct {
	lib   string   // the usual name, used in messages
	names []string // sonames to try, most preferred first
	env   string   // WEFT_* variable with an explicit path
	hint  string   // what to install, for the error
}

var (
	ncclSpec = libSpec{lib: "libnccl.so.2", names: []string{"libnccl.so.2", "libnccl.so"}, env: "WEFT_LIBNCCL",
		hint: "install NCCL (pip install nvidia-nccl-cu13) and add its lib directory to LD_LIBRARY_PATH: " +
			`export LD_LIBRARY_PATH=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))')/lib:$LD_LIBRARY_PATH` +
			", or set WEFT_LIBNCCL to the file"}
	cudartSpec = libSpec{lib: "libcudart.so", names: []string{"libcudart.so.13", "libcudart.so.12", "libcudart.so"}, env: "WEFT_LIBCUDART",
		hint: "install the CUDA runtime (the CUDA toolkit, or pip install nvidia-cuda-runtime) and add its lib directory to LD_LIBRARY_PATH, or set WEFT_LIBCUDART to the file"}
	driverSpec = libSpec{lib: "libcuda.so.1", names: []string{"libcuda.so.1", "libcuda.so"}, env: "WEFT_LIBCUDA",
		hint: "install the NVIDIA driver (libcuda.so.1 comes with the driver, not with the CUDA toolkit); in a container, run with the NVIDIA container runtime"}
	nvrtcSpec = libSpec{lib: "libnvrtc.so", names: []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}, env: "WEFT_LIBNVRTC",
		hint: "install NVRTC (the CUDA toolkit, or pip install nvidia-cuda-nvrtc) with its libnvrtc-builtins next to it, and add its lib directory to LD_LIBRARY_PATH, or set WEFT_LIBNVRTC to the file"}
)

// candidates is the list of names and paths to try for a library: the
// explicit path from the environment, the sonames (found through
// LD_LIBRARY_PATH and the loader cache), then the same sonames in the usual
// CUDA directories.
func (s libSpec) candidates() []string {
	var c []string
	if p := envLib(s.env); p != "" {
		c = append(c, p)
	}
	c = append(c, s.names...)
	var dirs []string
	if h := cudaHome(); h != "" {
		dirs = append(dirs, filepath.Join(h, "lib64"), filepath.Join(h, "lib"))
	}
	dirs = append(dirs, "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib")
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			continue
		}
		for _, n := range s.names {
			c = append(c, filepath.Join(d, n))
		}
	}
	return c
}

// dynlib is one loaded library and its lifecycle.
type dynlib struct {
	spec libSpec
	path string // what dlopen accepted

	mu     sync.Mutex
	lib    library
	closed bool
}

// load tries the spec's candidates in order.
func load(ld loader, s libSpec) (*dynlib, error) {
	tried := s.candidates()
	var last error
	for _, p := range tried {
		l, err := ld.open(p)
		if err == nil {
			return &dynlib{spec: s, path: p, lib: l}, nil
		}
		last = err
	}
	reason := "no candidates"
	if last != nil {
		reason = last.Error()
	}
	return nil, &LibraryError{Lib: s.lib, Tried: tried, Reason: reason, Hint: s.hint}
}

// close unloads the library once; a second call returns an error wrapping
// ErrClosed.
func (d *dynlib) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("nccl: %s: %w", d.spec.lib, ErrClosed)
	}
	d.closed = true
	return d.lib.close()
}

// binder fills an API table from a library, one field per symbol.
type binder struct {
	d   *dynlib
	err error
}

// fn sets *dst (a pointer to a func field) to the function for key: a Go
// function when the library supplies one, else the C symbol (the part of
// key before a '/') wrapped by its trampoline. A missing required symbol is
// an error; a missing optional one leaves *dst nil.
func (b *binder) fn(key string, dst any, optional bool) {
	if b.err != nil {
		return
	}
	v := reflect.ValueOf(dst).Elem()
	if g, ok := b.d.lib.(goSymbols); ok {
		if f := g.goSym(key, v.Type()); f != nil {
			v.Set(reflect.ValueOf(f)) // panics on a fake of the wrong type: a test bug
			return
		}
	}
	sym := key
	for i := range key {
		if key[i] == '/' {
			sym = key[:i]
			break
		}
	}
	p, err := b.d.lib.sym(sym)
	if err != nil || p == nil {
		if optional {
			return
		}
		reason := "dlsym failed"
		if err != nil {
			reason = err.Error()
		}
		b.err = &LibraryError{Lib: b.d.spec.lib, Symbol: sym, Tried: []string{b.d.path}, Reason: reason,
			Hint: "this version is too old for Weft or the file is not " + b.d.spec.lib + "; " + b.d.spec.hint}
		return
	}
	f, ok := cfunc(key, p)
	if !ok {
		b.err = fmt.Errorf("nccl: no trampoline for %s in this build: %w", key, ErrNotBuilt)
		return
	}
	v.Set(reflect.ValueOf(f))
}
