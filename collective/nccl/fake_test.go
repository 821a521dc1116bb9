package nccl

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"unsafe"

	"github.com/weft-hpc/weft/internal/dl"
)

// fakeLoader is the loader of the tests: it "finds" the libraries not
// listed in missing, and each library supplies Go functions: those in
// funcs, and for every other entry point a stub that panics if called
// (stubs) or, without stubs, nothing (so a symbol is missing).
type fakeLoader struct {
	missing map[string]bool     // library base names that do not exist
	noSym   map[string]bool     // symbols the libraries lack
	funcs   map[string]any      // Go implementations by API key
	stubs   bool                // supply panicking stubs for the rest
	opened  []string            // paths asked for, in order
	libs    map[string]*testLib // opened, by base name
	mu      sync.Mutex
}

type testLib struct {
	ld     *fakeLoader
	name   string
	closes int
}

func (f *fakeLoader) Open(path string) (dl.Library, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened = append(f.opened, path)
	base := filepath.Base(path)
	if f.missing[base] || f.missing[strings.SplitN(base, ".so", 2)[0]] {
		return nil, fmt.Errorf("%s: cannot open shared object file: No such file or directory", path)
	}
	if f.libs == nil {
		f.libs = map[string]*testLib{}
	}
	l := &testLib{ld: f, name: base}
	f.libs[base] = l
	return l, nil
}

func (l *testLib) Sym(name string) (unsafe.Pointer, error) {
	return nil, fmt.Errorf("%s: undefined symbol: %s", l.name, name)
}

func (l *testLib) Close() error {
	l.closes++
	if l.closes > 1 {
		return errors.New("fake: dlclose of a closed handle")
	}
	return nil
}

func (l *testLib) GoSym(key string, typ reflect.Type) any {
	sym := strings.SplitN(key, "/", 2)[0]
	if l.ld.noSym[sym] {
		return nil
	}
	if f, ok := l.ld.funcs[key]; ok {
		return f
	}
	if !l.ld.stubs {
		return nil
	}
	return reflect.MakeFunc(typ, func([]reflect.Value) []reflect.Value {
		panic("fake: " + key + " called but not faked")
	}).Interface()
}

// initFake is the init part of NCCL for a world of ranks in one process:
// ncclGetUniqueId, ncclCommInitRankConfig (non-blocking: in progress until
// every rank of the same id has joined), ncclCommGetAsyncError,
// ncclCommAbort. hang lists ranks whose init never joins.
type initFake struct {
	mu      sync.Mutex
	hang    map[int]bool
	nranks  map[uintptr]int32
	idOf    map[uintptr]UniqueID
	joined  map[UniqueID]int
	aborted map[uintptr]bool
	ids     map[int]UniqueID // the id each rank passed to init
	next    uintptr
}

func newInitFake(hang ...int) *initFake {
	f := &initFake{hang: map[int]bool{}, nranks: map[uintptr]int32{}, idOf: map[uintptr]UniqueID{},
		joined: map[UniqueID]int{}, aborted: map[uintptr]bool{}, ids: map[int]UniqueID{}, next: 0x1000}
	for _, r := range hang {
		f.hang[r] = true
	}
	return f
}

func (f *initFake) install(funcs map[string]any) {
	funcs["ncclGetUniqueId"] = func(id *UniqueID) Result {
		for i := range id {
			id[i] = byte(i*7 + 3)
		}
		return Success
	}
	funcs["ncclCommInitRankConfig"] = func(comm *uintptr, nranks int32, id *UniqueID, rank int32, blocking bool) Result {
		if blocking {
			return InvalidUsage
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.next += 0x10
		*comm = f.next
		f.nranks[f.next] = nranks
		f.idOf[f.next] = *id
		f.ids[int(rank)] = *id
		if !f.hang[int(rank)] {
			f.joined[*id]++
		}
		return InProgress
	}
	funcs["ncclCommGetAsyncError"] = func(comm uintptr, async *Result) Result {
		f.mu.Lock()
		defer f.mu.Unlock()
		switch {
		case f.aborted[comm]:
			*async = InvalidUsage
		case f.joined[f.idOf[comm]] == int(f.nranks[comm]):
			*async = Success
		default:
			*async = InProgress
		}
		return Success
	}
	funcs["ncclCommAbort"] = func(comm uintptr) Result {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.aborted[comm] = true
		return Success
	}
	funcs["ncclCommFinalize"] = func(uintptr) Result { return Success }
	funcs["ncclCommDestroy"] = func(uintptr) Result { return Success }
}

func (f *initFake) abortCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.aborted)
}
