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
// into the receiver's buffer when it is large. While readers spin on a
// link, its socket's receive low-water mark is raised, so that arriving
// frames wake no other thread of the rank (see quietMark).
package tcp

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/weft-hpc/weft/collective/transport"
	"github.com/weft-hpc/weft/internal/wire"
)

// Config is what Connect needs to build the mesh.
type Config struct {
	Rank, Size int
	// Token is the job identity every connection must carry; it must not
	// be empty. Connections that present another are refused.
	Token string
	// Listener is this rank's open listener; Addrs[Rank] is its advertised
	// address. Connect closes the listener when the mesh is complete.
	Listener net.Listener
	// Addrs holds every rank's advertised host:port.
	Addrs []string
	// SocketBuffer sets SO_SNDBUF and SO_RCVBUF; 0 keeps autotuning.
	SocketBuffer int
	// Congestion names the TCP congestion control of every connection
	// ("reno", "cubic"); "" keeps the system's default.
	Congestion string
	// Logf receives warnings (refused connections); nil discards them.
	Logf func(format string, args ...any)
}

// Transport is one rank's set of TCP links.
type Transport struct {
	rank, size int
	links      []*link
}

var (
	_ transport.Transport = (*Transport)(nil)
	_ transport.Poller    = (*link)(nil)
	_ transport.Viewer    = (*link)(nil)
)

func (t *Transport) Name() string { return "tcp" }
func (t *Transport) Rank() int    { return t.rank }
func (t *Transport) Size() int    { return t.size }

func (t *Transport) Link(peer int) transport.Link {
	if peer == t.rank {
		return nil
	}
	return t.links[peer]
}

