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

// TestCheckBuild: edge and node-data counts past the memory, and counts
// whose byte sum would overflow, are refused; a small graph passes.
func TestCheckBuild(t *testing.T) {
	if memTotal() == 0 {
		t.Skip("no MemTotal in /proc/meminfo: CheckBuild checks only the node limit")
	}
	for _, c := range [][3]int64{{1 << 20, 1 << 40, 0}, {10, 1 << 62, 0}, {10, 10, 1 << 62}, {1 << 20, 10, memTotal()}} {
		if err := CheckBuild(c[0], c[1], c[2]); !errors.Is(err, ErrTooManyNodes) {
			t.Errorf("CheckBuild(%d, %d, %d): %v, want ErrTooManyNodes", c[0], c[1], c[2], err)
		}
	}
	if err := CheckBuild(1<<20, 1<<24, 1<<28); err != nil {
		t.Errorf("CheckBuild of 2^20 nodes, 2^24 edges, 256 MiB: %v", err)
	}
}
