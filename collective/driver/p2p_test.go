package driver

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestVectorGatherScatter compares Gather and Scatter, on every frame of
// random layouts cut at random places, with the elements picked one by
// one.
func TestVectorGatherScatter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		es := []int{1, 2, 4, 8, 16}[rng.IntN(5)]
		v := Vector{Count: rng.IntN(6), BlockLen: rng.IntN(5)}
		v.Stride = v.BlockLen + rng.IntN(4)
		span := make([]byte, (v.Count*v.Stride+3)*es)
		for i := range span {
			span[i] = byte(rng.Uint32())
		}
		// The message, element by element.
		var want []byte
		for i := range v.Count {
			for j := range v.BlockLen {
				at := (i*v.Stride + j) * es
				want = append(want, span[at:at+es]...)
			}
		}
		if v.Bytes(es) != len(want) {
			t.Fatalf("%+v es %d: Bytes %d, want %d", v, es, v.Bytes(es), len(want))
		}
		got := make([]byte, len(want))
		back := make([]byte, len(span))
		copy(back, span)
		for off := 0; off < len(want); {
			n := min(1+rng.IntN(3*es+1), len(want)-off)
			v.Gather(got[off:off+n], span, off, es)
			off += n
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%+v es %d: Gather %x, want %x", v, es, got, want)
		}
		// Scatter: zero the blocks of back, then land the message in frames.
		for i := range v.Count {
			clear(back[i*v.Stride*es : (i*v.Stride+v.BlockLen)*es])
		}
		for off := 0; off < len(want); {
			n := min(1+rng.IntN(3*es+1), len(want)-off)
			v.Scatter(back, want[off:off+n], off, es)
			off += n
		}
		if !bytes.Equal(back, span) {
			t.Fatalf("%+v es %d: Scatter gave %x, want %x", v, es, back, span)
		}
	}
}
