package graph

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
)

// MaxNodes is the largest node count of a graph: the limit of num_nodes
// in docs/FORMAT.md.
const MaxNodes = int64(1) << 40

// ErrTooManyNodes is wrapped by the errors of CheckNodes: a node count
// above MaxNodes, or one whose arrays cannot fit this machine's memory.
var ErrTooManyNodes = errors.New("too many nodes")

// CheckNodes reports whether a graph of n nodes can be built here, before
// anything of that size is allocated: n <= MaxNodes, and the row pointers
// (8 bytes a node, what Build allocates first) take at most half of the
// machine's memory (MemTotal of /proc/meminfo; not checked where it cannot
// be read).
func CheckNodes(n int64) error {
	if n > MaxNodes {
		return fmt.Errorf("%d nodes, more than the limit of 2^40 = %d: %w", n, MaxNodes, ErrTooManyNodes)
	}
	if mem := memTotal(); mem > 0 && n > (mem/2)/8 {
		return fmt.Errorf("%d nodes need %s for the row pointers alone, more than half of this machine's %s of memory: %w",
			n, gib(8*(n+1)), gib(mem), ErrTooManyNodes)
	}
	return nil
}

// CheckBuild is CheckNodes for a graph about to be generated or built
// with edges edges and extra bytes of node data (features, labels): the
// row pointers, 24 bytes an edge (an edge list's two ids and the CSR's
// column index alive together while it is built) and extra together take
// at most half of the machine's memory. Counts so large that the sum
// overflows are refused too.
func CheckBuild(nodes, edges, extra int64) error {
	if err := CheckNodes(nodes); err != nil {
		return err
	}
	const perEdge = 24
	mem := memTotal()
	if mem <= 0 {
		return nil
	}
	if edges > math.MaxInt64/(4*perEdge) || extra > math.MaxInt64/4 {
		return fmt.Errorf("%d nodes, %d edges and %d bytes of node data: far more than this machine's %s of memory: %w",
			nodes, edges, extra, gib(mem), ErrTooManyNodes)
	}
	if need := 8*(nodes+1) + perEdge*edges + extra; need > mem/2 {
		return fmt.Errorf("%d nodes and %d edges need about %s, more than half of this machine's %s of memory: %w",
			nodes, edges, gib(need), gib(mem), ErrTooManyNodes)
	}
	return nil
}

func gib(b int64) string { return strconv.FormatFloat(float64(b)/(1<<30), 'f', 1, 64) + " GiB" }

// memTotal is MemTotal of /proc/meminfo in bytes, 0 when unknown.
func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) >= 2 && string(f[0]) == "MemTotal:" {
			kb, err := strconv.ParseInt(string(f[1]), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
