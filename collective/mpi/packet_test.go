//go:build mpi

package mpi_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/collective/mpi"
	"github.com/weft-hpc/weft/internal/reduce"
)

// packetCall is an allreduce of data (n elements of dt) with op, as the
// front end hands it to the backend.
func packetCall(dt driver.DType, op driver.Op, data []byte) *driver.Call {
	return &driver.Call{Kind: driver.AllReduce, DType: dt, Op: op, Count: len(data) / dt.Size(), Send: data, Recv: make([]byte, len(data))}
}

// carried is whether the signature check's packet must carry an
// allreduce of dt with op: the built-in arithmetic reductions of the real
// types, and the bitwise ones of the integers.
func carried(dt driver.DType, op driver.Op) bool {
	switch op {
	case driver.Sum, driver.Prod, driver.Min, driver.Max, driver.Avg:
		return !dt.IsPair() && !dt.IsComplex()
	case driver.BAnd, driver.BOr, driver.BXor:
		return dt.IsInteger()
	}
	return false
}

// TestPacketKernels checks the reductions the signature check's packet
// carries (packet.go, weft_mpi.c) against internal/reduce, on random bits
// and special values, at the largest count that fits, and which calls
// ride in the packet: every pair carried, none past its size, none of a
// user-defined reduction. It needs no MPI job (the kernels are plain C).
func TestPacketKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const h = 12345
	for _, dt := range collective.DTypes {
		for _, op := range collective.Ops {
			if !op.Accepts(dt) {
				continue
			}
			es := dt.Size()
			n := mpi.PacketData / es
			x, y := make([]byte, n*es), make([]byte, n*es)
			for i := range x {
				x[i], y[i] = byte(rng.Uint32()), byte(rng.Uint32())
			}
			if dt.IsFloat() { // the first elements: specials against each other
				for i := 0; i < n; i++ {
					copy(x[i*es:], encodeAs(dt, specials[i%len(specials)]))
					copy(y[i*es:], encodeAs(dt, specials[(i*7+3)%len(specials)]))
				}
			}
			a, b := packetCall(dt, op, x), packetCall(dt, op, y)
			if got := mpi.Carries(a); got != carried(dt, op) {
				t.Errorf("%v %v: carried %v, want %v", dt, op, got, !got)
			}
			if mpi.Carries(packetCall(dt, op, make([]byte, (n+1)*es))) {
				t.Errorf("%v %v: %d elements carried, past the packet's %d bytes", dt, op, n+1, mpi.PacketData)
			}
			if !carried(dt, op) {
				continue
			}
			got, ok := mpi.PacketReduce(h, a, h, b)
			if !ok {
				t.Errorf("%v %v: two packets alike do not agree", dt, op)
				continue
			}
			want := make([]byte, len(x))
			reduce.Apply(dt, op, want, x, y)
			if i, same := sameBits(dt, got[:len(want)], want); !same {
				t.Errorf("%v %v: element %d: %x op %x = %x, want %x", dt, op, i, x[i*es:(i+1)*es], y[i*es:(i+1)*es], got[i*es:(i+1)*es], want[i*es:(i+1)*es])
			}
		}
	}
	user, err := collective.NewOp("packet-test", true, func(in, inout []float64) {
		for i := range in {
			inout[i] += in[i]
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if mpi.Carries(packetCall(driver.Float64, user, make([]byte, 8))) {
		t.Error("a user-defined reduction is carried: its Go function cannot run inside the check")
	}
	if mpi.Carries(&driver.Call{Kind: driver.Reduce, DType: driver.Float64, Op: driver.Sum, Count: 1, Send: make([]byte, 8), Recv: make([]byte, 8)}) {
		t.Error("a reduce is carried: only allreduces are")
	}
}

// TestPacketMismatch: packets that differ never agree, whatever carries
// what, and the data of packets that differ is left as it was.
func TestPacketMismatch(t *testing.T) {
	one := func(v float64) *driver.Call {
		return packetCall(driver.Float64, driver.Sum, encodeAs(driver.Float64, v))
	}
	two := packetCall(driver.Float32, driver.Sum, slices.Concat(encodeAs(driver.Float32, 1), encodeAs(driver.Float32, 2)))
	max := packetCall(driver.Float64, driver.Max, encodeAs(driver.Float64, 3))
	longer := packetCall(driver.Float64, driver.Sum, slices.Concat(encodeAs(driver.Float64, 1), encodeAs(driver.Float64, 2)))
	for _, tc := range []struct {
		name     string
		hIn, hO  int64
		in, out  *driver.Call
		agree    bool
		wantData []byte // the result's first bytes, when not nil
	}{
		{"no data, one hash", 7, 7, nil, nil, true, nil},
		{"no data, two hashes", 7, 8, nil, nil, false, nil},
		{"data, one hash", 7, 7, one(1.5), one(2), true, encodeAs(driver.Float64, 3.5)},
		{"data, two hashes", 7, 8, one(1.5), one(2), false, nil},
		{"data against none", 7, 7, one(1.5), nil, false, make([]byte, 8)},
		{"none against data", 7, 7, nil, one(2), false, encodeAs(driver.Float64, 2)},
		{"type", 7, 7, two, one(2), false, encodeAs(driver.Float64, 2)},
		{"reduction", 7, 7, max, one(2), false, encodeAs(driver.Float64, 2)},
		{"count", 7, 7, longer, one(2), false, encodeAs(driver.Float64, 2)},
	} {
		got, ok := mpi.PacketReduce(tc.hIn, tc.in, tc.hO, tc.out)
		if ok != tc.agree {
			t.Errorf("%s: agreed %v, want %v", tc.name, ok, tc.agree)
		}
		if tc.wantData != nil && !bytes.Equal(got[:len(tc.wantData)], tc.wantData) {
			t.Errorf("%s: data %x, want %x", tc.name, got[:len(tc.wantData)], tc.wantData)
		}
	}
}

// packetBoundary (an extra check of the MPI jobs): an allreduce of every
// type and reduction the check's packet carries, at the most elements it
// holds (the data rides in the check) and one more (a call of its own), in
// place and not, gives internal/reduce's result. Floats hold small
// integers, whose sums and products are exact in any order; integers hold
// random bits (they wrap, in any order alike).
func packetBoundary(ctx context.Context, c *collective.Comm) error {
	input := func(dt driver.DType, r, n int) []byte {
		es := dt.Size()
		b := make([]byte, n*es)
		rng := rand.New(rand.NewPCG(uint64(r), uint64(dt)))
		for i := 0; i < n; i++ {
			if dt.IsFloat() {
				copy(b[i*es:], encodeAs(dt, float64(1+(r+i)%3)))
				continue
			}
			for k := range es {
				b[i*es+k] = byte(rng.Uint32())
			}
		}
		return b
	}
	for _, dt := range collective.DTypes {
		for _, op := range collective.Ops {
			if !op.Accepts(dt) || !mpi.Carries(packetCall(dt, op, make([]byte, dt.Size()))) {
				continue
			}
			fits := mpi.PacketData / dt.Size()
			for _, n := range []int{fits, fits + 1} {
				want := input(dt, 0, n)
				for r := 1; r < c.Size(); r++ {
					reduce.Apply(dt, op, want, want, input(dt, r, n))
				}
				if op == driver.Avg {
					reduce.Scale(dt, want, c.Size())
				}
				for _, inPlace := range []bool{false, true} {
					send := input(dt, c.Rank(), n)
					recv := send
					if !inPlace {
						recv = make([]byte, len(send))
					}
					if err := c.AllReduce(ctx, collective.Raw(send, dt), collective.Raw(recv, dt), op); err != nil {
						return fmt.Errorf("allreduce(%d x %v, %v): %w", n, dt, op, err)
					}
					if i, same := sameBits(dt, recv, want); !same {
						return fmt.Errorf("allreduce(%d x %v, %v), in place %v: element %d is %x, want %x", n, dt, op, inPlace, i, recv[i*dt.Size():(i+1)*dt.Size()], want[i*dt.Size():(i+1)*dt.Size()])
					}
				}
			}
		}
	}
	return nil
}

// barrierWaits (an extra check of the MPI jobs): a Barrier, which the
// signature check alone makes, holds every rank until the last has
// entered: the last rank enters 200 ms after the others, and no rank
// leaves sooner.
func barrierWaits(ctx context.Context, c *collective.Comm) error {
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	const late = 200 * time.Millisecond
	start := time.Now()
	if c.Rank() == c.Size()-1 {
		time.Sleep(late)
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	if waited := time.Since(start); waited < late {
		return fmt.Errorf("rank %d left the barrier after %v, before the last rank entered (%v)", c.Rank(), waited, late)
	}
	return nil
}
