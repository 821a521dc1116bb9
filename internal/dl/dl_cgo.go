//go:build cgo

package dl

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

static void* weft_dlopen(const char* path) { return dlopen(path, RTLD_NOW | RTLD_GLOBAL); }
static const char* weft_dlerror(void) { return dlerror(); }
*/
import "C"

import (
	"errors"
	"unsafe"
)

// Dlopen is the real loader: dlopen(RTLD_NOW|RTLD_GLOBAL).
type Dlopen struct{}

type dlLib struct{ h unsafe.Pointer }

func dlerr() string {
	if e := C.weft_dlerror(); e != nil {
		return C.GoString(e)
	}
	return "unknown dlopen error"
}

// Open dlopens path.
func (Dlopen) Open(path string) (Library, error) {
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	h := C.weft_dlopen(cs)
	if h == nil {
		return nil, errors.New(dlerr())
	}
	return &dlLib{h: h}, nil
}

func (l *dlLib) Sym(name string) (unsafe.Pointer, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	C.weft_dlerror() // clear
	p := C.dlsym(l.h, cs)
	if p == nil {
		return nil, errors.New(dlerr())
	}
	return p, nil
}

func (l *dlLib) Close() error {
	if C.dlclose(l.h) != 0 {
		return errors.New("dlclose: " + dlerr())
	}
	return nil
}
