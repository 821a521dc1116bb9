package collective

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/weft-hpc/weft/collective/driver"
)

// cartComm is a Cart's communicator, and the duplicate of it the
// neighbour collectives talk on, so that their messages never match the
// program's own point-to-point traffic on the grid's communicator.
type cartComm struct {
	comm *Comm // the communicator the grid lays out
	own  bool  // CartCreate or Sub made comm: Close closes it

	mu sync.Mutex // one neighbour collective at a time; guards nb
	nb *Comm      // the neighbour collectives' duplicate; nil until made
}

// CartCreate returns a new communicator with a Cartesian grid over its
// ranks (MPI_Cart_create): dims multiply to at most c.Size(), periodic
// says which dimensions wrap around (nil: none). The ranks keep c's order,
// laid out in row-major order (the last dimension varies fastest), as
// MPI_Cart_create does with reorder false; Weft never reorders, which MPI
// also allows for reorder true. Ranks past the grid's size get nil, as
// MPI_COMM_NULL. CartCreate is collective.
//
// The grid's communicator is Cart.Comm: use it as any communicator
// (point-to-point along Shift, collectives). Close the Cart when done: it
// closes that communicator too.
func (c *Comm) CartCreate(ctx context.Context, dims []int, periodic []bool) (*Cart, error) {
	const op = "cartcreate"
	if len(dims) == 0 {
		return nil, c.invalidOp(op, "dims is empty: want at least one dimension")
	}
	n := 1
	for i, d := range dims {
		if d < 1 {
			return nil, c.invalidOp(op, "dims[%d] = %d is below 1", i, d)
		}
		if n *= d; n > c.size {
			return nil, c.invalidOp(op, "dims %v make more places than the %d ranks", dims, c.size)
		}
	}
	if periodic != nil && len(periodic) != len(dims) {
		return nil, c.invalidOp(op, "periodic has %d flags for %d dimensions", len(periodic), len(dims))
	}
	color := 0
	if c.rank >= n {
		color = Undefined
	}
	nc, err := c.Split(ctx, color, c.rank)
	if err != nil || nc == nil {
		return nil, err
	}
	return cartOver(ctx, nc, dims, periodic)
}

// cartOver is the Cart of dims over nc, which it owns, with its
// neighbour communicator made now (collective over nc).
func cartOver(ctx context.Context, nc *Comm, dims []int, periodic []bool) (*Cart, error) {
	nb, err := nc.Dup(ctx)
	if err != nil {
		nc.Close()
		return nil, err
	}
	p := make([]bool, len(dims))
	copy(p, periodic)
	return &Cart{dims: append([]int{}, dims...), periodic: p, rank: nc.rank,
		cartComm: cartComm{comm: nc, own: true, nb: nb}}, nil
}

// Comm is the grid's communicator: the one CartCreate or Sub made, or the
// one Comm.Cart was called on.
func (t *Cart) Comm() *Comm { return t.comm }

// Periodic says which dimensions wrap around (with Dims and Coords of
// Comm().Rank(), MPI_Cart_get).
func (t *Cart) Periodic() []bool { return append([]bool(nil), t.periodic...) }

// Close releases the neighbour collectives' communicator and, for a grid
// CartCreate or Sub made, the grid's communicator. Close is not
// collective.
func (t *Cart) Close() error {
	t.mu.Lock()
	nb := t.nb
	t.nb = nil
	t.mu.Unlock()
	var errs []error
	if nb != nil {
		errs = append(errs, nb.Close())
	}
	if t.own {
		errs = append(errs, t.comm.Close())
	}
	return errors.Join(errs...)
}

// Sub slices the grid (MPI_Cart_sub): the ranks whose coordinates differ
// only along the dimensions where remain is true form a new grid of those
// dimensions (and their periodicity), in the same row-major order. Keeping
// none gives each rank a grid of its own, of no dimension. Sub is
// collective over the grid's communicator; close the result when done.
func (t *Cart) Sub(ctx context.Context, remain []bool) (*Cart, error) {
	if len(remain) != len(t.dims) {
		return nil, t.comm.invalidOp("cartsub", "remain has %d flags for %d dimensions", len(remain), len(t.dims))
	}
	me := t.Coords(t.rank)
	color, key := 0, 0
	dims, periodic := []int{}, []bool{}
	for i, keep := range remain {
		if keep {
			key = key*t.dims[i] + me[i]
			dims, periodic = append(dims, t.dims[i]), append(periodic, t.periodic[i])
		} else {
			color = color*t.dims[i] + me[i]
		}
	}
	nc, err := t.comm.Split(ctx, color, key)
	if err != nil {
		return nil, err
	}
	return cartOver(ctx, nc, dims, periodic)
}

// neighbours are the ranks of the grid's neighbours, in MPI's order for a
// Cartesian grid: for each dimension, the one a step back, then the one a
// step forward (MPI_Cart_shift(dim, 1)'s source, then its dest), ProcNull
// past a non-periodic edge.
func (t *Cart) neighbours() []int {
	out := make([]int, 0, 2*len(t.dims))
	for d := range t.dims {
		src, dst := t.Shift(d, 1)
		out = append(out, src, dst)
	}
	return out
}

