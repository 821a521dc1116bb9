package graph

import (
	"errors"
	"testing"
)

// TestBuildNodeLimits: a node count past 2^40 or past the machine's
// memory is an error before anything is allocated, not a makeslice panic
// or the runtime's out-of-memory crash.
func TestBuildNodeLimits(t *testing.T) {
	for _, n := range []int64{9_000_000_000_000_000_000, MaxNodes + 1, 1 << 39} {
		el := &EdgeList{NumNodes: n, Src: []int64{0}, Dst: []int64{1}}
		if _, err := Build(el, BuildOptions{}); !errors.Is(err, ErrTooManyNodes) {
			t.Errorf("Build of %d nodes: %v, want ErrTooManyNodes", n, err)
		}
	}
	if err := CheckNodes(1 << 20); err != nil {
		t.Errorf("CheckNodes(2^20): %v", err)
	}
}
