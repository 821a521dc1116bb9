package nccl

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/weft-hpc/weft/collective"
)

func TestMissingLibraryError(t *testing.T) {
	ld := &fakeLoader{missing: map[string]bool{"libnccl": true, "libcudart": true, "libcuda": true, "libnvrtc": true}}
	l := newLibraries(ld)
	for _, c := range []struct {
		name  string
		load  func() error
		lib   string
		hints []string
	}{
		{"nccl", func() error { _, err := l.nccl(); return err }, "libnccl.so.2", []string{"nvidia-nccl-cu13", "LD_LIBRARY_PATH", "import nvidia.nccl", "WEFT_LIBNCCL"}},
		{"cudart", func() error { _, err := l.cudart(); return err }, "libcudart.so", []string{"libcudart.so.13", "libcudart.so.12", "LD_LIBRARY_PATH"}},
		{"driver", func() error { _, err := l.driver(); return err }, "libcuda.so.1", []string{"NVIDIA driver"}},
		{"nvrtc", func() error { _, err := l.nvrtc(); return err }, "libnvrtc.so", []string{"libnvrtc.so.13", "libnvrtc.so.12"}},
	} {
		err := c.load()
		var le *LibraryError
		if !errors.As(err, &le) || le.Lib != c.lib || le.Symbol != "" {
			t.Fatalf("%s: %v, want a LibraryError for %s", c.name, err, c.lib)
		}
		if !errors.Is(err, ErrNotBuilt) || !IsNotFound(err) {
			t.Errorf("%s: %v does not wrap ErrNotBuilt", c.name, err)
		}
		msg := err.Error()
		for _, h := range append(c.hints, "not found", "No such file") {
			if !strings.Contains(msg, h) {
				t.Errorf("%s: message lacks %q:\n%s", c.name, h, msg)
			}
		}
		if len(le.Tried) == 0 {
			t.Errorf("%s: no paths tried", c.name)
		}
		// The outcome is kept: a second call does not dlopen again.
		n := len(ld.opened)
		if err2 := c.load(); err2 != err {
			t.Errorf("%s: second load gave %v", c.name, err2)
		}
		if len(ld.opened) != n {
			t.Errorf("%s: second load tried dlopen again", c.name)
		}
	}
}

func TestLibraryPathFromEnvironmentFirst(t *testing.T) {
	s := libSpec{lib: "libx.so.1", names: []string{"libx.so.1", "libx.so"}}
	if c := s.candidates(); c[0] != "libx.so.1" || c[1] != "libx.so" {
		t.Fatalf("candidates = %q", c)
	}
}

func TestMissingSymbol(t *testing.T) {
	funcs := map[string]any{}
	ld := &fakeLoader{stubs: true, funcs: funcs, noSym: map[string]bool{"ncclCommInitRankConfig": true}}
	l := newLibraries(ld)
	_, err := l.nccl()
	var le *LibraryError
	if !errors.As(err, &le) || le.Symbol != "ncclCommInitRankConfig" || !errors.Is(err, ErrNotBuilt) {
		t.Fatalf("got %v, want a missing-symbol LibraryError", err)
	}
	if !strings.Contains(err.Error(), "too old") {
		t.Errorf("message does not say why: %v", err)
	}
	// The library opened for the failed bind is closed again.
	if lib := ld.libs["libnccl.so.2"]; lib == nil || lib.closes != 1 {
		t.Errorf("library not closed after a failed bind: %+v", lib)
	}
	// An optional symbol may be missing.
	ld2 := &fakeLoader{stubs: true, funcs: map[string]any{}, noSym: map[string]bool{"ncclGetLastError": true, "cudaEventElapsedTime": true}}
	l2 := newLibraries(ld2)
	if a, err := l2.nccl(); err != nil || a.getLastError != nil {
		t.Fatalf("optional symbol: %v", err)
	}
	if a, err := l2.cudart(); err != nil || a.eventElapsed != nil {
		t.Fatalf("optional symbol: %v", err)
	}
}

func TestLibraryLifecycle(t *testing.T) {
	ld := &fakeLoader{stubs: true, funcs: map[string]any{}}
	l := newLibraries(ld)
	if _, err := l.nccl(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.cudart(); err != nil {
		t.Fatal(err)
	}
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	for name, lib := range ld.libs {
		if lib.closes != 1 {
			t.Errorf("%s closed %d times", name, lib.closes)
		}
	}
	if err := l.close(); !errors.Is(err, ErrClosed) {
		t.Errorf("double close: %v", err)
	}
	if _, err := l.nccl(); !errors.Is(err, ErrClosed) {
		t.Errorf("use after close: %v", err)
	}
	// dynlib on its own: the second close is refused, dlclose runs once.
	d, err := load(ld, ncclSpec)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.close(); err != nil {
		t.Fatal(err)
	}
	if err := d.close(); !errors.Is(err, ErrClosed) {
		t.Errorf("double close: %v", err)
	}
}

// On this machine (no CUDA), or in a build without cgo, every entry point
// says what is missing.
func TestRealLibrariesReportWhatIsMissing(t *testing.T) {
	if n, err := DeviceCount(); err == nil {
		t.Skipf("a CUDA runtime is installed (%d devices): nothing to report", n)
	} else if !IsNotFound(err) || !strings.Contains(err.Error(), "libcudart") {
		t.Fatalf("DeviceCount: %v", err)
	}
	if _, err := Alloc(0, 1024); !IsNotFound(err) {
		t.Errorf("Alloc: %v", err)
	}
	if _, err := NewStream(0); !IsNotFound(err) {
		t.Errorf("NewStream: %v", err)
	}
	if _, err := NewEvent(0, true); !IsNotFound(err) {
		t.Errorf("NewEvent: %v", err)
	}
	if _, err := LoadKernels(0); !IsNotFound(err) {
		t.Errorf("LoadKernels: %v", err)
	}
	if _, err := InitAll(context.Background(), []int{0}); !IsNotFound(err) {
		t.Errorf("InitAll: %v", err)
	}
	if err := Group(func() error { return nil }); !IsNotFound(err) {
		t.Errorf("Group: %v", err)
	}
	comms, err := collective.NewLocal(2)
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, 2)
	done := make(chan int)
	for r := range comms {
		go func() {
			defer func() { done <- r }()
			_, errs[r] = New(context.Background(), comms[r], WithDevice(0))
		}()
	}
	<-done
	<-done
	for r, err := range errs {
		var oe *collective.OpError
		if !errors.As(err, &oe) || !IsNotFound(err) {
			t.Errorf("rank %d: %v", r, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "libnccl.so.2") && !strings.Contains(msg, "rank 0 could not load") && !strings.Contains(msg, "cgo") {
			t.Errorf("rank %d: message does not name the library: %v", r, err)
		}
	}
	for _, c := range comms {
		c.Close()
	}
}

func TestResultIsAnError(t *testing.T) {
	var err error = RemoteError
	if !strings.Contains(err.Error(), "ncclRemoteError") {
		t.Error(err)
	}
	for _, e := range []error{Result(99), CUDAError(600), CUDAError(12345), DriverError(209), DriverError(4242), NVRTCError(6), NVRTCError(77)} {
		if e.Error() == "" {
			t.Errorf("%#v has no message", e)
		}
	}
}
