package collective

import (
	"context"

	"github.com/weft-hpc/weft/collective/driver"
)

// The collectives MPI has beside NCCL's: rooted gathers and scatters, and
// prefix reductions.

func (c *Comm) gather(a *driver.Call, k driver.Kind, send, recv Buffer, counts []int, root int) error {
	if err := c.checkRoot(k, root); err != nil {
		return err
	}
	typed(&send, &recv)
	total := send.Len() * c.size
	if k == driver.GatherV && c.rank == root {
		var err error
		if total, err = c.checkCounts(k, "counts", counts); err != nil {
			return err
		}
		if send.Len() != counts[c.rank] {
			return c.invalid(k, "send holds %d elements, counts[%d] = %d", send.Len(), c.rank, counts[c.rank])
		}
	}
	want := total
	if c.rank != root {
		recv, want = Buffer{dt: send.dt}, 0
	}
	if err := c.checkPair(k, send, recv, want); err != nil {
		return err
	}
	*a = driver.Call{Kind: k, DType: send.dt, Send: send.b, Recv: recv.b, Root: root, Count: send.Len()}
	if err := c.place(k, a, send, recv); err != nil {
		return err
	}
	if k == driver.GatherV {
		a.Count, a.Counts = 0, rootCounts(c.rank == root, counts)
	}
	return nil
}

// rootCounts is the Counts of a GatherV or ScatterV call: the root's
// counts; nil elsewhere, where the rank's own block is its buffer.
func rootCounts(root bool, counts []int) []int {
	if !root {
		return nil
	}
	return append([]int(nil), counts...)
}

// Gather concatenates send of every rank, in rank order, into recv of rank
// root: recv.Len() == Size() * send.Len() there; recv is ignored on the
// other ranks (pass the zero Buffer). send may be the root's block of
// recv (in place).
func (c *Comm) Gather(ctx context.Context, send, recv Buffer, root int) error {
	return c.blocking(ctx, func(a *driver.Call) error { return c.gather(a, driver.Gather, send, recv, nil, root) })
}

// IGather is Gather without waiting.
func (c *Comm) IGather(send, recv Buffer, root int) *Request {
	return c.nonBlocking(func(a *driver.Call) error { return c.gather(a, driver.Gather, send, recv, nil, root) })
}

// GatherV is Gather with counts[i] elements from rank i, packed in rank
// order in the root's recv. Only the root reads counts (as MPI_Gatherv's
// recvcounts): there send.Len() == counts[root]; every other rank's block
// is its send, and its counts may be nil (whatever it holds is ignored).
// Where the root's counts[i] is not rank i's send.Len(), every rank gets
// an error wrapping ErrMismatch.
func (c *Comm) GatherV(ctx context.Context, send, recv Buffer, counts []int, root int) error {
	return c.blocking(ctx, func(a *driver.Call) error { return c.gather(a, driver.GatherV, send, recv, counts, root) })
}

// IGatherV is GatherV without waiting.
func (c *Comm) IGatherV(send, recv Buffer, counts []int, root int) *Request {
	return c.nonBlocking(func(a *driver.Call) error { return c.gather(a, driver.GatherV, send, recv, counts, root) })
}

func (c *Comm) scatter(a *driver.Call, k driver.Kind, send Buffer, counts []int, recv Buffer, root int) error {
	if err := c.checkRoot(k, root); err != nil {
		return err
	}
	if c.rank != root {
		send = Buffer{}
	}
	typed(&send, &recv)
	total := recv.Len() * c.size
	if k == driver.ScatterV && c.rank == root {
		var err error
		if total, err = c.checkCounts(k, "counts", counts); err != nil {
			return err
		}
		if recv.Len() != counts[c.rank] {
			return c.invalid(k, "recv holds %d elements, counts[%d] = %d", recv.Len(), c.rank, counts[c.rank])
		}
	}
	if c.rank != root {
		send = Buffer{dt: recv.dt}
	} else if send.Len() != total {
		return c.invalid(k, "send holds %d elements, want %d", send.Len(), total)
	}
	if !recv.dt.Valid() {
		return c.invalid(k, "recv buffer has invalid type %d", recv.dt)
	}
	if send.dt != recv.dt {
		return c.invalid(k, "send is %v, recv is %v", send.dt, recv.dt)
	}
	if err := c.checkCount(k, total); err != nil {
		return err
	}
	*a = driver.Call{Kind: k, DType: recv.dt, Send: send.b, Recv: recv.b, Root: root, Count: recv.Len()}
	if err := c.place(k, a, send, recv); err != nil {
		return err
	}
	if k == driver.ScatterV {
		a.Count, a.Counts = 0, rootCounts(c.rank == root, counts)
	}
	return nil
}

