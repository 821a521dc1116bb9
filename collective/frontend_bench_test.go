package collective

import (
	"context"
	"log/slog"
	"testing"

	"github.com/weft-hpc/weft/collective/driver"
)

// nopConn completes every call at once: what is left is the front end.
type nopConn struct{}

func (nopConn) Rank() int                                              { return 0 }
func (nopConn) Size() int                                              { return 1 }
func (nopConn) Name() string                                           { return "nop" }
func (nopConn) Run(context.Context, *driver.Call) error                { return nil }
func (nopConn) Start(*driver.Call) (driver.Pending, error)             { return nil, nil }
func (nopConn) Split(context.Context, int, []int) (driver.Conn, error) { return nil, nil }
func (nopConn) Abort(*driver.Failure)                                  {}
func (nopConn) Close() error                                           { return nil }
func (nopConn) Probe(context.Context, int, int, bool) (driver.Status, bool, error) {
	return driver.Status{}, false, nil
}

// BenchmarkFrontEnd is the front end's cost of a blocking 8-byte
// allreduce: checks, ordering, request, result, over a backend that does
// nothing. It is what every backend's small-message latency pays on top of
// its own.
func BenchmarkFrontEnd(b *testing.B) {
	c := newComm(nopConn{}, newDomain(nopConn{}, 0, slog.Default()), nil, &Launch{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	x := []float32{1, 2}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.AllReduce(ctx, Buf(x), Buf(x), Sum); err != nil {
			b.Fatal(err)
		}
	}
}
