// Package tcp is the TCP transport: one persistent connection between every
// pair of ranks (a full mesh, as Gloo's connectFullMesh builds), opened at
// start-up, each framed with package wire.
//
// Rank r dials every lower rank and accepts every higher one. Each new
// connection starts with a handshake that carries the job token, the world
// size and both ranks; the acceptor refuses, logs and closes any connection
// whose token, size or ranks are not the ones it expects (another job, a
// stale run, a port scanner), and keeps waiting for the right peers.
//
// Writes use writev (header and payload in one system call, no copy);
// reads take the header through a small buffer and the payload straight
// into the receiver's buffer when it is large.
package tcp

import (
	"bufio"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/weft-hpc/weft/collective/transport"
	"github.com/weft-hpc/weft/internal/wire"
)

// Config is what Connect needs to build the mesh.
type Config struct {
	Rank, Size int
	// Token is the job identity every connection must carry.
	Token string
	// Listener is this rank's open listener; Addrs[Rank] is its advertised
	// address. Connect closes the listener when the mesh is complete.
	Listener net.Listener
	// Addrs holds every rank's advertised host:port.
	Addrs []string
	// SocketBuffer sets SO_SNDBUF and SO_RCVBUF; 0 keeps autotuning.
	SocketBuffer int
	// Logf receives warnings (refused connections); nil discards them.
	Logf func(format string, args ...any)
}

// Transport is one rank's set of TCP links.
type Transport struct {
	rank, size int
	links      []*link
}

var _ transport.Transport = (*Transport)(nil)

func (t *Transport) Name() string { return "tcp" }
func (t *Transport) Rank() int    { return t.rank }
func (t *Transport) Size() int    { return t.size }

func (t *Transport) Link(peer int) transport.Link {
	if peer == t.rank {
		return nil
	}
	return t.links[peer]
}

func (t *Transport) Close() error {
	for _, l := range t.links {
		if l != nil {
			l.Close()
		}
	}
	return nil
}

// Connect builds the full mesh. It returns when this rank has a link to
// every other rank, or an error naming the ranks that did not connect when
// ctx ends.
func Connect(ctx context.Context, cfg Config) (*Transport, error) {
	if cfg.Size < 1 || cfg.Rank < 0 || cfg.Rank >= cfg.Size || len(cfg.Addrs) != cfg.Size {
		return nil, fmt.Errorf("tcp: rank %d of %d with %d addresses", cfg.Rank, cfg.Size, len(cfg.Addrs))
	}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	t := &Transport{rank: cfg.Rank, size: cfg.Size, links: make([]*link, cfg.Size)}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var mu sync.Mutex
	var firstErr error
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	var wg sync.WaitGroup
	// Accept the higher ranks.
	if cfg.Rank < cfg.Size-1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := acceptAll(ctx, cfg, t, &mu, logf); err != nil {
				fail(err)
			}
		}()
	} else {
		cfg.Listener.Close()
	}
	// Dial the lower ranks.
	for peer := 0; peer < cfg.Rank; peer++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := dial(ctx, cfg, peer)
			if err != nil {
				fail(err)
				return
			}
			mu.Lock()
			t.links[peer] = l
			mu.Unlock()
		}()
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		var missing []string
		for p, l := range t.links {
			if p != cfg.Rank && l == nil {
				missing = append(missing, fmt.Sprint(p))
			}
		}
		t.Close()
		if len(missing) > 0 {
			return nil, fmt.Errorf("tcp: rank %d: no connection from rank(s) %s: %w", cfg.Rank, strings.Join(missing, ", "), firstErr)
		}
		return nil, fmt.Errorf("tcp: rank %d: %w", cfg.Rank, firstErr)
	}
	return t, nil
}

func acceptAll(ctx context.Context, cfg Config, t *Transport, mu *sync.Mutex, logf func(string, ...any)) error {
	ln := cfg.Listener
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer ln.Close()
	need := cfg.Size - 1 - cfg.Rank
	for need > 0 {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("accepting on %s: %w", ln.Addr(), err)
		}
		peer, err := handshakeAccept(c, cfg, t, mu)
		if err != nil {
			logf("weft: tcp rank %d refused a connection from %s: %v", cfg.Rank, c.RemoteAddr(), err)
			c.Close()
			continue
		}
		mu.Lock()
		t.links[peer] = newLink(c.(*net.TCPConn), cfg.SocketBuffer)
		mu.Unlock()
		need--
	}
	return nil
}

