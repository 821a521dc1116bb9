package dl

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/weft-hpc/weft/internal/fault"
)

type testLoader struct {
	missing bool
	opened  []string
	lib     *testLib
}

type testLib struct {
	noSym  map[string]bool
	funcs  map[string]any
	closes int
}

func (l *testLoader) Open(path string) (Library, error) {
	l.opened = append(l.opened, path)
	if l.missing {
		return nil, errors.New(path + ": cannot open shared object file: No such file or directory")
	}
	return l.lib, nil
}

func (l *testLib) Sym(name string) (unsafe.Pointer, error) {
	if l.noSym[name] {
		return nil, errors.New("undefined symbol: " + name)
	}
	return unsafe.Pointer(&l.closes), nil // any address: the trampoline wraps it
}

func (l *testLib) Close() error { l.closes++; return nil }

func (l *testLib) GoSym(key string, typ reflect.Type) any { return l.funcs[key] }

var spec = Spec{Lib: "libx.so.1", Names: []string{"libx.so.1", "libx.so"}, Env: "WEFT_LIBX", Hint: "install x"}

func TestCandidates(t *testing.T) {
	c := spec.Candidates("/opt/x/libx.so.1", "")
	if c[0] != "/opt/x/libx.so.1" || c[1] != "libx.so.1" || c[2] != "libx.so" {
		t.Fatalf("candidates = %q", c)
	}
	if c := spec.Candidates("", "/nonexistent/cuda"); c[0] != "libx.so.1" {
		t.Fatalf("candidates without an explicit path = %q", c)
	}
}

func TestMissingLibrary(t *testing.T) {
	ld := &testLoader{missing: true}
	_, err := Load(ld, spec, spec.Candidates("", ""))
	var le *LibraryError
	if !errors.As(err, &le) || le.Lib != "libx.so.1" || le.Symbol != "" || !errors.Is(err, fault.ErrNotBuilt) || !IsNotFound(err) {
		t.Fatalf("%v, want a LibraryError wrapping ErrNotBuilt", err)
	}
	for _, h := range []string{"libx.so.1 not found", "libx.so", "No such file", "install x"} {
		if !strings.Contains(err.Error(), h) {
			t.Errorf("message lacks %q: %v", h, err)
		}
	}
	if len(le.Tried) != len(ld.opened) {
		t.Errorf("tried %q, opened %q", le.Tried, ld.opened)
	}
}

func TestBinder(t *testing.T) {
	lib := &testLib{noSym: map[string]bool{"x_gone": true}, funcs: map[string]any{"x_go": func() int { return 7 }}}
	d, err := Load(&testLoader{lib: lib}, spec, []string{"libx.so.1"})
	if err != nil {
		t.Fatal(err)
	}
	var fgo, fc, fopt func() int
	tramp := func(key string, p unsafe.Pointer) (any, bool) {
		if key != "x_c/variant" {
			return nil, false
		}
		return func() int { return 42 }, true
	}
	b := &Binder{Lib: d, Tramp: tramp}
	b.Fn("x_go", &fgo, false)
	b.Fn("x_c/variant", &fc, false)
	b.Fn("x_gone", &fopt, true)
	if b.Err != nil || fgo() != 7 || fc() != 42 || fopt != nil {
		t.Fatalf("bind: %v", b.Err)
	}
	var freq func() int
	b.Fn("x_gone", &freq, false)
	var le *LibraryError
	if !errors.As(b.Err, &le) || le.Symbol != "x_gone" || !strings.Contains(b.Err.Error(), "too old") {
		t.Fatalf("missing required symbol: %v", b.Err)
	}
	b2 := &Binder{Lib: d, Tramp: tramp}
	var fnone func() int
	b2.Fn("x_other", &fnone, false)
	if !errors.Is(b2.Err, fault.ErrNotBuilt) || !strings.Contains(b2.Err.Error(), "no trampoline") {
		t.Fatalf("a symbol without a trampoline: %v", b2.Err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); !errors.Is(err, ErrClosed) || lib.closes != 1 {
		t.Fatalf("double close: %v, %d dlcloses", err, lib.closes)
	}
}

func TestDlopenReportsMissing(t *testing.T) {
	_, err := Load(Dlopen{}, spec, []string{"libweft-no-such-library.so.9"})
	if !IsNotFound(err) || !strings.Contains(err.Error(), "libweft-no-such-library.so.9") {
		t.Fatalf("%v", err)
	}
}
