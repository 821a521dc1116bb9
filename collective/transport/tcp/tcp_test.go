package tcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weft-hpc/weft/internal/wire"
)

func listeners(t *testing.T, n int) ([]net.Listener, []string) {
	t.Helper()
	lns := make([]net.Listener, n)
	addrs := make([]string, n)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i], addrs[i] = ln, ln.Addr().String()
	}
	return lns, addrs
}

type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) logf(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(strings.TrimSpace(strings.ReplaceAll(format, "%", "")) + "\n")
	for _, x := range a {
		if e, ok := x.(error); ok {
			l.b.WriteString(e.Error() + "\n")
		}
	}
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func connectAll(t *testing.T, n int, token string, logf func(string, ...any), before func(addrs []string)) []*Transport {
	t.Helper()
	lns, addrs := listeners(t, n)
	if before != nil {
		before(addrs)
	}
	ts := make([]*Transport, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ts[r], errs[r] = Connect(ctx, Config{Rank: r, Size: n, Token: token, Listener: lns[r], Addrs: addrs, Logf: logf})
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	t.Cleanup(func() {
		for _, tr := range ts {
			tr.Close()
		}
	})
	return ts
}

// TestMeshFrames connects four ranks and sends a frame over every link in
// both directions, with payloads above and below the read buffer size.
func TestMeshFrames(t *testing.T) {
	const n = 4
	ts := connectAll(t, n, "job", nil, nil)
	var wg sync.WaitGroup
	for a := range n {
		for b := range n {
			if a == b {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				payload := bytes.Repeat([]byte{byte(a*16 + b)}, 100000+a)
				h := wire.Header{Kind: wire.KindData, Seq: uint64(a), Tag: uint32(b), MsgLen: uint64(len(payload))}
				if err := ts[a].Link(b).WriteFrame(&h, payload); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	for b := range n {
		for a := range n {
			if a == b {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				var h wire.Header
				l := ts[b].Link(a)
				if err := l.ReadHeader(&h); err != nil {
					t.Error(err)
					return
				}
				got := make([]byte, h.Len)
				if err := l.ReadPayload(got); err != nil {
					t.Error(err)
					return
				}
				if h.Seq != uint64(a) || h.Tag != uint32(b) || len(got) != 100000+a || got[0] != byte(a*16+b) || got[len(got)-1] != byte(a*16+b) {
					t.Errorf("link %d->%d: header %+v, %d bytes", a, b, h, len(got))
				}
			}()
		}
	}
	wg.Wait()
}

// TestForeignConnectionRefused: a connection with another job's token, and
// one that does not speak the protocol, are refused and logged while rank 0
// waits; the real peer still connects afterwards.
func TestForeignConnectionRefused(t *testing.T) {
	var log logBuf
	lns, addrs := listeners(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type res struct {
		tr  *Transport
		err error
	}
	ch := make(chan res, 2)
	go func() {
		tr, err := Connect(ctx, Config{Rank: 0, Size: 2, Token: "right-job", Listener: lns[0], Addrs: addrs, Logf: log.logf})
		ch <- res{tr, err}
	}()
	c, err := net.Dial("tcp", addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	wire.WriteHello(c, &wire.Hello{Size: 2, From: 1, To: 0, Token: "other-job"})
	rp, err := wire.ReadReply(c)
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	if rp.OK || !strings.Contains(rp.Reason, "wrong job token") {
		t.Errorf("foreign token: reply %+v", rp)
	}
	g, err := net.Dial("tcp", addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	g.Write([]byte("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"))
	io.Copy(io.Discard, g) // rank 0 closes it
	g.Close()
	go func() {
		tr, err := Connect(ctx, Config{Rank: 1, Size: 2, Token: "right-job", Listener: lns[1], Addrs: addrs})
		ch <- res{tr, err}
	}()
	for range 2 {
		r := <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		defer r.tr.Close()
	}
	logged := log.String()
	if !strings.Contains(logged, "wrong job token") || !strings.Contains(logged, "magic") {
		t.Errorf("refusals not logged: %q", logged)
	}
}

// TestConnectNamesMissingRank: a rank that never starts makes Connect fail
// when the context ends, naming it.
func TestConnectNamesMissingRank(t *testing.T) {
	lns, addrs := listeners(t, 3)
	lns[2].Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if tr, err := Connect(ctx, Config{Rank: 1, Size: 3, Token: "t", Listener: lns[1], Addrs: addrs}); err == nil {
			tr.Close()
		}
	}()
	_, err := Connect(ctx, Config{Rank: 0, Size: 3, Token: "t", Listener: lns[0], Addrs: addrs})
	wg.Wait()
	if err == nil || !strings.Contains(err.Error(), "rank(s) 2") {
		t.Fatalf("err = %v, want one naming rank 2", err)
	}
}

// TestStrangersDoNotDelay: silent, slow and garbage connections to every
// rank's listener while four ranks connect (a port scanner, a stuck
// client, another protocol), a hundred of them beyond the bound on
// handshakes under way: the ranks connect in well under the handshake's
// 10 s limit, and every link carries frames.
func TestStrangersDoNotDelay(t *testing.T) {
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	start := time.Now()
	ts := connectAll(t, 4, "job", nil, func(addrs []string) {
		for _, a := range addrs {
			for i := range maxPending + 100 {
				c, err := net.Dial("tcp", a)
				if err != nil {
					continue // the backlog is full: the kernel refuses, as it may
				}
				held = append(held, c)
				switch i % 3 {
				case 1: // slow: half a Hello, then nothing
					c.Write([]byte("WE")) // the first bytes of "WEFTHELO"
				case 2: // garbage
					c.Write([]byte("SSH-2.0-OpenSSH_9.2\r\n"))
				}
			}
		}
	})
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("connecting with strangers on the ports took %v", d)
	}
	for r, tr := range ts {
		for p := range 4 {
			if p == r {
				continue
			}
			h := wire.Header{Kind: wire.KindData, MsgLen: 3, Len: 3}
			if err := tr.Link(p).WriteFrame(&h, []byte{1, 2, byte(r)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for r, tr := range ts {
		for p := range 4 {
			if p == r {
				continue
			}
			var h wire.Header
			if err := tr.Link(p).ReadHeader(&h); err != nil {
				t.Fatal(err)
			}
			b := make([]byte, h.Len)
			if err := tr.Link(p).ReadPayload(b); err != nil || !bytes.Equal(b, []byte{1, 2, byte(p)}) {
				t.Fatalf("rank %d from %d: %v %v", r, p, b, err)
			}
		}
	}
}

// TestEmptyTokenRefused: a transport cannot be built without a token, for
// anyone could present an empty one.
func TestEmptyTokenRefused(t *testing.T) {
	lns, addrs := listeners(t, 2)
	defer lns[0].Close()
	defer lns[1].Close()
	_, err := Connect(context.Background(), Config{Rank: 0, Size: 2, Listener: lns[0], Addrs: addrs})
	if err == nil || !strings.Contains(err.Error(), "tcp: no job token") {
		t.Errorf("Connect without a token: %v", err)
	}
}

// rcvLowat is the socket's receive low-water mark.
func rcvLowat(t *testing.T, l *link) int {
	t.Helper()
	var v int
	var serr error
	if err := l.rraw.Control(func(fd uintptr) {
		v, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT)
	}); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	return v
}

// waitFor runs f on a goroutine and fails unless it returns within limit
// (a hang: a small frame that woke no one).
func waitFor(t *testing.T, what string, limit time.Duration, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("%s: still waiting after %v", what, limit)
		return nil
	}
}

// TestQuietMark: a spinning reader raises the socket's low-water mark, and
// no wait ever misses a small frame because of it. The background reader
// looks every slice while the mark is raised, is woken when it is raised
// under it, and lowers it once no reader spins; a reader that blocks
// lowers it first; the read deadline still ends the background wait.
func TestQuietMark(t *testing.T) {
	ts := connectAll(t, 2, "job", nil, nil)
	l := ts[0].Link(1).(*link)
	if l.mark == 0 {
		t.Skip("the receive buffer is too small for a raised low-water mark")
	}
	peer := ts[1].Link(0)
	send := func(tag uint32) error {
		h := wire.Header{Kind: wire.KindData, Tag: tag, MsgLen: 8}
		return peer.WriteFrame(&h, make([]byte, 8))
	}
	// sendAfter sends once ready returns true, on a goroutine; the test
	// waits for the channel before the next frame.
	sendAfter := func(tag uint32, ready func() bool) chan error {
		sent := make(chan error, 1)
		go func() {
			for !ready() {
				time.Sleep(time.Millisecond)
			}
			sent <- send(tag)
		}()
		return sent
	}
	soon := func() func() bool {
		at := time.Now().Add(10 * time.Millisecond)
		return func() bool { return time.Now().After(at) }
	}
	joined := func(sent chan error) {
		t.Helper()
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
	}
	take := func(tag uint32) {
		t.Helper()
		var h wire.Header
		ok, err := l.TryReadHeader(&h)
		if err != nil || !ok || h.Tag != tag {
			t.Fatalf("frame %d: ok %v, header %+v, %v", tag, ok, h, err)
		}
		if err := l.ReadPayload(make([]byte, 8)); err != nil {
			t.Fatal(err)
		}
	}
	const limit = 5 * time.Second

	// Raised under a background reader that waits without a slice.
	parked := make(chan error, 1)
	go func() { parked <- l.WaitReadable() }()
	time.Sleep(20 * time.Millisecond)
	l.Spinning(true)
	if got := rcvLowat(t, l); got != l.mark {
		t.Fatalf("low-water mark %d while spinning, want %d", got, l.mark)
	}
	if err := send(1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-parked:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(limit):
		t.Fatal("a background reader parked before the mark was raised missed a small frame")
	}
	take(1)

	// Raised: the background reader still sees a small frame.
	l.Spinning(true)
	sent := sendAfter(2, soon())
	if err := waitFor(t, "background reader, mark raised", limit, l.WaitReadable); err != nil {
		t.Fatal(err)
	}
	joined(sent)
	take(2)

	// No reader spins: the background reader lowers the mark.
	sent = sendAfter(3, func() bool { return !l.quiet.Load() })
	if err := waitFor(t, "background reader lowering the mark", limit, l.WaitReadable); err != nil {
		t.Fatal(err)
	}
	joined(sent)
	if got := rcvLowat(t, l); got != 1 {
		t.Fatalf("low-water mark %d after the readers stopped spinning, want 1", got)
	}
	take(3)

	// A reader that blocks lowers the mark first.
	l.Spinning(true)
	l.SetPollDeadline(time.Now().Add(time.Minute))
	sent = sendAfter(4, soon())
	if err := waitFor(t, "Poll, mark raised", limit, l.Poll); err != nil {
		t.Fatal(err)
	}
	joined(sent)
	if got := rcvLowat(t, l); got != 1 {
		t.Fatalf("low-water mark %d after a blocking wait, want 1", got)
	}
	take(4)

	// A reader blocked for the rest of a large frame keeps the mark and
	// gets all of it, then a small frame behind it.
	big := bytes.Repeat([]byte{7}, 3<<20)
	l.Spinning(true)
	sent = make(chan error, 1)
	go func() {
		h := wire.Header{Kind: wire.KindData, Tag: 5, MsgLen: uint64(len(big))}
		err := peer.WriteFrame(&h, big)
		if err == nil {
			err = send(6)
		}
		sent <- err
	}()
	got := make([]byte, len(big))
	if err := waitFor(t, "a large frame, mark raised", limit, func() error {
		var h wire.Header
		for {
			ok, err := l.TryReadHeader(&h)
			if err != nil || ok {
				if err == nil && (h.Tag != 5 || int(h.Len) != len(big)) {
					err = fmt.Errorf("header %+v", h)
				}
				if err != nil {
					return err
				}
				break
			}
		}
		if err := l.ReadPayload(got); err != nil {
			return err
		}
		// Then the small frame, as a polling reader waits for it: what
		// the link buffered first (Poll counts only the socket's bytes).
		for {
			ok, err := l.TryReadHeader(&h)
			if err != nil || ok {
				if err == nil && h.Tag != 6 {
					err = fmt.Errorf("header %+v", h)
				}
				if err == nil {
					err = l.ReadPayload(make([]byte, 8))
				}
				return err
			}
			if err := l.Poll(); err != nil {
				return err
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	joined(sent)
	if !bytes.Equal(got, big) {
		t.Fatal("the large frame arrived corrupt")
	}

	// The read deadline ends the background wait, mark raised or not.
	for _, spin := range []bool{true, false} {
		if spin {
			l.Spinning(true)
		}
		l.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
		err := waitFor(t, "background reader with a deadline", limit, l.WaitReadable)
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("spinning %v: %v, want the deadline", spin, err)
		}
	}
}