// Detach removes the link to peer from the transport and hands over its
// connection, for another transport to use (package shm keeps it to learn
// of the peer's death). Call it before any frame has been read or written.
func (t *Transport) Detach(peer int) net.Conn {
	l := t.links[peer]
	if l == nil {
		return nil
	}
	t.links[peer] = nil
	l.rc.Close()
	return l.c
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
	if cfg.Token == "" {
		// Anyone can present an empty token.
		return nil, errors.New("tcp: no job token: every connection must carry one")
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

// maxPending bounds the connections whose handshake is under way: a port
// scanner or a stuck client holds one for at most handshakeWait, and at
// the bound the one that has waited longest is dropped for the newcomer
// (a real peer says who it is within a millisecond, so the oldest is a
// stranger; a real peer that was dropped dials again).
const maxPending = 64

// handshakeWait is how long an accepted connection has to say who it is.
// A real peer sends its Hello as soon as it connects.
const handshakeWait = 10 * time.Second

// acceptAll accepts until every higher rank is connected. Each handshake
// runs on a goroutine of its own, so that a silent or slow connection
// never delays a real peer's.
func acceptAll(ctx context.Context, cfg Config, t *Transport, mu *sync.Mutex, logf func(string, ...any)) error {
	ln := cfg.Listener
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer ln.Close()
	type accepted struct {
		peer int
		l    *link
		err  error
	}
	need := cfg.Size - 1 - cfg.Rank
	// Only a real peer's handshake succeeds, once per rank, so at most
	// need arrive here and none waits to be heard.
	done := make(chan accepted, max(need, 1))
	claimed := make(map[int]bool) // ranks whose handshake succeeded; guarded by mu
	var pmu sync.Mutex
	var pending []net.Conn // handshakes under way, oldest first; guarded by pmu
	var wg sync.WaitGroup
	hctx, cancel := context.WithCancel(ctx)
	acceptErr := make(chan error, 1)
	exited := make(chan struct{})
	defer func() {
		// No more connections, then the handshakes in flight end at once.
		ln.Close()
		<-exited
		cancel()
		wg.Wait()
		close(done)
		for a := range done { // accepted after an error ended the wait
			if a.l != nil {
				a.l.Close()
			}
		}
	}()
	go func() {
		defer close(exited)
		for {
			c, err := ln.Accept()
			if err != nil {
				acceptErr <- err
				return
			}
			pmu.Lock()
			if len(pending) >= maxPending {
				oldest := pending[0]
				pending = pending[1:]
				oldest.Close() // its handshake fails and says so
			}
			pending = append(pending, c)
			pmu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				peer, err := handshakeAccept(hctx, c, cfg, t, mu, claimed)
				pmu.Lock()
				if i := slices.Index(pending, c); i >= 0 {
					pending = slices.Delete(pending, i, i+1)
				}
				pmu.Unlock()
				if err != nil {
					logf("weft: tcp rank %d refused a connection from %s: %v", cfg.Rank, c.RemoteAddr(), err)
					c.Close()
					return
				}
				l, err := newLink(c.(*net.TCPConn), &cfg)
				if err != nil {
					c.Close()
				}
				done <- accepted{peer, l, err}
			}()
		}
	}()
	for need > 0 {
		select {
		case a := <-done:
			if a.err != nil {
				return a.err
			}
			mu.Lock()
			t.links[a.peer] = a.l
			mu.Unlock()
			need--
		case err := <-acceptErr:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("accepting on %s: %w", ln.Addr(), err)
		}
	}
	return nil
}

// handshakeAccept checks a new connection's Hello and answers it.
func handshakeAccept(ctx context.Context, c net.Conn, cfg Config, t *Transport, mu *sync.Mutex, claimed map[int]bool) (int, error) {
	c.SetDeadline(time.Now().Add(handshakeWait))
	defer c.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	h, err := wire.ReadHello(c)
	if err != nil {
		return 0, err
	}
	refuse := func(format string, a ...any) (int, error) {
		reason := fmt.Sprintf(format, a...)
		wire.WriteReply(c, &wire.Reply{Reason: reason})
		return 0, errors.New(reason)
	}
	if cfg.Token == "" || subtle.ConstantTimeCompare([]byte(h.Token), []byte(cfg.Token)) != 1 {
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
	dup := claimed[int(h.From)]
	claimed[int(h.From)] = true
	mu.Unlock()
	if dup {
		return refuse("rank %d is already connected", h.From)
	}
	if err := wire.WriteReply(c, &wire.Reply{OK: true}); err != nil {
		mu.Lock()
		delete(claimed, int(h.From)) // it may dial again
		mu.Unlock()
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
			err = handshakeDial(c, cfg, peer)
			if err != nil {
				c.Close()
				// Closed before an answer: the peer dropped it among
				// strangers on its port (see maxPending), or is not
				// listening yet. Dial again; a refusal is final.
				if ctx.Err() != nil || !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.ECONNRESET) {
					return nil, err
				}
				err = syscall.ECONNREFUSED
			}
		}
		if err == nil {
			l, err := newLink(c.(*net.TCPConn), &cfg)
			if err != nil {
				c.Close()
			}
			return l, err
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
//
// The socket has two descriptors: c, on which frames are written and on
// which the link's background reader waits for data (WaitReadable), and rc,
// a duplicate through which the bytes are read without blocking. Each has
// its own poller registration and lock, so a goroutine that reads (on rc)
// never queues behind the background reader parked on c.
type link struct {
	c, rc *net.TCPConn
	craw  syscall.RawConn
	rraw  syscall.RawConn

	whdr [wire.HeaderSize]byte

	buf  []byte // bytes read from the socket, not yet consumed: buf[r:w]
	r, w int
	left int // payload bytes of the current frame not consumed yet
	rerr error

	rdl atomic.Int64 // the read deadline (SetReadDeadline), Unix ns; 0: none

	// The quiet low-water mark (see quietMark): mark is its raised size
	// (0: never raised on this socket) and cur the socket's mark now;
	// quiet says that the background reader must look every quietSlice
	// (it is true whenever cur > 1); spins counts the readers that spun
	// (Spinning); qmu serialises the changes.
	mark  int
	cur   atomic.Int64
	quiet atomic.Bool
	spins atomic.Uint64
	qmu   sync.Mutex
	slice time.Duration // the background reader's current slice
}

// The read buffer takes headers, small payloads and whatever follows them
// in the socket. A header is read with at most headerRead bytes, so that
// little of a large payload passes through the buffer; the rest of a
// payload, from directRead bytes up, is read straight into its destination.
const (
	bufSize    = 256 << 10
	headerRead = 4 << 10
	directRead = 4 << 10
)

func newLink(c *net.TCPConn, cfg *Config) (*link, error) {
	c.SetNoDelay(true)
	if cfg.SocketBuffer > 0 {
		c.SetReadBuffer(cfg.SocketBuffer)
		c.SetWriteBuffer(cfg.SocketBuffer)
	}
	if cfg.Congestion != "" {
		var serr error
		if raw, err := c.SyscallConn(); err == nil {
			raw.Control(func(fd uintptr) {
				serr = syscall.SetsockoptString(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CONGESTION, cfg.Congestion)
			})
		}
		if serr != nil && cfg.Logf != nil {
			cfg.Logf("weft: tcp: congestion control %q not available, keeping the system's: %v", cfg.Congestion, serr)
		}
	}
	f, err := c.File() // a duplicate descriptor of the same socket
	if err != nil {
		return nil, fmt.Errorf("tcp: duplicating the socket: %w", err)
	}
	defer f.Close()
	fc, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("tcp: duplicating the socket: %w", err)
	}
	rc := fc.(*net.TCPConn)
	l := &link{c: c, rc: rc, buf: make([]byte, bufSize)}
	if l.craw, err = c.SyscallConn(); err == nil {
		l.rraw, err = rc.SyscallConn()
	}
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("tcp: %w", err)
	}
	l.mark = quietMark(l.craw)
	l.cur.Store(1) // the system's
	return l, nil
}

// The quiet low-water mark. Every segment that arrives wakes whatever
// waits on its socket in the kernel: the runtime's network poller, in
// which an idle thread of the process sleeps whenever the rank has a P
// free (it has two, package collective/engine), and the link's
// background reader. While an operation spins on the link reading the
// frames itself (transport.Spinner), each such wake-up takes the CPU from
// it for a few microseconds: on a rank bound to one core, an 8-byte
// allreduce took twice as long as with one P. So from the first spinning
// reader on, the socket's receive low-water mark (SO_RCVLOWAT) is raised:
// Linux then signals readiness only when that many bytes wait (or the peer
// closes or fails), while non-blocking reads still return whatever has
// arrived. The mark stays raised while readers keep spinning, so that the
// frames that arrive between two operations wake no one either. A reader
// that must block lowers it to the bytes the peer is bound to send still
// (wait: the rest of a frame, or 1), the next spinning reader raises it
// again. The background reader looks at the socket every quietSlice (and
// less often while readers keep spinning, up to maxSlice) from the first
// raise on, and lowers the mark for good once no reader has spun for a
// slice (WaitReadable).
//
// The mark stays far below the receive buffer: Linux grows the buffer and
// clamps the window to a mark whose window would not fit in it.
const (
	maxMark    = 16 << 10
	quietSlice = time.Millisecond
	// maxSlice bounds the slice, which doubles while readers keep
	// spinning: they read the link themselves, and on a host with more
	// ranks than cores every look takes a core from one of them. Under
	// probeAfter (package collective/engine), so that a probe on a link
	// no operation waits on is still answered before the next.
	maxSlice = 8 * time.Millisecond
)

// quietMark is the raised low-water mark for a socket: a sixteenth of its
// receive buffer, at most maxMark; 0 (never raised) for a buffer too
// small to gain from it or one that cannot be read.
func quietMark(raw syscall.RawConn) int {
	var buf int
	var serr error
	if err := raw.Control(func(fd uintptr) {
		buf, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF)
	}); err != nil || serr != nil || buf/16 < wire.HeaderSize {
		return 0
	}
	return min(buf/16, maxMark)
}

