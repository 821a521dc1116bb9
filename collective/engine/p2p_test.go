//go:build linux

package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/collective/transport/inproc"
	"github.com/weft-hpc/weft/internal/wire"
)

// quietTimeout is the silence limit of the quiet-peer tests: short, so
// that a sender several times slower than it costs the test little.
const quietTimeout = 150 * time.Millisecond

// pairs are the two-rank worlds the quiet-peer tests run on, each with
// rank 0's configuration and rank 1's: in process (the reader goroutine
// delivers), shared memory (the waiting goroutine polls the link), and
// shared memory with the oversubscribed host's policy (it yields the CPU
// while it polls).
var pairs = []struct {
	name string
	make func(testing.TB, [2]config) [2]*conn
}{
	{"inproc", inprocPairOf},
	{"shm", shmPairOf},
	{"shm-yield", func(t testing.TB, cfgs [2]config) [2]*conn {
		for r := range cfgs {
			cfgs[r].spin, cfgs[r].yield = spinFor("auto", 1<<20)
		}
		return shmPairOf(t, cfgs)
	}},
}

// inprocPairOf is two ranks over the in-process transport, each with its
// own configuration.
func inprocPairOf(t testing.TB, cfgs [2]config) [2]*conn {
	var out [2]*conn
	for r, tr := range inproc.New(2) {
		out[r] = newWorld(newEndpoint(tr, cfgs[r]))
	}
	t.Cleanup(func() { out[0].Close(); out[1].Close() })
	return out
}

func sendCall(v uint64) *driver.Call {
	b := binary.LittleEndian.AppendUint64(nil, v)
	return &driver.Call{Kind: driver.Send, DType: driver.Int64, Count: 1, Send: b, Peer: 1}
}

func recvCall() *driver.Call {
	return &driver.Call{Kind: driver.Recv, DType: driver.Int64, Count: 1, Recv: make([]byte, 8), Peer: 0}
}

