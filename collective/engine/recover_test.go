package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/collective/transport/inproc"
	"github.com/weft-hpc/weft/internal/wire"
)

// recoverWorld is n goroutine ranks with a silence limit of timeout.
func recoverWorld(t testing.TB, n int, timeout time.Duration) []*conn {
	cfg := config{timeout: timeout, chunk: 512 << 10, log: slog.New(slog.NewTextHandler(tlog{t}, nil))}
	out := make([]*conn, n)
	for r, tr := range inproc.New(n) {
		out[r] = newWorld(newEndpoint(tr, cfg))
	}
	t.Cleanup(func() {
		for _, c := range out {
			c.Close()
		}
	})
	return out
}

// kill makes c's rank die as a killed process does: it writes nothing
// more, and its links close with no goodbye. (Closing an in-process link
// alone is not enough: a write racing with the close may still go out.)
// Every link breaks at once, under all the write locks: a link broken
// before another would let the dying rank's failed write to one peer
// tell the others that peer failed, which a killed process never does
// (it made TestShrinkKillDuring exclude a live rank about once in 15).
func kill(c *conn) {
	ep := c.ep
	ep.closing.Store(true) // its readers report nothing
	var held []*peer
	for _, p := range ep.peers {
		if p != nil {
			p.wmu.Lock()
			held = append(held, p)
		}
	}
	for _, p := range held {
		p.broken = errors.New("killed")
	}
	for _, p := range held {
		p.wmu.Unlock()
	}
	ep.tr.Close()
}

// sumAll runs an allreduce of float64 sums on c, each rank giving v.
func sumAll(ctx context.Context, c driver.Conn, v float64) (float64, error) {
	b := binary.LittleEndian.AppendUint64(nil, math.Float64bits(v))
	err := c.Run(ctx, &driver.Call{Kind: driver.AllReduce, DType: driver.Float64, Op: driver.Sum, Count: 1, Send: b, Recv: b})
	return math.Float64frombits(binary.LittleEndian.Uint64(b)), err
}

// onRanks runs f on each of the ranks given, concurrently.
func onRanks(ranks []int, f func(r int)) {
	var wg sync.WaitGroup
	for _, r := range ranks {
		wg.Add(1)
		go func() { defer wg.Done(); f(r) }()
	}
	wg.Wait()
}

// TestShrinkAfterKill: of 4 ranks one dies in an allreduce; the others
// fail naming it, shrink to 3 and go on with allreduces that are right.
func TestShrinkAfterKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := recoverWorld(t, 4, 5*time.Second)
	kill(w[2])
	live := []int{0, 1, 3}
	subs := make([]driver.Conn, 4)
	onRanks(live, func(r int) {
		_, err := sumAll(ctx, w[r], 1)
		if driver.Culprit(err) != 2 || !errors.Is(err, driver.ErrPeerLost) {
			t.Errorf("rank %d: allreduce after the death: %v", r, err)
		}
		var failed []int
		subs[r], failed, err = w[r].Shrink(ctx)
		if err != nil || !slices.Equal(failed, []int{2}) {
			t.Errorf("rank %d: Shrink: failed %v, %v", r, failed, err)
			return
		}
		if got := w[r].Failed(); !slices.Equal(got, []int{2}) {
			t.Errorf("rank %d: Failed() = %v", r, got)
		}
	})
	if t.Failed() {
		return
	}
	for i, r := range live {
		if subs[r].Rank() != i || subs[r].Size() != 3 {
			t.Fatalf("rank %d: shrunk to rank %d of %d, want %d of 3", r, subs[r].Rank(), subs[r].Size(), i)
		}
	}
	onRanks(live, func(r int) {
		for k := range 20 {
			got, err := sumAll(ctx, subs[r], float64(r+k))
			if want := float64(0+1+3) + float64(3*k); err != nil || got != want {
				t.Errorf("rank %d step %d: %v, %v; want %v", r, k, got, err, want)
				return
			}
		}
		subs[r].Close()
	})
}

