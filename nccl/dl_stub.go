//go:build !cgo

package nccl

import (
	"fmt"
	"unsafe"
)

// dl is the loader of a build without cgo: it loads nothing.
type dl struct{}

func (dl) open(path string) (library, error) {
	return nil, fmt.Errorf("this binary was built without cgo (CGO_ENABLED=0), so it cannot dlopen %s", path)
}

// cfunc has no trampolines without cgo: only Go functions (fakes) bind.
func cfunc(key string, p unsafe.Pointer) (any, bool) { return nil, false }