// TestRecvQuietPeer: a point-to-point receive waits for its message while
// the sender is alive, however long it has nothing to send (a parameter
// server's receive loop from a worker whose keys live elsewhere waits for
// the whole job): blocking or posted, it gets the message that comes after
// several silence limits. The sender's heartbeats say it is alive.
func TestRecvQuietPeer(t *testing.T) {
	for _, pr := range pairs {
		t.Run(pr.name, func(t *testing.T) {
			cfg := testConfig(t, quietTimeout)
			cfg.spin, cfg.yield = spinFor("auto", 2)
			cs := pr.make(t, [2]config{cfg, cfg})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			errs := both(cs, func(r int, c *conn) error {
				if r == 0 {
					for v := range uint64(2) {
						time.Sleep(4 * quietTimeout)
						if err := c.Run(ctx, sendCall(v+7)); err != nil {
							return err
						}
					}
					return nil
				}
				a := recvCall()
				if err := c.Run(ctx, a); err != nil {
					return err
				}
				if v := binary.LittleEndian.Uint64(a.Recv); v != 7 {
					t.Errorf("blocking receive got %d, want 7", v)
				}
				a = recvCall()
				pend, err := c.Start(a)
				if err != nil {
					return err
				}
				if err := pend.Wait(ctx); err != nil {
					return err
				}
				if v := binary.LittleEndian.Uint64(a.Recv); v != 8 {
					t.Errorf("posted receive got %d, want 8", v)
				}
				return nil
			})
			for r, err := range errs {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
		})
	}
}

// TestRecvStoppedPeer: a sender that stops (no frames, no heartbeats: rank
// 0 runs without a silence limit, so it sends none) still fails a
// receive from it, blamed by name, once the link has been silent for the
// limit.
func TestRecvStoppedPeer(t *testing.T) {
	for _, pr := range pairs {
		t.Run(pr.name, func(t *testing.T) {
			quiet := testConfig(t, 0)
			cfg := testConfig(t, quietTimeout)
			quiet.spin, quiet.yield = spinFor("auto", 2)
			cfg.spin, cfg.yield = quiet.spin, quiet.yield
			cs := pr.make(t, [2]config{quiet, cfg})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for _, posted := range []bool{false, true} {
				var err error
				if !posted {
					err = cs[1].Run(ctx, recvCall())
				} else if pend, serr := cs[1].Start(recvCall()); serr != nil {
					err = serr
				} else {
					err = pend.Wait(ctx)
				}
				if !errors.Is(err, driver.ErrTimeout) || driver.Culprit(err) != 0 {
					t.Errorf("posted=%v: %v (culprit %d), want a timeout blaming rank 0", posted, err, driver.Culprit(err))
				}
			}
		})
	}
}

// TestGiveUpNamesTheDirection: a point-to-point call whose context ends
// fails the world with an error that names the call's direction: a Recv's
// says recv (it said send, the code its frames carry), blocking or
// posted, and a Send's says send.
func TestGiveUpNamesTheDirection(t *testing.T) {
	const giveUp = 50 * time.Millisecond
	recvs := map[string]func(c *conn, ctx context.Context) error{
		"blocking recv": func(c *conn, ctx context.Context) error { return c.Run(ctx, recvCall()) },
		"posted recv": func(c *conn, ctx context.Context) error {
			pend, err := c.Start(recvCall())
			if err != nil {
				return err
			}
			return pend.Wait(ctx)
		},
	}
	for name, recv := range recvs {
		t.Run(name, func(t *testing.T) {
			cs := inprocPairOf(t, [2]config{testConfig(t, 0), testConfig(t, 0)})
			ctx, cancel := context.WithTimeout(context.Background(), giveUp)
			defer cancel()
			err := recv(cs[1], ctx) // rank 0 sends nothing
			checkGaveUp(t, err, "rank 1 gave up waiting in recv")
		})
	}
	t.Run("send", func(t *testing.T) {
		// Rank 1 is a bare transport that reads the first frame of the
		// message and then nothing: the Send's second frame waits.
		trs := inproc.New(2)
		c := newWorld(newEndpoint(trs[0], testConfig(t, 0)))
		t.Cleanup(func() { c.Close(); trs[1].Close() })
		first := make(chan error, 1)
		go func() {
			var h wire.Header
			l := trs[1].Link(0)
			err := l.ReadHeader(&h)
			if err == nil {
				err = l.ReadPayload(make([]byte, h.Len))
			}
			first <- err
		}()
		chunk := c.ep.cfg.chunk
		a := &driver.Call{Kind: driver.Send, DType: driver.Uint8, Count: 2 * chunk, Send: make([]byte, 2*chunk), Peer: 1}
		pend, err := c.Start(a)
		if err != nil {
			t.Fatal(err)
		}
		if err := <-first; err != nil {
			t.Fatalf("reading the first frame: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), giveUp)
		defer cancel()
		checkGaveUp(t, pend.Wait(ctx), "rank 0 gave up waiting in send")
	})
}

// checkGaveUp checks that err is the abort of a context that ended, with
// the message want.
func checkGaveUp(t *testing.T, err error, want string) {
	t.Helper()
	if !errors.Is(err, driver.ErrAborted) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want an abort saying %q", err, want)
	}
}

// TestFramesAndOrder: messages of one frame (taken by landWhole straight
// into a posted receive, or kept when none is posted) and of several
// frames (the table of arriving messages) keep MPI's order per sender
// and tag on every pair kind, with their statuses; a one-frame message of
// another type, or longer than its receive, is still a mismatch.
func TestFramesAndOrder(t *testing.T) {
	const chunk = 512 << 10 // testConfig's WEFT_CHUNK_BYTES
	for _, pk := range pairs {
		t.Run(pk.name, func(t *testing.T) {
			cfg := testConfig(t, 10*time.Second)
			cs := pk.make(t, [2]config{cfg, cfg})
			ctx := context.Background()
			msg := func(n int, seed byte) []byte {
				b := make([]byte, n)
				for i := range b {
					b[i] = seed + byte(i*7)
				}
				return b
			}
			sends := []struct {
				tag  int
				data []byte
			}{{1, msg(8, 1)}, {2, msg(3*chunk/2, 2)}, {1, msg(100, 3)}, {3, nil}, {1, msg(chunk, 4)}}
			done := make(chan error, 1)
			go func() {
				for _, s := range sends {
					a := &driver.Call{Kind: driver.Send, DType: driver.Uint8, Count: len(s.data), Send: s.data, Peer: 1, Tag: s.tag}
					if err := cs[0].Run(ctx, a); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			// Tag 2 first: the tag-1 message before it arrives unmatched.
			// Then tag 1 from AnySource: the earliest first.
			recv := func(src, tag, room int) (driver.Status, []byte) {
				t.Helper()
				a := &driver.Call{Kind: driver.Recv, DType: driver.Uint8, Count: room, Recv: make([]byte, room), Peer: src, Tag: tag}
				if err := cs[1].Run(ctx, a); err != nil {
					t.Fatalf("receive (source %d, tag %d): %v", src, tag, err)
				}
				return a.Status, a.Recv[:a.Status.Bytes]
			}
			check := func(st driver.Status, got []byte, want int) {
				t.Helper()
				s := sends[want]
				if st.Source != 0 || st.Tag != s.tag || st.Bytes != len(s.data) || !bytes.Equal(got, s.data) {
					t.Fatalf("got %+v (%d bytes), want message %d: tag %d, %d bytes", st, len(got), want, s.tag, len(s.data))
				}
			}
			st, got := recv(0, 2, 2*chunk)
			check(st, got, 1)
			st, got = recv(driver.AnySource, 1, 2*chunk)
			check(st, got, 0)
			st, got = recv(0, driver.AnyTag, 2*chunk)
			check(st, got, 2)
			st, got = recv(0, 3, 16)
			check(st, got, 3)
			st, got = recv(0, 1, 2*chunk)
			check(st, got, 4)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			// One frame of float32 into a receive of int32: a mismatch.
			go func() {
				a := &driver.Call{Kind: driver.Send, DType: driver.Float32, Count: 2, Send: make([]byte, 8), Peer: 1, Tag: 5}
				done <- cs[0].Run(ctx, a)
			}()
			a := &driver.Call{Kind: driver.Recv, DType: driver.Int32, Count: 2, Recv: make([]byte, 8), Peer: 0, Tag: 5}
			if err := cs[1].Run(ctx, a); !errors.Is(err, driver.ErrMismatch) {
				t.Fatalf("float32 message into an int32 receive: %v, want a mismatch", err)
			}
			<-done
		})
	}
}

// TestEarlyMismatch: a message of another type that arrives before its
// receive is posted fails the receive with a mismatch when it is posted
// (failing settles every matcher's receives, this one's too: once under
// the matcher's own lock, and the rank hung).
func TestEarlyMismatch(t *testing.T) {
	for _, pk := range pairs {
		t.Run(pk.name, func(t *testing.T) {
			cfg := testConfig(t, 10*time.Second)
			cs := pk.make(t, [2]config{cfg, cfg})
			ctx := context.Background()
			a := &driver.Call{Kind: driver.Send, DType: driver.Float32, Count: 2, Send: make([]byte, 8), Peer: 1, Tag: 5}
			if err := cs[0].Run(ctx, a); err != nil {
				t.Fatal(err)
			}
			// The message is in: a probe sees it before the receive.
			if _, ok, err := cs[1].Probe(ctx, 0, 5, true); !ok || err != nil {
				t.Fatalf("probe: %v, %v", ok, err)
			}
			done := make(chan error, 1)
			go func() {
				r := &driver.Call{Kind: driver.Recv, DType: driver.Int32, Count: 2, Recv: make([]byte, 8), Peer: 0, Tag: 5}
				done <- cs[1].Run(ctx, r)
			}()
			select {
			case err := <-done:
				if !errors.Is(err, driver.ErrMismatch) {
					t.Fatalf("float32 message into an int32 receive: %v, want a mismatch", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the receive of an early mismatched message hung")
			}
		})
	}
}

// TestNonBlockingRecvReused: a receive of Start that the front end
// releases goes back to the pool, and so does the envelope of a message
// that came before its receive: a loop of non-blocking exchanges over
// shared memory allocates nothing in the engine once it runs (the front
// end's Request is the caller's). Some exchanges post the receive first,
// the others send first, so that both the message that meets its receive
// and the one kept early are taken.
func TestNonBlockingRecvReused(t *testing.T) {
	cs := shmPair(t, time.Minute)
	ctx := context.Background()
	send, recv, out, in := pairCalls(64)
	k := 0
	exchange := func() {
		k++
		out[0] = byte(k)
		var p driver.Pending
		var err error
		if k%2 == 0 {
			if p, err = cs[1].Start(recv); err == nil {
				err = cs[0].Run(ctx, send)
			}
		} else {
			if err = cs[0].Run(ctx, send); err == nil {
				p, err = cs[1].Start(recv)
			}
		}
		if err == nil {
			err = p.Wait(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		if in[0] != byte(k) || recv.Status.Bytes != 64 {
			t.Fatalf("exchange %d: got message %d, status %+v", k, in[0], recv.Status)
		}
		p.(driver.Releaser).Release()
	}
	for range 100 { // fill the pools
		exchange()
	}
	// A collection in the middle may empty a pool: less than one
	// allocation per exchange is what a pool that works gives.
	if n := testing.AllocsPerRun(500, exchange); n >= 1 {
		t.Errorf("%.2f allocations per non-blocking exchange, want none", n)
	}
}
