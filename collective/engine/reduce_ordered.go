package engine

import "github.com/weft-hpc/weft/collective/driver"

// Reductions that do not commute (a user-defined driver.Op that says so)
// must combine the contributions in rank order: (x0 op x1) op x2 ... Of
// the algorithms, recursive doubling (allreduce and reduce-scatter),
// Rabenseifner's allreduce and the scan chain combine blocks of
// consecutive ranks, the lower block first, and so do the binomial tree
// and chain of reduce when the root is rank 0. The others (the rings,
// shared memory, hierarchical, and reduce to another root, whose tree is
// in the order of ranks counted from the root) are marked commutesOnly
// and step aside; reduce runs reduceOrdered.

// commutesOnly is the can of an algorithm that combines contributions out
// of rank order.
func commutesOnly(c *conn, a *driver.Call) bool { return a.Op.Commutative() }

// reduceOrdered is a reduce for a reduction that does not commute: the
// binomial tree to rank 0, which combines in rank order, then one hop
// from rank 0 to the root. Cost: the tree's, plus one message of the
// whole buffer when the root is not 0.
func reduceOrdered(x *exec, a *driver.Call) error {
	r, root := x.c.rank, a.Root
	if root == 0 {
		return reduceTree(x, a)
	}
	b := *a
	b.Root = 0
	if r == 0 {
		b.Recv = x.scratchBuf(1, len(a.Send))
	}
	if err := reduceTree(x, &b); err != nil {
		return err
	}
	const tagHop = 1 << 16 // above the tree's tags (one per doubling)
	switch r {
	case 0:
		return x.send(root, tagHop, b.Recv)
	case root:
		return x.recvWait(0, tagHop, a.Recv)
	}
	return nil
}