// Spinning raises the quiet low-water mark when a reader starts to spin
// on the link; it stays raised when the reader stops (see quietMark).
func (l *link) Spinning(on bool) {
	if !on || l.mark == 0 {
		return
	}
	l.spins.Add(1)
	if !l.quiet.Load() || l.cur.Load() != int64(l.mark) {
		l.raise()
	}
}

// raise sets the socket's low-water mark to the raised one and, the first
// time, wakes the background reader, which would not be woken by small
// frames in a wait that does not look every slice.
func (l *link) raise() {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	if l.cur.Load() != int64(l.mark) && !l.setMark(l.mark) {
		return
	}
	if !l.quiet.Load() {
		l.quiet.Store(true)
		l.c.SetReadDeadline(time.Now())
	}
}

// lower sets the socket's low-water mark to m if it is above.
func (l *link) lower(m int) {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	if l.cur.Load() > int64(m) {
		l.setMark(m)
	}
}

// endQuiet lowers the mark for good, unless a reader has spun since spins
// was seen.
func (l *link) endQuiet(seen uint64) {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	if l.spins.Load() == seen && (l.cur.Load() == 1 || l.setMark(1)) {
		l.quiet.Store(false)
	}
}

// setMark sets the socket's low-water mark; the caller holds qmu.
func (l *link) setMark(m int) bool {
	var serr error
	if err := l.rraw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, m)
	}); err != nil || serr != nil {
		return false // closed: the waits report it
	}
	l.cur.Store(int64(m))
	return true
}

