package inproc

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective/transport"
	"github.com/weft-hpc/weft/internal/wire"
)

// TestFrameCopiedOnce: the reader's ReadPayload copies straight from the
// writer's buffer, and WriteFrame returns only after that copy.
func TestFrameCopiedOnce(t *testing.T) {
	ts := New(2)
	a, b := ts[0].Link(1), ts[1].Link(0)
	payload := []byte("hello, rank 1")
	done := make(chan error, 1)
	go func() {
		h := wire.Header{Kind: wire.KindData, MsgLen: uint64(len(payload))}
		done <- a.WriteFrame(&h, payload)
	}()
	var h wire.Header
	if err := b.ReadHeader(&h); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		t.Fatal("WriteFrame returned before the payload was read")
	case <-time.After(10 * time.Millisecond):
	}
	got := make([]byte, h.Len)
	if err := b.ReadPayload(got); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || string(got) != string(payload) {
		t.Fatalf("got %q, %v", got, err)
	}
	if ts[0].Link(0) != nil || ts[0].Name() != "inproc" || ts[1].Rank() != 1 || ts[1].Size() != 2 {
		t.Fatal("transport metadata")
	}
}

// TestDeadlinesAndClose: reads and writes give up at their deadline, a
// deadline set later wakes a blocked call, and closing one end ends the
// other's reads with io.EOF and its writes with an error.
func TestDeadlinesAndClose(t *testing.T) {
	ts := New(2)
	a, b := ts[0].Link(1), ts[1].Link(0)
	var h wire.Header
	b.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if err := b.ReadHeader(&h); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past deadline: %v", err)
	}
	b.SetReadDeadline(time.Time{})
	errc := make(chan error, 1)
	go func() { errc <- b.ReadHeader(&h) }()
	time.Sleep(10 * time.Millisecond)
	b.SetReadDeadline(time.Now()) // wakes the blocked read
	if err := <-errc; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("deadline set while blocked: %v", err)
	}
	a.SetWriteDeadline(time.Now().Add(20 * time.Millisecond))
	if err := a.WriteFrame(&wire.Header{Kind: wire.KindHeartbeat}, nil); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write nobody reads: %v", err)
	}
	a.SetWriteDeadline(time.Time{})
	b.SetReadDeadline(time.Time{})
	ts[0].Close()
	if err := b.ReadHeader(&h); err != io.EOF {
		t.Fatalf("read after peer closed: %v", err)
	}
	if err := b.WriteFrame(&wire.Header{Kind: wire.KindHeartbeat}, nil); err == nil {
		t.Fatal("write to a closed peer succeeded")
	}
	if err := a.ReadHeader(&h); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("read on a closed link: %v", err)
	}
}
