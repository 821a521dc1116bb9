//go:build !cgo

package hdf5

import (
	"errors"
	"testing"
)

func TestNotBuilt(t *testing.T) {
	if _, err := Open("x.h5"); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("Open: %v", err)
	}
	if _, err := Create("x.h5"); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("Create: %v", err)
	}
	if ThreadSafe() || LibraryVersion() != "" {
		t.Error("library reported without cgo")
	}
}
