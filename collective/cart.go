package collective

import (
	"context"
	"fmt"
)

// Dup returns a new communicator with the same ranks (MPI_Comm_dup): its
// operations never match those of c, so a library can talk on its own.
// Dup is collective.
func (c *Comm) Dup(ctx context.Context) (*Comm, error) { return c.Split(ctx, 0, c.rank) }

// Dims chooses a grid of ndims dimensions for nodes ranks, as balanced as
// possible, largest dimension first (MPI_Dims_create with every dimension
// free): Dims(12, 2) is [4 3], Dims(8, 3) is [2 2 2], Dims(7, 2) is [7 1].
// Its error, for fewer than one node or dimension, wraps ErrInvalid.
func Dims(nodes, ndims int) ([]int, error) {
	if nodes < 1 || ndims < 1 {
		return nil, fmt.Errorf("collective: Dims(%d, %d): want at least one node and one dimension: %w", nodes, ndims, ErrInvalid)
	}
	var factors []int // prime factors, largest first
	for n, p := nodes, 2; n > 1; {
		if p*p > n {
			p = n
		}
		for n%p == 0 {
			factors = append([]int{p}, factors...)
			n /= p
		}
		p++
	}
	dims := make([]int, ndims)
	for i := range dims {
		dims[i] = 1
	}
	for _, f := range factors { // each factor to the smallest dimension
		small := 0
		for i := range dims {
			if dims[i] < dims[small] {
				small = i
			}
		}
		dims[small] *= f
	}
	for i := range dims { // largest first
		for j := i + 1; j < len(dims); j++ {
			if dims[j] > dims[i] {
				dims[i], dims[j] = dims[j], dims[i]
			}
		}
	}
	return dims, nil
}

// Cart is a Cartesian grid over the ranks of a communicator, in row-major
// order (the last dimension varies fastest), as MPI_Cart_create lays it
// out without reordering. Comm.CartCreate makes it with a communicator of
// its own (MPI_Cart_create); Comm.Cart lays it over c itself, without
// communicating. Either way Comm returns the communicator, and the grid
// has slices (Sub) and neighbour collectives (topo.go).
//
// The helpers' rule: an error they return (Dims, Comm.Cart) wraps
// ErrInvalid, like every argument error of a communicator, and fails
// nothing; Coords, Rank and Shift, which return no error, panic with a
// "collective: " message on a rank, coordinate list or dimension that is
// not the grid's (a programming mistake, like an index out of range).
type Cart struct {
	dims     []int
	periodic []bool
	rank     int
	cartComm // its communicator (topo.go)
}

// Cart lays the ranks of c on a grid of the given dimensions, periodic or
// not along each (periodic may be nil: none is). The dimensions must
// multiply to c.Size(); an error wraps ErrInvalid. Cart is local: it
// communicates nothing.
func (c *Comm) Cart(dims []int, periodic []bool) (*Cart, error) {
	n := 1
	for _, d := range dims {
		if d < 1 {
			return nil, c.invalidOp("cart", "Cart%v: a dimension below 1", dims)
		}
		n *= d
	}
	if len(dims) == 0 || n != c.size {
		return nil, c.invalidOp("cart", "Cart%v: %d places for %d ranks", dims, n, c.size)
	}
	if periodic != nil && len(periodic) != len(dims) {
		return nil, c.invalidOp("cart", "Cart%v: %d periodic flags for %d dimensions", dims, len(periodic), len(dims))
	}
	p := make([]bool, len(dims))
	copy(p, periodic)
	return &Cart{dims: append([]int(nil), dims...), periodic: p, rank: c.rank, cartComm: cartComm{comm: c}}, nil
}

// Dims returns the grid's dimensions.
func (t *Cart) Dims() []int { return append([]int(nil), t.dims...) }

// Coords returns the coordinates of rank r (MPI_Cart_coords).
func (t *Cart) Coords(r int) []int {
	if n := t.size(); r < 0 || r >= n {
		panic(fmt.Sprintf("collective: Cart.Coords(%d): rank outside the grid's [0, %d)", r, n))
	}
	out := make([]int, len(t.dims))
	for i := len(t.dims) - 1; i >= 0; i-- {
		out[i] = r % t.dims[i]
		r /= t.dims[i]
	}
	return out
}

// Rank returns the rank at coords (MPI_Cart_rank); a coordinate past a
// periodic dimension wraps around, one past a non-periodic one gives
// ProcNull.
func (t *Cart) Rank(coords []int) int {
	if len(coords) != len(t.dims) {
		panic(fmt.Sprintf("collective: Cart.Rank(%v): %d coordinates for a grid of %d dimensions", coords, len(coords), len(t.dims)))
	}
	r := 0
	for i, x := range coords {
		d := t.dims[i]
		if x < 0 || x >= d {
			if !t.periodic[i] {
				return ProcNull
			}
			x = ((x % d) + d) % d
		}
		r = r*d + x
	}
	return r
}

// Shift returns the ranks this rank receives from and sends to when data
// moves disp steps along dimension dim (MPI_Cart_shift): source is disp
// steps back, dest disp steps forward, ProcNull past a non-periodic edge.
// Pass them to Sendrecv.
func (t *Cart) Shift(dim, disp int) (source, dest int) {
	if dim < 0 || dim >= len(t.dims) {
		panic(fmt.Sprintf("collective: Cart.Shift(%d, %d): dimension outside the grid's [0, %d)", dim, disp, len(t.dims)))
	}
	me := t.Coords(t.rank)
	at := func(step int) int {
		c := append([]int(nil), me...)
		c[dim] += step
		return t.Rank(c)
	}
	return at(-disp), at(disp)
}

func (t *Cart) size() int {
	n := 1
	for _, d := range t.dims {
		n *= d
	}
	return n
}
