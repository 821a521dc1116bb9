//go:build !cgo

package dl

import "fmt"

// Dlopen is the loader of a build without cgo: it loads nothing.
type Dlopen struct{}

// Open says that this binary cannot load path.
func (Dlopen) Open(path string) (Library, error) {
	return nil, fmt.Errorf("this binary was built without cgo (CGO_ENABLED=0), so it cannot dlopen %s", path)
}
