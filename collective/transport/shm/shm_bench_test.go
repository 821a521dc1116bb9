//go:build linux

package shm

import (
	"runtime"
	"sync/atomic"
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

// BenchmarkLineFloor is the host's floor under BenchmarkPingPong: two
// threads hand a counter back and forth, in one cache line that carries
// the data and its mark ("1line"), or with the mark in a line of its own
// that the reader looks at before the data line ("2lines", as the ring's
// head counter and frame are).
func BenchmarkLineFloor(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("GOMAXPROCS < 2: both ends spin, each needs a CPU of its own")
	}
	type line struct { // apart as the ring's counters are (lineSize)
		v atomic.Uint64
		_ [lineSize - 8]byte
	}
	for _, split := range []bool{false, true} {
		name := "1line"
		if split {
			name = "2lines"
		}
		b.Run(name, func(b *testing.B) {
			var lines [2][2]line // [direction][mark, data]
			side := func(out, in *[2]line, first bool, n int) (sum uint64) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				send := func(i uint64) {
					if split {
						out[1].v.Store(i)
					}
					out[0].v.Store(i)
				}
				for i := uint64(1); i <= uint64(n); i++ {
					if first {
						send(i)
					}
					for in[0].v.Load() != i {
					}
					if split {
						sum += in[1].v.Load()
					}
					if !first {
						send(i)
					}
				}
				return sum
			}
			done := make(chan struct{})
			b.ResetTimer()
			go func() { side(&lines[1], &lines[0], false, b.N); close(done) }()
			side(&lines[0], &lines[1], true, b.N)
			<-done
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2000, "us/oneway")
		})
	}
}