// handshakeAccept checks a new connection's Hello and answers it.
func handshakeAccept(c net.Conn, cfg Config, t *Transport, mu *sync.Mutex) (int, error) {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	h, err := wire.ReadHello(c)
	if err != nil {
		return 0, err
	}
	refuse := func(format string, a ...any) (int, error) {
		reason := fmt.Sprintf(format, a...)
		wire.WriteReply(c, &wire.Reply{Reason: reason})
		return 0, errors.New(reason)
	}
	if subtle.ConstantTimeCompare([]byte(h.Token), []byte(cfg.Token)) != 1 {
		return refuse("wrong job token (a connection from another job or an earlier run)")
	}
	if int(h.Size) != cfg.Size {
		return refuse("peer believes in a world of %d ranks, this one has %d", h.Size, cfg.Size)
	}
	if int(h.To) != cfg.Rank {
		return refuse("peer wants rank %d, this is rank %d", h.To, cfg.Rank)
	}
	if int(h.From) <= cfg.Rank {
		return refuse("rank %d should be dialled by rank %d, not dial it", h.From, cfg.Rank)
	}
	mu.Lock()
	dup := t.links[h.From] != nil
	mu.Unlock()
	if dup {
		return refuse("rank %d is already connected", h.From)
	}
	if err := wire.WriteReply(c, &wire.Reply{OK: true}); err != nil {
		return 0, err
	}
	return int(h.From), nil
}

func dial(ctx context.Context, cfg Config, peer int) (*link, error) {
	addr := cfg.Addrs[peer]
	var d net.Dialer
	backoff := 10 * time.Millisecond
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			if err := handshakeDial(c, cfg, peer); err != nil {
				c.Close()
				return nil, err
			}
			return newLink(c.(*net.TCPConn), cfg.SocketBuffer), nil
		}
		// The peer may still be starting; anything but a refusal is final.
		if !errors.Is(err, syscall.ECONNREFUSED) || ctx.Err() != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("dialling rank %d at %s: %w", peer, addr, ctx.Err())
			}
			return nil, fmt.Errorf("dialling rank %d at %s: %w", peer, addr, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("dialling rank %d at %s: %w (last: %v)", peer, addr, ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

func handshakeDial(c net.Conn, cfg Config, peer int) error {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	if err := wire.WriteHello(c, &wire.Hello{Size: int32(cfg.Size), From: int32(cfg.Rank), To: int32(peer), Token: cfg.Token}); err != nil {
		return fmt.Errorf("handshake with rank %d at %s: %w", peer, cfg.Addrs[peer], err)
	}
	rp, err := wire.ReadReply(c)
	if err != nil {
		return fmt.Errorf("handshake with rank %d at %s: %w", peer, cfg.Addrs[peer], err)
	}
	if !rp.OK {
		return fmt.Errorf("rank %d at %s refused the connection: %s", peer, cfg.Addrs[peer], rp.Reason)
	}
	return nil
}

// link is one TCP connection carrying frames.
type link struct {
	c    *net.TCPConn
	r    *bufio.Reader
	whdr [wire.HeaderSize]byte
	rhdr [wire.HeaderSize]byte
	iov  [2][]byte
	left int // payload bytes of the current frame not read yet
}

func newLink(c *net.TCPConn, sockBuf int) *link {
	c.SetNoDelay(true)
	if sockBuf > 0 {
		c.SetReadBuffer(sockBuf)
		c.SetWriteBuffer(sockBuf)
	}
	return &link{c: c, r: bufio.NewReaderSize(c, 64<<10)}
}

func (l *link) WriteFrame(h *wire.Header, payload []byte) error {
	h.Len = uint32(len(payload))
	h.Encode(l.whdr[:])
	if len(payload) == 0 {
		_, err := l.c.Write(l.whdr[:])
		return err
	}
	l.iov[0], l.iov[1] = l.whdr[:], payload
	bufs := net.Buffers(l.iov[:])
	_, err := bufs.WriteTo(l.c)
	l.iov[1] = nil
	return err
}

func (l *link) ReadHeader(h *wire.Header) error {
	if l.left > 0 {
		if _, err := l.r.Discard(l.left); err != nil {
			return err
		}
		l.left = 0
	}
	if _, err := io.ReadFull(l.r, l.rhdr[:]); err != nil {
		return err
	}
	if err := h.Decode(l.rhdr[:]); err != nil {
		return err
	}
	l.left = int(h.Len)
	return nil
}

func (l *link) ReadPayload(dst []byte) error {
	if dst == nil {
		_, err := l.r.Discard(l.left)
		l.left = 0
		return err
	}
	if len(dst) != l.left {
		return fmt.Errorf("tcp: payload of %d bytes read into %d", l.left, len(dst))
	}
	_, err := io.ReadFull(l.r, dst)
	l.left = 0
	return err
}

func (l *link) SetReadDeadline(t time.Time) error  { return l.c.SetReadDeadline(t) }
func (l *link) SetWriteDeadline(t time.Time) error { return l.c.SetWriteDeadline(t) }
func (l *link) Close() error                       { return l.c.Close() }

// PeersMissing lists ranks without a link, for diagnostics.
func (t *Transport) PeersMissing() []int {
	var out []int
	for p, l := range t.links {
		if p != t.rank && l == nil {
			out = append(out, p)
		}
	}
	sort.Ints(out)
	return out
}