func (l *link) WriteFrame(h *wire.Header, payload []byte) error {
	h.Len = uint32(len(payload))
	h.Encode(l.whdr[:])
	hdr := l.whdr[:]
	var werr error
	err := l.craw.Write(func(fd uintptr) bool {
		for len(hdr)+len(payload) > 0 {
			n, err := writev(fd, hdr, payload)
			switch {
			case err == syscall.EAGAIN:
				return false // wait until the socket takes more
			case err == syscall.EINTR:
				continue
			case err != nil:
				werr = err
				return true
			}
			k := min(n, len(hdr))
			hdr, payload = hdr[k:], payload[n-k:]
		}
		return true
	})
	if err != nil {
		return err
	}
	return werr
}

// Reads and writes use raw system calls on non-blocking sockets: they
// never block, and a plain call would let the runtime hand this thread's
// processor to another thread whenever the kernel takes more than 20us to
// copy a chunk, which costs a thread wake-up per chunk and, on a host with
// more ranks than CPUs, starves the other ranks.

func writev(fd uintptr, a, b []byte) (int, error) {
	var iov [2]syscall.Iovec
	n := 0
	for _, p := range [][]byte{a, b} {
		if len(p) > 0 {
			iov[n].Base = &p[0]
			iov[n].SetLen(len(p))
			n++
		}
	}
	r, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(n))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func rawRead(fd uintptr, p []byte) (int, error) {
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// recv reads what the socket has into p without blocking: (0, nil) when it
// has nothing yet, io.EOF when the peer closed.
func (l *link) recv(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var err error
	cerr := l.rraw.Read(func(fd uintptr) bool {
		for {
			n, err = rawRead(fd, p)
			if err != syscall.EINTR {
				return true
			}
		}
	})
	switch {
	case cerr != nil:
		return 0, cerr
	case err == syscall.EAGAIN:
		return 0, nil
	case err != nil:
		return 0, err
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// wait blocks on rc until the socket has bytes or the deadline passes;
// need is how many bytes the peer is bound to send still (the rest of a
// frame), 0 if none. The socket wakes it only once its low-water mark's
// worth has come, so it lowers a mark above need.
func (l *link) wait(need int) error {
	if m := max(need, 1); l.cur.Load() > int64(m) {
		l.lower(m)
	}
	return l.rraw.Read(func(fd uintptr) bool { return readable(fd) })
}

// readable peeks at the socket: true when a read would not block (data,
// end of stream or an error).
func readable(fd uintptr) bool {
	var b [1]byte
	for {
		_, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
			syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		return e != syscall.EAGAIN
	}
}

// fill reads more bytes into the buffer, at most up to want buffered
// bytes; with block it waits for at least one, of need bytes the peer is
// bound to send (wait).
func (l *link) fill(block bool, want, need int) error {
	if l.r > 0 && l.r == l.w {
		l.r, l.w = 0, 0
	}
	if l.r > 0 && l.r+want > len(l.buf) {
		copy(l.buf, l.buf[l.r:l.w])
		l.w -= l.r
		l.r = 0
	}
	end := min(l.r+want, len(l.buf))
	if end <= l.w {
		return nil
	}
	for {
		n, err := l.recv(l.buf[l.w:end])
		l.w += n
		if err != nil || n > 0 || !block {
			return err
		}
		if err := l.wait(need); err != nil {
			return err
		}
	}
}

func (l *link) TryReadHeader(h *wire.Header) (bool, error) {
	if err := l.skip(); err != nil {
		return false, err
	}
	if l.w-l.r < wire.HeaderSize {
		if err := l.fill(false, headerRead, 0); err != nil {
			return false, err
		}
		if l.w-l.r < wire.HeaderSize {
			return false, nil
		}
	}
	return true, l.header(h)
}

func (l *link) header(h *wire.Header) error {
	if err := h.Decode(l.buf[l.r : l.r+wire.HeaderSize]); err != nil {
		return err
	}
	l.r += wire.HeaderSize
	l.left = int(h.Len)
	return nil
}

// skip drops the unread payload of the previous frame.
func (l *link) skip() error {
	for l.left > 0 {
		if l.r == l.w {
			if err := l.fill(true, bufSize, l.left); err != nil {
				return err
			}
		}
		n := min(l.left, l.w-l.r)
		l.r += n
		l.left -= n
	}
	return nil
}

func (l *link) ReadHeader(h *wire.Header) error {
	if err := l.skip(); err != nil {
		return err
	}
	for l.w-l.r < wire.HeaderSize {
		if err := l.fill(true, headerRead, wire.HeaderSize-(l.w-l.r)); err != nil {
			if err == io.EOF && l.w > l.r {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return l.header(h)
}

func (l *link) ReadPayload(dst []byte) error {
	if dst == nil {
		return l.skip()
	}
	if len(dst) != l.left {
		return fmt.Errorf("tcp: payload of %d bytes read into %d", l.left, len(dst))
	}
	n := copy(dst, l.buf[l.r:l.w])
	l.r += n
	for n < len(dst) {
		if len(dst)-n < directRead {
			if err := l.fill(true, bufSize, len(dst)-n); err != nil {
				return unexpected(err)
			}
			k := copy(dst[n:], l.buf[l.r:l.w])
			l.r += k
			n += k
			continue
		}
		k, err := l.recv(dst[n:])
		if err != nil {
			return unexpected(err)
		}
		if k == 0 {
			if err := l.wait(len(dst) - n); err != nil {
				return err
			}
		}
		n += k
	}
	l.left = 0
	return nil
}

// ReadPayloadView shows the payload through the read buffer, a buffer's
// worth at a time.
func (l *link) ReadPayloadView(fn func([]byte)) error {
	for l.left > 0 {
		if l.r == l.w {
			if err := l.fill(true, bufSize, l.left); err != nil {
				return unexpected(err)
			}
		}
		n := min(l.left, l.w-l.r)
		fn(l.buf[l.r : l.r+n])
		l.r += n
		l.left -= n
	}
	return nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// WaitReadable waits on c. From a raise of the low-water mark on it looks
// every slice (quietSlice, doubled up to maxSlice while readers spin),
// until no reader spun for a slice (then it lowers the mark for good); the
// first raise wakes it (raise), so that it starts to look. Only the
// background reader calls it.
func (l *link) WaitReadable() error {
	for {
		quiet, seen, dl := l.quiet.Load(), l.spins.Load(), l.rdl.Load()
		end := unixTime(dl)
		if !quiet || l.slice == 0 {
			l.slice = quietSlice
		}
		if quiet {
			if s := time.Now().Add(l.slice); dl == 0 || s.UnixNano() < dl {
				end = s
			}
		}
		l.c.SetReadDeadline(end)
		if l.quiet.Load() != quiet {
			continue // raised or lowered meanwhile
		}
		err := l.craw.Read(func(fd uintptr) bool { return readable(fd) })
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) || dl != 0 && time.Now().UnixNano() >= dl {
			l.c.SetReadDeadline(unixTime(l.rdl.Load()))
			return err
		}
		// A slice ended, the mark was raised, or the deadline moved.
		if quiet && l.spins.Load() == seen {
			l.endQuiet(seen)
		} else if quiet {
			l.slice = min(2*l.slice, maxSlice)
		}
	}
}

// unixTime is the deadline of Unix ns, the zero time for 0.
func unixTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

func (l *link) Poll() error { return l.wait(0) }

func (l *link) SetPollDeadline(t time.Time) error { return l.rc.SetReadDeadline(t) }

func (l *link) SetReadDeadline(t time.Time) error {
	var ns int64
	if !t.IsZero() {
		ns = t.UnixNano()
	}
	l.rdl.Store(ns)
	l.rc.SetReadDeadline(t)
	return l.c.SetReadDeadline(t)
}

func (l *link) SetWriteDeadline(t time.Time) error { return l.c.SetWriteDeadline(t) }

func (l *link) Close() error {
	l.rc.Close()
	return l.c.Close()
}