// exchange runs one neighbour collective: block k of send (all of send
// when whole) goes to neighbour k, and neighbour k's message lands in block
// k of recv. A message travels with the tag of its direction from the
// sender, 2*dim (back) or 2*dim+1 (forward), and the receive of
// neighbour k waits for the opposite direction's, so that a neighbour that
// is both (a periodic dimension of 1 or 2) delivers each block to its
// place.
func (t *Cart) exchange(ctx context.Context, op string, send Buffer, whole bool, recv Buffer, m int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	nb := t.nb
	if nb == nil { // a grid of Comm.Cart: its duplicate, made on first use
		var err error
		if nb, err = t.comm.Dup(ctx); err != nil {
			return err
		}
		t.nb = nb
	}
	nbrs := t.neighbours()
	var reqs []*Request
	var from []int // the neighbour of each receive, reqs[:len(from)]
	for k, p := range nbrs {
		if p != ProcNull {
			reqs = append(reqs, nb.IRecv(recv.Slice(k*m, (k+1)*m), p, k^1))
			from = append(from, k)
		}
	}
	for k, p := range nbrs {
		if p == ProcNull {
			continue
		}
		b := send
		if !whole {
			b = send.Slice(k*m, (k+1)*m)
		}
		reqs = append(reqs, nb.ISend(b, p, k))
	}
	if err := WaitAll(ctx, reqs...); err != nil {
		return err
	}
	for i, k := range from {
		if got := reqs[i].Status().Bytes; got != m*recv.dt.Size() {
			return nb.result(driver.Recv, &driver.Failure{Kind: ErrMismatch, Culprit: nb.WorldRank(nbrs[k]), Origin: nb.me,
				Msg: fmt.Sprintf("%s: neighbour %d (rank %d) sent %d bytes, want %d x %v", op, k, nbrs[k], got, m, recv.dt)})
		}
	}
	return nil
}

// NeighborAllgather sends send to every neighbour of this rank on the grid
// and receives each neighbour's into its block of recv
// (MPI_Neighbor_allgather). The neighbours are, for each dimension in
// turn, the rank a step back and the one a step forward (Shift(dim, 1)'s
// source and dest), so recv holds 2 x len(Dims()) blocks of send.Len()
// elements. Past a non-periodic edge the neighbour is ProcNull: nothing
// is sent there, and its block of recv is left as it was. Every rank's
// send has the same length and type. NeighborAllgather is collective over
// the grid's communicator and blocks until this rank's part is done; it
// is built on point-to-point calls on a duplicate of that communicator
// (made by CartCreate and Sub, or by the first neighbour collective of a
// grid from Comm.Cart), so it never matches the program's own messages.
// The neighbour collectives of one grid run one at a time, in the order
// they are called (every rank must call them in the same order); the
// buffers are the caller's again when the call returns.
func (t *Cart) NeighborAllgather(ctx context.Context, send, recv Buffer) error {
	const op = "neighborallgather"
	k := 2 * len(t.dims)
	if err := t.checkNeighbor(op, send, recv); err != nil {
		return err
	}
	if recv.Len() != k*send.Len() {
		return t.comm.invalidOp(op, "recv holds %d elements, want %d neighbours x %d", recv.Len(), k, send.Len())
	}
	return t.exchange(ctx, op, send, true, recv, send.Len())
}

// NeighborAlltoall sends block k of send to neighbour k and receives
// neighbour k's block into block k of recv (MPI_Neighbor_alltoall), with
// the neighbours in NeighborAllgather's order: send and recv hold 2 x
// len(Dims()) blocks of the same length. A block to or from ProcNull
// moves nothing; such a block of recv is left as it was. A halo exchange
// is one call: block 2d of send is this rank's edge towards the neighbour
// a step back along dimension d, block 2d+1 towards the one a step
// forward. Collective over the grid's communicator, as NeighborAllgather.
func (t *Cart) NeighborAlltoall(ctx context.Context, send, recv Buffer) error {
	const op = "neighboralltoall"
	k := 2 * len(t.dims)
	if err := t.checkNeighbor(op, send, recv); err != nil {
		return err
	}
	if send.Len() != recv.Len() {
		return t.comm.invalidOp(op, "send holds %d elements and recv %d, want the same", send.Len(), recv.Len())
	}
	if k == 0 {
		if send.Len() != 0 {
			return t.comm.invalidOp(op, "send holds %d elements for a grid of no dimension (no neighbour)", send.Len())
		}
		return nil
	}
	if send.Len()%k != 0 {
		return t.comm.invalidOp(op, "send holds %d elements, not a multiple of %d neighbours", send.Len(), k)
	}
	return t.exchange(ctx, op, send, false, recv, send.Len()/k)
}

func (t *Cart) checkNeighbor(op string, send, recv Buffer) error {
	if !send.dt.Valid() {
		return t.comm.invalidOp(op, "send buffer has invalid type %d", send.dt)
	}
	if recv.dt != send.dt {
		return t.comm.invalidOp(op, "send is %v, recv is %v", send.dt, recv.dt)
	}
	return t.comm.usable(driver.Send)
}
