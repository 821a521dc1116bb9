//go:build !cgo

package hdf5io

import (
	"errors"
	"testing"

	"github.com/weft-hpc/weft/graph"
)

func TestNotBuilt(t *testing.T) {
	if _, err := ReadGraph("x.h5"); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("ReadGraph: %v", err)
	}
	g := &Graph{CSR: graph.CSR{Indptr: []int64{0}, Indices32: []int32{}}}
	if err := WriteGraph("x.h5", g, WriteOptions{}); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("WriteGraph: %v", err)
	}
}
