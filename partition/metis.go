package partition

import (
	"context"
	"fmt"
	"math"

	"github.com/weft-hpc/weft/graph"
)

// METIS partitions with METIS_PartGraphKway from the system libmetis
// (multilevel k-way, Karypis and Kumar 1998) through cgo, the baseline
// DistDGL uses. Vertices carry two weights (ncon = 2): 1 for every node
// and 1 for a training node, so METIS balances both; edges are unweighted
// and the objective is the edge cut. The graph is symmetrised and its self
// loops dropped first when needed (METIS requires both). Without cgo,
// Partition returns ErrNotBuilt.
type METIS struct {
	// UFactor is the allowed imbalance of each constraint in thousandths
	// (METIS's -ufactor): 30 means 1.03. Zero: METIS's default (30).
	UFactor int
}

var _ Partitioner = METIS{}

// Name returns "metis".
func (METIS) Name() string { return "metis" }

// MetisError is a METIS_PartGraphKway status other than METIS_OK.
type MetisError int

func (e MetisError) Error() string {
	switch e {
	case -2:
		return "partition: metis: METIS_ERROR_INPUT (erroneous inputs or options)"
	case -3:
		return "partition: metis: METIS_ERROR_MEMORY (out of memory)"
	case -4:
		return "partition: metis: METIS_ERROR"
	}
	return fmt.Sprintf("partition: metis: status %d", int(e))
}

// Partition calls METIS_PartGraphKway.
func (m METIS) Partition(ctx context.Context, g *graph.CSR, k int, train []int64, opt Options) ([]int32, error) {
	isTrain, err := check("metis", g, k, train)
	if err != nil {
		return nil, err
	}
	if !metisBuilt {
		return nil, fmt.Errorf("partition: metis: %w", ErrNotBuilt)
	}
	a, err := undirected("metis", g)
	if err != nil {
		return nil, err
	}
	if a.ptr[a.n] > math.MaxInt32 {
		return nil, fmt.Errorf("partition: metis: %d adjacency entries: libmetis here has 32-bit idx_t (at most 2^31-1): %w", a.ptr[a.n], ErrInvalid)
	}
	opt.report("metis", 0, 1)
	xadj := make([]int32, a.n+1)
	for i, p := range a.ptr {
		xadj[i] = int32(p)
	}
	// Two constraints: nodes and training nodes. METIS wants every
	// constraint to have a positive total, so without training nodes
	// there is one.
	ncon := 1
	vwgt := []int32(nil)
	if isTrain != nil {
		ncon = 2
		vwgt = make([]int32, 2*a.n)
		for v := range a.n {
			vwgt[2*v] = 1
			if isTrain[v] {
				vwgt[2*v+1] = 1
			}
		}
	}
	part := make([]int32, a.n)
	if k == 1 {
		opt.report("metis", 1, 1)
		return part, nil // METIS refuses nparts = 1 in some versions
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	seed := int32(opt.Seed % math.MaxInt32)
	if err := metisKway(xadj, a.idx, vwgt, ncon, k, m.UFactor, seed, part); err != nil {
		return nil, err
	}
	opt.report("metis", 1, 1)
	return part, nil
}