// TestAgreeAnd: the flags' AND and no failed rank while all live, then
// the AND of the survivors' flags and the dead rank once one dies.
func TestAgreeAnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := recoverWorld(t, 4, 5*time.Second)
	flags := []uint64{0b1111, 0b0111, 0b1011, 0b1110}
	onRanks([]int{0, 1, 2, 3}, func(r int) {
		and, failed, err := w[r].Agree(ctx, flags[r])
		if err != nil || and != 0b0010 || len(failed) != 0 {
			t.Errorf("rank %d: Agree = %b, %v, %v; want 10, []", r, and, failed, err)
		}
	})
	kill(w[1])
	onRanks([]int{0, 2, 3}, func(r int) {
		and, failed, err := w[r].Agree(ctx, flags[r])
		if err != nil || and != 0b1010 || !slices.Equal(failed, []int{1}) {
			t.Errorf("rank %d: Agree = %b, %v, %v; want 1010, [1]", r, and, failed, err)
		}
	})
}

// TestShrinkKillDuring kills a rank while the others shrink (the
// coordinator among them) or run the solver loop after: every survivor
// ends in the same communicator of 3, where allreduces are right. After
// each step the survivors agree whether it worked everywhere (ULFM's
// pattern), and shrink and redo it when not.
func TestShrinkKillDuring(t *testing.T) {
	for _, victim := range []int{0, 2} {
		for _, delay := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond} {
			t.Run(fmt.Sprintf("victim=%d/delay=%v", victim, delay), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				w := recoverWorld(t, 5, 3*time.Second)
				kill(w[4])
				live := []int{0, 1, 2, 3}
				final := make([]driver.Conn, 5)
				onRanks(live, func(r int) {
					ctx := ctx
					if r == victim {
						// Its own calls end with it.
						var cancel context.CancelFunc
						ctx, cancel = context.WithCancel(ctx)
						defer cancel()
						go func() { time.Sleep(delay); kill(w[r]); cancel() }()
					}
					var c driver.Conn = w[r]
					var err error = driver.ErrPeerLost // rank 4 is dead: shrink first
					for step, shrinks := 0, 0; step < 40; {
						if err != nil {
							if shrinks++; shrinks > 4 {
								t.Errorf("rank %d: still failing after 4 shrinks: %v", r, err)
								return
							}
							sub, _, err := c.(driver.Shrinker).Shrink(ctx)
							if err != nil {
								if r != victim {
									t.Errorf("rank %d: Shrink: %v", r, err)
								}
								return
							}
							t.Cleanup(func() { sub.Close() })
							c = sub
						}
						var got float64
						got, err = sumAll(ctx, c, 1)
						if err == nil && got != float64(c.Size()) {
							t.Errorf("rank %d: sum %v in a world of %d", r, got, c.Size())
						}
						if err != nil && r != victim && driver.Culprit(err) < 0 {
							t.Errorf("rank %d: %v names no rank", r, err)
						}
						// The survivors agree whether the step worked
						// everywhere: a rank may finish a collective that
						// failed elsewhere.
						ok := uint64(0)
						if err == nil {
							ok = 1
						}
						and, _, aerr := c.(driver.Shrinker).Agree(ctx, ok)
						if aerr != nil {
							if r != victim {
								t.Errorf("rank %d: Agree: %v", r, aerr)
							}
							return
						}
						if and == 1 {
							step++
							time.Sleep(time.Millisecond)
						} else if err == nil {
							err = driver.ErrPeerLost // failed elsewhere
						}
					}
					final[r] = c
				})
				for _, r := range live {
					if r != victim && (final[r] == nil || final[r].Size() != 3) {
						t.Errorf("rank %d did not end in a world of 3", r)
					}
				}
			})
		}
	}
}

// TestShrinkAlone: of two ranks one dies; the other shrinks to a world of
// its own and goes on.
func TestShrinkAlone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := recoverWorld(t, 2, 5*time.Second)
	kill(w[1])
	sub, failed, err := w[0].Shrink(ctx)
	if err != nil || !slices.Equal(failed, []int{1}) || sub.Size() != 1 || sub.Rank() != 0 {
		t.Fatalf("Shrink: %v, %v", failed, err)
	}
	defer sub.Close()
	if got, err := sumAll(ctx, sub, 7); err != nil || got != 7 {
		t.Fatalf("allreduce alone: %v, %v", got, err)
	}
}