// Scatter sends block i of the root's send to rank i, into recv:
// send.Len() == Size() * recv.Len() on the root; send is ignored on the
// other ranks. recv may be the root's block of send (in place).
func (c *Comm) Scatter(ctx context.Context, send, recv Buffer, root int) error {
	return c.blocking(ctx, func(a *driver.Call) error { return c.scatter(a, driver.Scatter, send, nil, recv, root) })
}

// IScatter is Scatter without waiting.
func (c *Comm) IScatter(send, recv Buffer, root int) *Request {
	return c.nonBlocking(func(a *driver.Call) error { return c.scatter(a, driver.Scatter, send, nil, recv, root) })
}

// ScatterV is Scatter with counts[i] elements to rank i, packed in rank
// order in the root's send. Only the root reads counts (as MPI_Scatterv's
// sendcounts): there recv.Len() == counts[root]; every other rank's block
// is its recv, and its counts may be nil (whatever it holds is ignored).
// Where the root's counts[i] is not rank i's recv.Len(), every rank gets
// an error wrapping ErrMismatch.
func (c *Comm) ScatterV(ctx context.Context, send Buffer, counts []int, recv Buffer, root int) error {
	return c.blocking(ctx, func(a *driver.Call) error { return c.scatter(a, driver.ScatterV, send, counts, recv, root) })
}

// IScatterV is ScatterV without waiting.
func (c *Comm) IScatterV(send Buffer, counts []int, recv Buffer, root int) *Request {
	return c.nonBlocking(func(a *driver.Call) error { return c.scatter(a, driver.ScatterV, send, counts, recv, root) })
}

func (c *Comm) scan(a *driver.Call, k driver.Kind, send, recv Buffer, op Op) error {
	typed(&send, &recv)
	if err := c.checkPair(k, send, recv, send.Len()); err != nil {
		return err
	}
	if err := c.checkOp(k, op, send.dt); err != nil {
		return err
	}
	if op == Avg {
		return c.invalid(k, "avg is not a prefix reduction (use sum and divide by the rank's position)")
	}
	*a = driver.Call{Kind: k, DType: send.dt, Op: op, Send: send.b, Recv: recv.b, Count: send.Len()}
	if err := c.place(k, a, send, recv); err != nil {
		return err
	}
	return nil
}

// Scan leaves in recv of rank r the reduction of send over ranks 0..r,
// combined in rank order (MPI_Scan). send and recv may be the same Buffer.
func (c *Comm) Scan(ctx context.Context, send, recv Buffer, op Op) error {
	return c.blocking(ctx, func(a *driver.Call) error { return c.scan(a, driver.Scan, send, recv, op) })
}

// IScan is Scan without waiting.
func (c *Comm) IScan(send, recv Buffer, op Op) *Request {
	return c.nonBlocking(func(a *driver.Call) error { return c.scan(a, driver.Scan, send, recv, op) })
}

// Exscan leaves in recv of rank r the reduction of send over ranks
// 0..r-1 (MPI_Exscan); recv of rank 0 is left as it is.
func (c *Comm) Exscan(ctx context.Context, send, recv Buffer, op Op) error {
	return c.blocking(ctx, func(a *driver.Call) error { return c.scan(a, driver.Exscan, send, recv, op) })
}

// IExscan is Exscan without waiting.
func (c *Comm) IExscan(send, recv Buffer, op Op) *Request {
	return c.nonBlocking(func(a *driver.Call) error { return c.scan(a, driver.Exscan, send, recv, op) })
}

// AllReduceValue combines one value of every rank with op and returns the
// result, for the scalars a solver reduces every few steps (a residual, a
// count) without a slice of one.
func AllReduceValue[T Element](ctx context.Context, c *Comm, x T, op Op) (T, error) {
	v := []T{x}
	err := c.AllReduce(ctx, Buf(v), Buf(v), op)
	return v[0], err
}
