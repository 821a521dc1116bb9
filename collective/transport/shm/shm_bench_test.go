//go:build linux

package shm

import (
	"runtime"
	"testing"

	"github.com/weft-hpc/weft/internal/wire"
)

// BenchmarkPingPong is the transport's floor for small messages: one
// 8-byte frame each way per iteration between two goroutines, each on its
// own OS thread, both spinning. The collective layer's per-operation
// latency is this plus its own bookkeeping.
func BenchmarkPingPong(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("GOMAXPROCS < 2: both ends spin, each needs a CPU of its own")
	}
	x, y := pair(b, 1<<16)
	payload := make([]byte, 8)
	echo := func(l *Link, first bool, n int) error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var h wire.Header
		buf := make([]byte, 8)
		out := wire.Header{Kind: wire.KindData, MsgLen: 8, Len: 8}
		l.Spinning(true)
		defer l.Spinning(false)
		for i := 0; i < n; i++ {
			if first {
				if err := l.WriteFrame(&out, payload); err != nil {
					return err
				}
			}
			for {
				ok, err := l.TryReadHeader(&h)
				if err != nil {
					return err
				}
				if ok {
					break
				}
			}
			if err := l.ReadPayload(buf); err != nil {
				return err
			}
			if !first {
				if err := l.WriteFrame(&out, payload); err != nil {
					return err
				}
			}
		}
		return nil
	}
	done := make(chan error, 1)
	b.ResetTimer()
	go func() { done <- echo(y, false, b.N) }()
	if err := echo(x, true, b.N); err != nil {
		b.Fatal(err)
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2000, "us/oneway")
}
