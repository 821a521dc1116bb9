//go:build linux

package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/collective/transport/shm"
	"github.com/weft-hpc/weft/internal/mpitest"
	"github.com/weft-hpc/weft/internal/reduce"
)

// both runs f on the two ranks of cs at once and returns their errors.
func both(cs [2]*conn, f func(r int, c *conn) error) [2]error {
	var errs [2]error
	done := make(chan struct{})
	go func() { errs[1] = f(1, cs[1]); close(done) }()
	errs[0] = f(0, cs[0])
	<-done
	return errs
}

// randomBytes fills n elements of type dt with small values (exact sums for
// every type, no NaNs).
func randomBytes(rng *rand.Rand, dt driver.DType, n int) []byte {
	b := make([]byte, n*dt.Size())
	switch dt {
	case driver.Float32:
		s := unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
		for i := range s {
			s[i] = float32(rng.IntN(2000)-1000) / 8
		}
	case driver.Float64:
		s := unsafe.Slice((*float64)(unsafe.Pointer(&b[0])), n)
		for i := range s {
			s[i] = rng.NormFloat64()
		}
	case driver.Int32:
		s := unsafe.Slice((*int32)(unsafe.Pointer(&b[0])), n)
		for i := range s {
			s[i] = rng.Int32()
		}
	}
	return b
}

// TestAllReduceShmGroup checks the shared-segment allreduce against the
// reduction done here, bit for bit, at the sizes where its paths change
// (mailbox, one slot, rounds of the data area and a remainder), in place
// and out of place, and that it is the algorithm that ran.
func TestAllReduceShmGroup(t *testing.T) {
	cs := shmPair(t, time.Minute)
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	area := areaFor(cs[0])
	for _, dt := range []driver.DType{driver.Float32, driver.Float64, driver.Int32} {
		es := dt.Size()
		for _, bytesN := range []int{es, groupInline, groupInline + es, groupSmall, groupSmall + es, area, 2*area + 3*es} {
			count := bytesN / es
			for _, op := range []driver.Op{driver.Sum, driver.Max, driver.Avg} {
				if op == driver.Avg && dt == driver.Int32 {
					continue
				}
				for _, inPlace := range []bool{false, true} {
					name := fmt.Sprintf("%v/%d/%v/inplace=%v", dt, count, op, inPlace)
					in := [2][]byte{randomBytes(rng, dt, count), randomBytes(rng, dt, count)}
					want := make([]byte, len(in[0]))
					reduce.Apply(dt, op, want, in[0], in[1])
					if op == driver.Avg {
						reduce.Scale(dt, want, 2)
					}
					var out [2][]byte
					errs := both(cs, func(r int, c *conn) error {
						send := bytes.Clone(in[r])
						out[r] = make([]byte, len(send))
						if inPlace {
							out[r] = send
						}
						return c.Run(ctx, &driver.Call{Kind: driver.AllReduce, DType: dt, Op: op, Count: count, Send: send, Recv: out[r]})
					})
					for r := range 2 {
						if errs[r] != nil {
							t.Fatalf("%s: rank %d: %v", name, r, errs[r])
						}
						if !bytes.Equal(out[r], want) {
							t.Fatalf("%s: rank %d differs from the reduction done here", name, r)
						}
						if cs[r].groupState != groupReady {
							t.Fatalf("%s: rank %d: shared segment not in use (state %d)", name, r, cs[r].groupState)
						}
					}
				}
			}
		}
	}
	if ents, _ := os.ReadDir(shm.Dir); len(ents) != 0 {
		t.Errorf("segment files left after set-up: %v", ents)
	}
}

// TestAllReduceShmFallback: when the segment cannot be made, both ranks
// say so to each other and run the ring instead, in the same operation
// and after it.
func TestAllReduceShmFallback(t *testing.T) {
	cs := shmPair(t, time.Minute)
	shm.Dir = filepath.Join(t.TempDir(), "missing")
	ctx := context.Background()
	for round := range 2 {
		in := [2][]float32{make([]float32, 100000), make([]float32, 100000)}
		for i := range in[0] {
			in[0][i], in[1][i] = float32(i), float32(2*i)
		}
		out := [2][]float32{make([]float32, 100000), make([]float32, 100000)}
		errs := both(cs, func(r int, c *conn) error {
			return c.Run(ctx, &driver.Call{Kind: driver.AllReduce, DType: driver.Float32, Op: driver.Sum, Count: len(in[r]),
				Send: asBytes(in[r]), Recv: asBytes(out[r])})
		})
		for r := range 2 {
			if errs[r] != nil {
				t.Fatalf("round %d, rank %d: %v", round, r, errs[r])
			}
			for i, v := range out[r] {
				if v != float32(3*i) {
					t.Fatalf("round %d, rank %d: element %d is %v, want %v", round, r, i, v, 3*i)
				}
			}
			if cs[r].groupState != groupNo {
				t.Fatalf("round %d, rank %d: state %d, want no segment", round, r, cs[r].groupState)
			}
		}
	}
}

func asBytes(s []float32) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s)) }

