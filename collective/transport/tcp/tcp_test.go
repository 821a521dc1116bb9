package tcp

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"sync"
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
