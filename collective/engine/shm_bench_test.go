//go:build linux

package engine

import (
	"context"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/collective/transport"
	"github.com/weft-hpc/weft/collective/transport/shm"
)

// pairTransport is a two-rank transport over one shared-memory link.
type pairTransport struct {
	rank int
	link *shm.Link
}

func (p *pairTransport) Name() string { return "shm" }
func (p *pairTransport) Rank() int    { return p.rank }
func (p *pairTransport) Size() int    { return 2 }
func (p *pairTransport) Link(peer int) transport.Link {
	if peer == p.rank {
		return nil
	}
	return p.link
}
func (p *pairTransport) Close() error { return p.link.Close() }

// shmPair returns two communicators joined by a shared-memory link, in
// one process, with the silence limit timeout.
func shmPair(b testing.TB, timeout time.Duration) [2]*conn {
	cfg := testConfig(b, timeout)
	cfg.spin, cfg.yield = spinFor("auto", 2)
	return shmPairOf(b, [2]config{cfg, cfg})
}

// testConfig is the endpoint configuration of the pair tests.
func testConfig(b testing.TB, timeout time.Duration) config {
	cfg, err := newConfig(&driver.Config{Settings: map[string]string{"WEFT_CHUNK_BYTES": "512K"}, Timeout: timeout})
	if err != nil {
		b.Fatal(err)
	}
	return cfg
}

// shmPairOf is shmPair with each rank's own configuration.
func shmPairOf(b testing.TB, cfgs [2]config) [2]*conn {
	shm.Dir = b.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	var links [2]*shm.Link
	var errs [2]error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			errs[1] = err
			return
		}
		links[1], errs[1] = shm.Open(context.Background(), shm.Config{Conn: c, RingBytes: 1 << 20, Yield: cfgs[1].yield})
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	links[0], errs[0] = shm.Open(context.Background(), shm.Config{Conn: c, Creator: true, RingBytes: 1 << 20, Yield: cfgs[0].yield})
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		b.Fatal(errs)
	}
	var out [2]*conn
	for r := range out {
		out[r] = newWorld(newEndpoint(&pairTransport{rank: r, link: links[r]}, cfgs[r]))
	}
	b.Cleanup(func() { out[0].Close(); out[1].Close() })
	return out
}

// pairCalls is a Send of n bytes from rank 0 to rank 1 and its Recv, over
// the buffers it returns, for the pair tests to reuse call after call.
func pairCalls(n int) (send, recv *driver.Call, out, in []byte) {
	out, in = make([]byte, n), make([]byte, n)
	send = &driver.Call{Kind: driver.Send, DType: driver.Uint8, Send: out, Count: n, Peer: 1}
	recv = &driver.Call{Kind: driver.Recv, DType: driver.Uint8, Recv: in, Count: n, Peer: 0}
	return send, recv, out, in
}

// BenchmarkAllReduceShm8B is the small-message latency of the engine over
// one shared-memory pair, both ranks in this process on their own threads.
func BenchmarkAllReduceShm8B(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("GOMAXPROCS < 2: both ends spin, each needs a CPU of its own")
	}
	cs := shmPair(b, time.Minute)
	ctx := context.Background()
	run := func(c *conn, n int) error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		in, out := make([]byte, 8), make([]byte, 8)
		call := &driver.Call{Kind: driver.AllReduce, DType: driver.Float32, Send: in, Recv: out, Count: 2}
		for i := 0; i < n; i++ {
			if err := c.Run(ctx, call); err != nil {
				return err
			}
		}
		return nil
	}
	done := make(chan error, 1)
	b.ResetTimer()
	go func() { done <- run(cs[1], b.N) }()
	if err := run(cs[0], b.N); err != nil {
		b.Fatal(err)
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPingPongShm is a blocking Send/Recv ping-pong of 8 bytes
// through the engine over one shared-memory pair, both ranks in this
// process on their own threads: the engine's per-message path on top of
// the link's floor (shm's BenchmarkPingPong).
func BenchmarkPingPongShm(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("GOMAXPROCS < 2: both ends spin, each needs a CPU of its own")
	}
	cs := shmPair(b, time.Minute)
	ctx := context.Background()
	run := func(c *conn, first bool, n int) error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		peer := 1
		if !first {
			peer = 0
		}
		buf := make([]byte, 8)
		for i := 0; i < n; i++ {
			for k := range 2 {
				if (k == 0) == first {
					if err := c.Run(ctx, &driver.Call{Kind: driver.Send, DType: driver.Uint8, Send: buf, Count: 8, Peer: peer}); err != nil {
						return err
					}
				} else if err := c.Run(ctx, &driver.Call{Kind: driver.Recv, DType: driver.Uint8, Recv: buf, Count: 8, Peer: peer}); err != nil {
					return err
				}
			}
		}
		return nil
	}
	done := make(chan error, 1)
	b.ReportAllocs()
	b.ResetTimer()
	go func() { done <- run(cs[1], false, b.N) }()
	if err := run(cs[0], true, b.N); err != nil {
		b.Fatal(err)
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2000, "us/oneway")
}

// BenchmarkSendRecvShm is the work of one 8-byte message through the
// engine over shared memory with no waiting: one goroutine sends on rank
// 0 and then receives on rank 1, whose frame is already in the ring.
// Unlike a ping-pong it does not depend on the other rank's thread being
// scheduled, so it measures the per-message path on a loaded host.
func BenchmarkSendRecvShm(b *testing.B) {
	cs := shmPair(b, time.Minute)
	ctx := context.Background()
	// The calls are reused, as the front end's pool reuses them.
	send, recv, _, _ := pairCalls(8)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := cs[0].Run(ctx, send); err != nil {
			b.Fatal(err)
		}
		if err := cs[1].Run(ctx, recv); err != nil {
			b.Fatal(err)
		}
	}
}