// TestShrinkSplit: a communicator split from the world shrinks on its
// own: of {0,1} and {2,3}, rank 3 dies; rank 2 goes on alone, ranks 0
// and 1 (whose world failed too) in a communicator of both.
func TestShrinkSplit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := recoverWorld(t, 4, 5*time.Second)
	halves := make([]driver.Conn, 4)
	for r := range 4 {
		h, err := w[r].Split(ctx, r/2, []int{r / 2 * 2, r/2*2 + 1})
		if err != nil {
			t.Fatal(err)
		}
		halves[r] = h
	}
	kill(w[3])
	onRanks([]int{0, 1, 2}, func(r int) {
		sub, failed, err := halves[r].(driver.Shrinker).Shrink(ctx)
		want := map[int]int{0: 2, 1: 2, 2: 1}[r]
		if err != nil || sub.Size() != want || (r == 2) != (len(failed) == 1) {
			t.Errorf("rank %d: Shrink of its half: %v, %v", r, failed, err)
			return
		}
		defer sub.Close()
		if got, err := sumAll(ctx, sub, 1); err != nil || got != float64(want) {
			t.Errorf("rank %d: allreduce: %v, %v", r, got, err)
		}
	})
}

// BenchmarkShrunk is an allreduce of four goroutine ranks on the world
// and on the world shrunk with no rank lost (the same four ranks, their
// frames through tunnels in the world's links): what a shrunk
// communicator pays (docs/BENCHMARKS.md).
func BenchmarkShrunk(b *testing.B) {
	const n = 4
	for _, size := range []int{8, 64 << 10, 4 << 20} {
		for _, shrunk := range []bool{false, true} {
			b.Run(fmt.Sprintf("%dB/shrunk=%v", size, shrunk), func(b *testing.B) {
				cs, err := NewLocal(n, &driver.Config{Timeout: time.Minute})
				if err != nil {
					b.Fatal(err)
				}
				defer func() {
					for _, c := range cs {
						c.Close()
					}
				}()
				ctx := context.Background()
				if shrunk {
					subs := make([]driver.Conn, n)
					onRanks([]int{0, 1, 2, 3}, func(r int) { subs[r], _, err = cs[r].(driver.Shrinker).Shrink(ctx) })
					if err != nil {
						b.Fatal(err)
					}
					defer func() {
						for _, c := range subs {
							c.Close()
						}
					}()
					cs = subs
				}
				errs := make([]error, n)
				run := func(times int) {
					onRanks([]int{0, 1, 2, 3}, func(r int) {
						a := &driver.Call{Kind: driver.AllReduce, DType: driver.Float32, Op: driver.Sum, Count: size / 4,
							Send: make([]byte, size), Recv: make([]byte, size)}
						for i := 0; i < times && errs[r] == nil; i++ {
							errs[r] = cs[r].Run(ctx, a)
						}
					})
					for r, err := range errs {
						if err != nil {
							b.Fatalf("rank %d: %v", r, err)
						}
					}
				}
				run(1)
				b.SetBytes(int64(size))
				b.ResetTimer()
				run(b.N)
			})
		}
	}
}

// FuzzRecoverMsg feeds an agreement's messages of any content from a
// peer to a rank, entered in the agreement or not, coordinating it or
// not: nothing panics, and the rank still says whom it counts failed.
func FuzzRecoverMsg(f *testing.F) {
	f.Add(uint8(recState), uint64(0), int32(0), uint32(1), uint64(1), []byte{2})
	f.Add(uint8(recDecide), uint64(1), int32(-1), uint32(0), uint64(0), []byte{})
	f.Add(uint8(recQuery), uint64(2), int32(1), uint32(0), uint64(0), []byte(nil))
	f.Add(uint8(9), uint64(3), int32(5), uint32(7), uint64(7), []byte{255, 255, 255})
	w := recoverWorld(f, 2, 5*time.Second)
	f.Fuzz(func(t *testing.T, op uint8, seq uint64, root int32, tag uint32, count uint64, msg []byte) {
		c := w[0]
		rec := &c.ep.rec
		key := agreeKey{c.id, seq % 4}
		rec.mu.Lock()
		a := rec.agreement(key)
		if seq%2 == 0 && a.c == nil {
			a.c, a.ballot, a.replies = c, 0, make(map[int]recReply)
		}
		rec.mu.Unlock()
		h := wire.Header{Kind: wire.KindRecover, Op: op, Comm: c.id, Seq: key.inst, Root: root, Tag: tag, Count: count, Len: uint32(len(msg))}
		c.ep.recoverMsg(c.ep.peers[1], &h, msg)
		if got := c.Failed(); len(got) != 0 {
			t.Fatalf("rank 0 counts %v failed after a message", got)
		}
	})
}

// tlog writes the ranks' log lines to the test's log: a failing test
// shows the failures each rank saw.
type tlog struct{ t testing.TB }

func (w tlog) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}