// TestAllReduceShmMismatch: ranks that pass different counts both fail
// with a mismatch, small or large.
func TestAllReduceShmMismatch(t *testing.T) {
	for _, count := range []int{4, 1000, 300000} {
		t.Run(fmt.Sprint(count), func(t *testing.T) {
			cs := shmPair(t, time.Minute)
			ctx := context.Background()
			errs := both(cs, func(r int, c *conn) error {
				n := count + r
				buf := make([]byte, 4*n)
				return c.Run(ctx, &driver.Call{Kind: driver.AllReduce, DType: driver.Float32, Op: driver.Sum, Count: n, Send: buf, Recv: buf})
			})
			for r, err := range errs {
				if !errors.Is(err, driver.ErrMismatch) {
					t.Errorf("rank %d: %v, want a mismatch", r, err)
				}
			}
		})
	}
}

// TestAllReduceShmSilentPeer: a rank that never joins is blamed by name at
// the silence limit, and one that leaves fails the waiting rank at once.
func TestAllReduceShmSilentPeer(t *testing.T) {
	ctx := context.Background()
	t.Run("silent", func(t *testing.T) {
		cs := shmPair(t, 300*time.Millisecond)
		// Make the segment first: rank 1 then stays away from the next call.
		both(cs, func(r int, c *conn) error {
			return c.Run(ctx, &driver.Call{Kind: driver.AllReduce, DType: driver.Float32, Op: driver.Sum, Count: 1, Send: make([]byte, 4), Recv: make([]byte, 4)})
		})
		start := time.Now()
		err := cs[0].Run(ctx, &driver.Call{Kind: driver.AllReduce, DType: driver.Float32, Op: driver.Sum, Count: 1 << 20, Send: make([]byte, 4<<20), Recv: make([]byte, 4<<20)})
		if !errors.Is(err, driver.ErrTimeout) || driver.Culprit(err) != 1 {
			t.Fatalf("rank 0 after %v: %v (culprit %d), want a timeout blaming rank 1", time.Since(start), err, driver.Culprit(err))
		}
	})
	t.Run("closed", func(t *testing.T) {
		cs := shmPair(t, time.Minute)
		both(cs, func(r int, c *conn) error {
			return c.Run(ctx, &driver.Call{Kind: driver.AllReduce, DType: driver.Float32, Op: driver.Sum, Count: 1, Send: make([]byte, 4), Recv: make([]byte, 4)})
		})
		closed := make(chan struct{})
		go func() {
			time.Sleep(50 * time.Millisecond)
			cs[1].Close()
			close(closed)
		}()
		err := cs[0].Run(ctx, &driver.Call{Kind: driver.AllReduce, DType: driver.Float32, Op: driver.Sum, Count: 2, Send: make([]byte, 8), Recv: make([]byte, 8)})
		if !errors.Is(err, driver.ErrPeerLost) || driver.Culprit(err) != 1 {
			t.Fatalf("rank 0: %v (culprit %d), want rank 1 lost", err, driver.Culprit(err))
		}
		<-closed
		if cs[1].ep.groups != nil {
			t.Error("rank 1 closed but its segment is still mapped")
		}
	})
}

// TestMismatchShm: the shared-segment allreduce against the other calls
// on a pair over shared memory. Its ranks send no frames while they wait
// on the segment, so a peer waiting in a receive learns of the mismatch
// from a probe; every rank fails fast and both blame rank 1, in the
// errors and the warnings.
func TestMismatchShm(t *testing.T) {
	ar := func(count int) func(r int) *driver.Call {
		return func(int) *driver.Call { return allreduceCall(count, driver.Float32, driver.Sum) }
	}
	cases := []mismatchCase{
		{"count", 2, func(r int) *driver.Call { return allreduceCall(4+r, driver.Float32, driver.Sum) }, 1},
		{"no elements", 2, func(r int) *driver.Call { return allreduceCall(4*r, driver.Float32, driver.Sum) }, 1},
		{"large count", 2, func(r int) *driver.Call { return allreduceCall(300000+r, driver.Float32, driver.Sum) }, 1},
		{"reduction", 2, func(r int) *driver.Call {
			return allreduceCall(4, driver.Float32, map[bool]driver.Op{true: driver.Max, false: driver.Sum}[r == 1])
		}, 1},
		{"broadcast against allreduce", 2, func(r int) *driver.Call {
			if r == 1 {
				return bcastCall(4, 1)
			}
			return ar(4)(r)
		}, 1},
		{"scatter against allreduce", 2, func(r int) *driver.Call {
			if r == 1 {
				return scatterCall(4, 0, r, 2) // waits for rank 0, which waits on the segment
			}
			return ar(4)(r)
		}, 1},
		{"allreduce against gather", 2, func(r int) *driver.Call {
			if r == 0 {
				return gatherCall(4, 0, r, 2)
			}
			return ar(300000)(r)
		}, 1},
		{"broadcast roots", 2, func(r int) *driver.Call { return bcastCall(4, r) }, 1},
		{"reduce roots", 2, func(r int) *driver.Call { return reduceCall(300000, r, r) }, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			log := &mpitest.Buffer{}
			pair := shmPair(t, mismatchTimeout)
			for _, c := range pair {
				c.ep.cfg.log = slog.New(slog.NewTextHandler(log, nil))
			}
			// The segment is made by the first allreduce: the case then
			// meets it ready.
			ctx := context.Background()
			errs := both(pair, func(r int, c *conn) error { return c.Run(ctx, allreduceCall(1, driver.Float32, driver.Sum)) })
			if errs[0] != nil || errs[1] != nil || pair[0].group == nil {
				t.Fatalf("first allreduce: %v, segment %v", errs, pair[0].group)
			}
			checkMismatch(t, pair[:], tc, log)
		})
	}
}
