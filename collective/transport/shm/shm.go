//go:build linux

// Package shm is the shared-memory transport for ranks on the same host
// (same host name and boot id): each pair shares one segment under
// /dev/shm holding two single-producer single-consumer byte rings, one per
// direction, and frames (package wire) stream through them as they would
// through a socket, copied once in and once out by the two processes.
//
// A waiting reader or writer spins first (the collective layer decides for
// how long) and then sleeps on a futex in the segment, so a quiet rank does
// not burn a core; the other side wakes it only when it sleeps. The
// engine's background reader of the link stays off the futex while
// operations keep reading the link themselves, looking every 1-8 ms
// instead (WaitReadable), so that a rank that alternates computing and
// exchanging with this peer has no thread woken on its core per message.
//
// The pair keeps the TCP connection it was set up over, and nothing more
// goes on it: when the peer's process dies the kernel closes it, which is
// how the survivor learns of the death at once (a dead process cannot say
// anything through shared memory). Segments are unlinked as soon as both
// sides have mapped them, so the kernel frees them when the processes end,
// killed or not; a segment left by a rank that died during the hand-shake
// carries its creator's pid in its name and is removed by the next job on
// the host.
//
// Group (group.go) is the other kind of segment: one that all ranks of a
// communicator on the host map, with a stamp and a small mailbox per rank
// and data areas, for collectives that reduce in shared memory instead of
// streaming frames.
//
// Hand-written because nothing maintained offers cross-process rings with
// futex wake-ups for Go; golang.org/x/sys/unix supplies mmap and the
// system calls.
package shm

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/weft-hpc/weft/collective/transport"
	"github.com/weft-hpc/weft/internal/wire"
)

// Dir is where segments live.
var Dir = "/dev/shm"

const (
	segMagic    = 0x5745465453484d31 // "WEFTSHM1"
	ctlSize     = 4096               // the control page at the start of a segment
	lineSize    = 128                // keeps counters on their own cache lines
	futexWait   = 0
	futexWake   = 1
	DefaultRing = 4 << 20
)

// ring is one direction's control block (in the segment) and its data.
type ring struct {
	head     *uint64 // bytes written, ever (writer)
	tail     *uint64 // bytes read, ever (reader)
	dataSeq  *uint32 // bumped by the writer to wake a sleeping reader
	spaceSeq *uint32 // bumped by the reader to wake a sleeping writer
	rSleep   *uint32 // readers asleep
	wSleep   *uint32 // writers asleep
	closed   *uint32 // set by the side that closed its end
	rSpin    *uint32 // readers spinning (no wake-up needed)
	data     []byte
	mask     uint64
}

func newRing(ctl []byte, data []byte) *ring {
	p := unsafe.Pointer(&ctl[0])
	at := func(i int) unsafe.Pointer { return unsafe.Add(p, i*lineSize) }
	return &ring{
		head:     (*uint64)(at(0)),
		tail:     (*uint64)(at(1)),
		dataSeq:  (*uint32)(at(2)),
		spaceSeq: (*uint32)(at(3)),
		rSleep:   (*uint32)(at(4)),
		wSleep:   (*uint32)(at(5)),
		closed:   (*uint32)(at(6)),
		rSpin:    (*uint32)(at(7)),
		data:     data,
		mask:     uint64(len(data) - 1),
	}
}

// Link is one rank's end of a shared-memory pair. It implements
// transport.Link and transport.Poller.
type Link struct {
	mem      []byte
	in, out  *ring // in: the peer writes, we read; out: the reverse
	conn     net.Conn
	whdr     [wire.HeaderSize]byte
	left     int  // payload bytes of the current frame not read yet
	spinning bool // the reader (token holder) said it spins
	// linger: the token holder stopped spinning but left its count in
	// rSpin, so that the next operation's spin costs the writer no cache
	// miss; whoever goes to sleep on the ring first takes it out (unlinger).
	linger atomic.Bool
	// tailSeen is the out ring's tail as the writer last read it: free
	// space is at least what it implies, so the writer reads the reader's
	// cache line only when that is not enough.
	tailSeen uint64
	yield    bool // give the CPU away while spinning (Config.Yield)
	// spins counts the token holder's spins (Spinning(true)); spinsSeen
	// is the count the background reader last saw, and kick interrupts its
	// quiet naps (WaitReadable).
	spins      atomic.Uint64
	spinsSeen  uint64
	kicked     atomic.Bool // Kick: the quiet phase ends
	kick       chan struct{}
	napT       *time.Timer
	peerGone   atomic.Bool
	closeOnce  sync.Once
	localClose atomic.Bool

	mu                      sync.Mutex
	readDL, pollDL, writeDL time.Time
}

var (
	_ transport.Link    = (*Link)(nil)
	_ transport.Poller  = (*Link)(nil)
	_ transport.Spinner = (*Link)(nil)
	_ transport.Viewer  = (*Link)(nil)
	_ transport.Kicker  = (*Link)(nil)
)

// Config sets up a pair.
type Config struct {
	// Conn is the pair's established TCP connection. The link takes it
	// over: after the hand-shake only its closing matters.
	Conn net.Conn
	// Creator creates the segment (by convention the lower rank).
	Creator bool
	// RingBytes is the size of each direction's ring, a power of two
	// (0: DefaultRing).
	RingBytes int
	// Yield makes spinning waits give the CPU away (sched_yield): set it
	// when the host runs more ranks than it has CPUs.
	Yield bool
}

// CheckRing says what is wrong with a ring size: it must be a power of
// two of at least 64K.
func CheckRing(n int) error {
	if n < 64<<10 || n&(n-1) != 0 {
		return fmt.Errorf("ring of %d bytes: want a power of two of at least 64K", n)
	}
	return nil
}

// Open builds the pair over cfg.Conn: the creator makes and maps the
// segment and sends its name; the other side maps it and answers; the
// creator then unlinks the file. Both return a Link, or an error after
// which the connection is closed.
func Open(ctx context.Context, cfg Config) (*Link, error) {
	rb := cfg.RingBytes
	if rb == 0 {
		rb = DefaultRing
	}
	if err := CheckRing(rb); err != nil {
		return nil, fmt.Errorf("shm: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		cfg.Conn.SetDeadline(dl)
		defer cfg.Conn.SetDeadline(time.Time{})
	}
	size := ctlSize + 2*rb
	var mem []byte
	if cfg.Creator {
		CleanStale()
		name, m, err := create(size, rb)
		if err != nil {
			cfg.Conn.Close()
			return nil, err
		}
		mem = m
		path := filepath.Join(Dir, name)
		err = writeHello(cfg.Conn, name)
		if err == nil {
			err = readAck(cfg.Conn)
		}
		os.Remove(path) // both sides have it mapped (or the pair failed)
		if err != nil {
			unix.Munmap(mem)
			cfg.Conn.Close()
			return nil, fmt.Errorf("shm: setting up segment %s with the peer: %w", path, err)
		}
	} else {
		name, err := readHello(cfg.Conn)
		if err != nil {
			cfg.Conn.Close()
			return nil, err
		}
		m, err := attach(name, size, rb)
		if err != nil {
			cfg.Conn.Close()
			return nil, err
		}
		mem = m
		if _, err := cfg.Conn.Write([]byte{1}); err != nil {
			unix.Munmap(mem)
			cfg.Conn.Close()
			return nil, fmt.Errorf("shm: acknowledging segment %s: %w", name, err)
		}
	}
	half := ctlSize / 2
	r0 := newRing(mem[64:half], mem[ctlSize:ctlSize+rb])
	r1 := newRing(mem[half:ctlSize], mem[ctlSize+rb:ctlSize+2*rb])
	l := &Link{mem: mem, conn: cfg.Conn, yield: cfg.Yield, kick: make(chan struct{}, 1)}
	if cfg.Creator {
		l.out, l.in = r0, r1
	} else {
		l.out, l.in = r1, r0
	}
	go l.watch()
	return l, nil
}

// watch waits for the TCP connection to end: the peer's process died, or
// it closed its link.
func (l *Link) watch() {
	var b [64]byte
	for {
		if _, err := l.conn.Read(b[:]); err != nil {
			break
		}
	}
	l.peerGone.Store(true)
	l.wakeAll()
}

func (l *Link) wakeAll() {
	l.wakeQuiet()
	for _, r := range []*ring{l.in, l.out} {
		atomic.AddUint32(r.dataSeq, 1)
		atomic.AddUint32(r.spaceSeq, 1)
		futex(r.dataSeq, futexWake, 1<<30, nil)
		futex(r.spaceSeq, futexWake, 1<<30, nil)
	}
}

// create makes a new segment with a name no stale file can have: the
// creator's pid and 64 random bits.
func create(size, rb int) (string, []byte, error) {
	name, mem, err := createSeg(size)
	if err != nil {
		return "", nil, err
	}
	binary.LittleEndian.PutUint64(mem[0:], segMagic)
	binary.LittleEndian.PutUint64(mem[8:], uint64(rb))
	prefault(mem)
	return name, mem, nil
}

// prefault maps every page of a pair's segment into this process now. A
// ring is written and read a frame after the other, so otherwise each of
// its pages costs both sides a page fault the first time the ring passes
// it: about a microsecond for every 57 small messages, for the first 4 MiB
// each way (a short ping-pong loop ran at half speed). Kernels before 5.14
// have no MADV_POPULATE_WRITE, and keep faulting on first use. Where Dir
// has less than eight segments' worth free (a container's 64 MiB
// /dev/shm), the pages are left to be taken as the rings reach them, as
// before: rings that a job never fills must not take the room that other
// segments will touch.
func prefault(mem []byte) {
	var st unix.Statfs_t
	if unix.Statfs(Dir, &st) != nil || st.Bavail*uint64(st.Bsize) < 8*uint64(len(mem)) {
		return
	}
	unix.Madvise(mem, unix.MADV_POPULATE_WRITE)
}

// createSeg makes, sizes and maps a new segment named after this process.
func createSeg(size int) (string, []byte, error) {
	var rnd [8]byte
	rand.Read(rnd[:])
	name := fmt.Sprintf("weft-%d-%s", os.Getpid(), hex.EncodeToString(rnd[:]))
	path := filepath.Join(Dir, name)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", nil, fmt.Errorf("shm: creating %s: %w", path, err)
	}
	defer f.Close()
	if err := f.Truncate(int64(size)); err != nil {
		os.Remove(path)
		return "", nil, fmt.Errorf("shm: sizing %s to %d bytes: %w (is %s large enough?)", path, size, err, Dir)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		os.Remove(path)
		return "", nil, fmt.Errorf("shm: mapping %s: %w", path, err)
	}
	return name, mem, nil
}

func attach(name string, size, rb int) ([]byte, error) {
	mem, err := attachSeg(name, size)
	if err != nil {
		return nil, err
	}
	if binary.LittleEndian.Uint64(mem[0:]) != segMagic || binary.LittleEndian.Uint64(mem[8:]) != uint64(rb) {
		unix.Munmap(mem)
		return nil, fmt.Errorf("shm: %s is not a weft segment with %d-byte rings", filepath.Join(Dir, name), rb)
	}
	prefault(mem)
	return mem, nil
}

// attachSeg maps the existing segment name, which must have size bytes.
func attachSeg(name string, size int) ([]byte, error) {
	path := filepath.Join(Dir, name)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: opening the peer's segment %s: %w (is %s shared between the ranks?)", path, err, Dir)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() != int64(size) {
		return nil, fmt.Errorf("shm: segment %s has the wrong size (the peer uses other settings?)", path)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shm: mapping %s: %w", path, err)
	}
	return mem, nil
}

// CleanStale removes segments whose creator is no longer running: they can
// only be left by a rank that died between creating and unlinking one.
func CleanStale() {
	ents, _ := os.ReadDir(Dir)
	for _, e := range ents {
		pid, ok := creatorPID(e.Name())
		if !ok {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.Remove(filepath.Join(Dir, e.Name()))
		}
	}
}

func creatorPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "weft-")
	if !ok {
		return 0, false
	}
	p, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	return pid, err == nil && pid > 0
}

// The hand-shake: the creator sends "WSHM", a length byte and the name;
// the other side answers one byte.

const maxName = 64

func writeHello(w io.Writer, name string) error {
	if len(name) > maxName {
		return fmt.Errorf("shm: segment name %q too long", name)
	}
	_, err := w.Write(append([]byte{'W', 'S', 'H', 'M', byte(len(name))}, name...))
	return err
}

func readHello(r io.Reader) (string, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return "", fmt.Errorf("shm: reading the segment name: %w", err)
	}
	return decodeHello(h[:], r)
}

func decodeHello(h []byte, r io.Reader) (string, error) {
	if string(h[:4]) != "WSHM" || int(h[4]) > maxName || h[4] == 0 {
		return "", fmt.Errorf("%w: shm hand-shake %q", wire.ErrCorrupt, h)
	}
	b := make([]byte, h[4])
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("shm: reading the segment name: %w", err)
	}
	name := string(b)
	if _, ok := creatorPID(name); !ok || strings.ContainsAny(name, "/\x00") {
		return "", fmt.Errorf("%w: shm segment name %q", wire.ErrCorrupt, name)
	}
	return name, nil
}

func readAck(r io.Reader) error {
	var b [1]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return err
	}
	if b[0] != 1 {
		return fmt.Errorf("%w: shm acknowledgement %#x", wire.ErrCorrupt, b[0])
	}
	return nil
}

// --- the rings -----------------------------------------------------------

func futex(addr *uint32, op int, val uint32, ts *unix.Timespec) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), uintptr(op), uintptr(val), uintptr(unsafe.Pointer(ts)), 0, 0)
}

// sleep waits on seq while it still holds seen, at most until dl (zero: no
// limit), counting itself in sleepers so the other side knows to wake it.
// ready is checked again after announcing the sleep, so no wake-up is lost.
func sleep(seq, sleepers *uint32, seen uint32, ready func() bool, dl time.Time) error {
	atomic.AddUint32(sleepers, 1)
	defer atomic.AddUint32(sleepers, ^uint32(0))
	if ready() {
		return nil
	}
	var ts *unix.Timespec
	if !dl.IsZero() {
		d := time.Until(dl)
		if d <= 0 {
			return os.ErrDeadlineExceeded
		}
		t := unix.NsecToTimespec(int64(min(d, 100*time.Millisecond)))
		ts = &t
	}
	futex(seq, futexWait, seen, ts)
	return nil
}

func (l *Link) deadline(which *time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return *which
}

// avail is how many bytes the peer has written that we have not read.
func (l *Link) avail() uint64 {
	return atomic.LoadUint64(l.in.head) - atomic.LoadUint64(l.in.tail)
}

// waitData blocks until at least one byte is readable, the peer is gone,
// we closed, or dl passes. With spin it looks at the ring waitSpins times
// before it sleeps: the rest of a frame is usually a copy away. A wait
// for the next frame does not spin here: the engine decides how long
// that one polls (WEFT_SPIN) before it calls Poll, and the background
// reader polls lazily before WaitReadable sleeps.
func (l *Link) waitData(dl *time.Time, holder, spin bool) error {
	r := l.in
	for i := 0; spin && i < waitSpins && l.avail() == 0; i++ {
		if l.yield {
			yieldCPU() // more ranks than CPUs: the writer may need this one
		}
		if i%64 == 63 && (l.peerGone.Load() || l.localClose.Load()) {
			break
		}
	}
	for l.avail() == 0 {
		if l.localClose.Load() {
			return transport.ErrClosed
		}
		if l.peerGone.Load() || atomic.LoadUint32(r.closed) != 0 {
			// The peer may have written its last frames between the
			// loop's look at the ring and this one at its state: what
			// it wrote before it closed is read before the end.
			if l.avail() > 0 {
				break
			}
			return io.EOF
		}
		d := l.deadline(dl)
		if !d.IsZero() && !time.Now().Before(d) {
			return os.ErrDeadlineExceeded
		}
		// A reader that said it spins and now must sleep (the rest of a
		// payload is late) stops counting as a spinner while it sleeps, or
		// no writer would wake it.
		spun := holder && l.spinning
		if spun {
			l.Spinning(false)
		}
		seen := atomic.LoadUint32(r.dataSeq)
		err := sleep(r.dataSeq, r.rSleep, seen, func() bool {
			l.unlinger() // after our rSleep count, before the futex
			return l.avail() > 0 || l.peerGone.Load() || l.localClose.Load() || atomic.LoadUint32(r.closed) != 0
		}, d)
		if spun {
			l.Spinning(true)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// take copies n readable bytes out of the in ring into dst (nil: discard).
func (l *Link) take(dst []byte, n int) {
	r := l.in
	t := atomic.LoadUint64(r.tail)
	if dst != nil {
		off := t & r.mask
		k := copy(dst[:n], r.data[off:])
		copy(dst[k:n], r.data)
	}
	atomic.StoreUint64(r.tail, t+uint64(n))
	if atomic.LoadUint32(r.wSleep) != 0 {
		atomic.AddUint32(r.spaceSeq, 1)
		futex(r.spaceSeq, futexWake, 1<<30, nil)
	}
}

// read fills dst from the in ring, waiting for bytes under dl.
func (l *Link) read(dst []byte, dl *time.Time) error {
	for len(dst) > 0 {
		if err := l.waitData(dl, true, true); err != nil {
			if err == io.EOF {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		n := int(min(l.avail(), uint64(len(dst))))
		l.take(dst, n)
		dst = dst[n:]
	}
	return nil
}

func (l *Link) discard(n int, dl *time.Time) error {
	for n > 0 {
		if err := l.waitData(dl, true, true); err != nil {
			return err
		}
		k := int(min(l.avail(), uint64(n)))
		l.take(nil, k)
		n -= k
	}
	return nil
}

// put copies p into the out ring, waiting for space; a header (atomic
// set) is published only whole, so a reader never sees half of one.
func (l *Link) put(p []byte, atomicSet bool) error {
	r := l.out
	for len(p) > 0 {
		h := atomic.LoadUint64(r.head)
		free := l.free(h, uint64(len(p)))
		if free == 0 || atomicSet && free < uint64(len(p)) {
			if err := l.waitSpace(uint64(len(p)), atomicSet); err != nil {
				return err
			}
			continue
		}
		n := int(min(free, uint64(len(p))))
		off := h & r.mask
		k := copy(r.data[off:], p[:n])
		copy(r.data, p[k:n])
		l.publish(h + uint64(n))
		p = p[n:]
	}
	return nil
}

// free is the out ring's free space with head hd, re-reading the
// reader's tail only when the last one seen leaves less than need.
func (l *Link) free(hd, need uint64) uint64 {
	size := uint64(len(l.out.data))
	if f := size - (hd - l.tailSeen); f >= need {
		return f
	}
	l.tailSeen = atomic.LoadUint64(l.out.tail)
	return size - (hd - l.tailSeen)
}

func (l *Link) waitSpace(need uint64, whole bool) error {
	r := l.out
	size := uint64(len(r.data))
	ready := func() bool {
		free := size - (atomic.LoadUint64(r.head) - atomic.LoadUint64(r.tail))
		return free > 0 && (!whole || free >= need)
	}
	for spins := 0; !ready(); spins++ {
		if l.localClose.Load() {
			return transport.ErrClosed
		}
		if l.peerGone.Load() || atomic.LoadUint32(r.closed) != 0 {
			return io.ErrClosedPipe
		}
		d := l.deadline(&l.writeDL)
		if !d.IsZero() && !time.Now().Before(d) {
			return os.ErrDeadlineExceeded
		}
		if spins < 1000 {
			continue
		}
		seen := atomic.LoadUint32(r.spaceSeq)
		if err := sleep(r.spaceSeq, r.wSleep, seen, func() bool {
			return ready() || l.peerGone.Load() || l.localClose.Load()
		}, d); err != nil {
			return err
		}
	}
	return nil
}

// --- transport.Link -------------------------------------------------------

func (l *Link) WriteFrame(h *wire.Header, payload []byte) error {
	h.Len = uint32(len(payload))
	// A frame that fits in the free space goes out with one publication,
	// so the reader never finds a header whose payload is still coming.
	// Its header is encoded in the ring where it does not wrap: encoded
	// aside and copied, its bytes were read back in wide loads from the
	// narrow stores that had just written them, a stall on every frame.
	r := l.out
	hd := atomic.LoadUint64(r.head)
	if need := uint64(wire.HeaderSize + len(payload)); l.free(hd, need) >= need {
		off := hd & r.mask
		if off+wire.HeaderSize <= uint64(len(r.data)) {
			h.Encode(r.data[off : off+wire.HeaderSize])
		} else {
			h.Encode(l.whdr[:])
			k := copy(r.data[off:], l.whdr[:])
			copy(r.data, l.whdr[k:])
		}
		off = (hd + wire.HeaderSize) & r.mask
		k := copy(r.data[off:], payload)
		copy(r.data, payload[k:])
		l.publish(hd + uint64(wire.HeaderSize+len(payload)))
		return nil
	}
	h.Encode(l.whdr[:])
	if err := l.put(l.whdr[:], true); err != nil {
		return err
	}
	return l.put(payload, false)
}

// publish makes the out ring's bytes up to head visible and wakes a
// reader that sleeps (unless one spins).
func (l *Link) publish(head uint64) {
	r := l.out
	atomic.StoreUint64(r.head, head)
	if atomic.LoadUint32(r.rSleep) != 0 && atomic.LoadUint32(r.rSpin) == 0 {
		atomic.AddUint32(r.dataSeq, 1)
		futex(r.dataSeq, futexWake, 1<<30, nil)
	}
}

func (l *Link) ReadHeader(h *wire.Header) error {
	if l.left > 0 {
		if err := l.discard(l.left, &l.readDL); err != nil {
			return err
		}
		l.left = 0
	}
	var b [wire.HeaderSize]byte
	if err := l.waitData(&l.readDL, true, false); err != nil {
		return err
	}
	if err := l.read(b[:], &l.readDL); err != nil {
		return err
	}
	return l.decode(h, b[:])
}

func (l *Link) decode(h *wire.Header, b []byte) error {
	if err := h.Decode(b); err != nil {
		return err
	}
	l.left = int(h.Len)
	return nil
}

func (l *Link) ReadPayload(dst []byte) error {
	if dst == nil {
		err := l.discard(l.left, &l.pollDL)
		l.left = 0
		return err
	}
	if len(dst) != l.left {
		return fmt.Errorf("shm: payload of %d bytes read into %d", l.left, len(dst))
	}
	l.left = 0
	return l.read(dst, &l.pollDL)
}

// ReadPayloadView shows the payload where it lies in the ring; the space
// is given back to the writer after each piece.
func (l *Link) ReadPayloadView(fn func([]byte)) error {
	r := l.in
	for l.left > 0 {
		if err := l.waitData(&l.pollDL, true, true); err != nil {
			if err == io.EOF {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		t := atomic.LoadUint64(r.tail)
		off := t & r.mask
		n := int(min(l.avail(), uint64(l.left), uint64(len(r.data))-off))
		fn(r.data[off : off+uint64(n)])
		l.take(nil, n)
		l.left -= n
	}
	return nil
}

// TryReadHeader reads a header if one is in the ring. Headers are
// published whole, so at a frame boundary any readable byte means a whole
// header.
func (l *Link) TryReadHeader(h *wire.Header) (bool, error) {
	if l.left > 0 {
		if err := l.discard(l.left, &l.pollDL); err != nil {
			return false, err
		}
		l.left = 0
	}
	if l.avail() < wire.HeaderSize {
		if l.localClose.Load() {
			return false, transport.ErrClosed
		}
		// The peer's state first, then the ring: a peer that wrote its
		// last frames and closed after an empty look at the ring would
		// otherwise lose them.
		if gone := l.peerGone.Load() || atomic.LoadUint32(l.in.closed) != 0; gone && l.avail() == 0 {
			return false, io.EOF
		}
		return false, nil
	}
	// Decoded where it lies unless it wraps (as WriteFrame encodes it),
	// and only then given back to the writer.
	r := l.in
	if off := atomic.LoadUint64(r.tail) & r.mask; off+wire.HeaderSize <= uint64(len(r.data)) {
		err := l.decode(h, r.data[off:off+wire.HeaderSize])
		l.take(nil, wire.HeaderSize)
		return true, err
	}
	var b [wire.HeaderSize]byte
	l.take(b[:], wire.HeaderSize)
	return true, l.decode(h, b[:])
}

// Spinning tells writers that a reader spins on the ring and needs no
// wake-up. When the last spinner stops with bytes in the ring, it wakes a
// sleeping reader itself: a writer may have skipped the wake-up meanwhile.
//
// Stopping lingers: the count stays while nobody sleeps on the ring, so
// that back-to-back operations do not write a line the writer reads on
// every frame. A reader about to sleep takes a lingering count out first
// (sleep's ready check calls unlinger), and one that already sleeps when
// the spinner stops makes the stop real. The two orders are covered
// because each side writes its flag before it reads the other's.
func (l *Link) Spinning(on bool) {
	r := l.in
	l.spinning = on
	if on {
		l.spins.Add(1)
		if !l.linger.Swap(false) {
			atomic.AddUint32(r.rSpin, 1)
		}
		return
	}
	l.linger.Store(true)
	if atomic.LoadUint32(r.rSleep) != 0 {
		l.unlinger()
	}
}

// unlinger takes a lingering spin count out of the ring, waking a
// sleeping reader if bytes wait and nobody else spins.
func (l *Link) unlinger() {
	if !l.linger.Swap(false) {
		return
	}
	r := l.in
	if atomic.AddUint32(r.rSpin, ^uint32(0)) == 0 && l.avail() > 0 && atomic.LoadUint32(r.rSleep) != 0 {
		atomic.AddUint32(r.dataSeq, 1)
		futex(r.dataSeq, futexWake, 1<<30, nil)
	}
}

// WaitReadable is the background reader's wait. While operations keep
// reading the link themselves (they spin on it: Spinning), it stays out of
// their way: it looks at the ring once a slice (quietSlice, doubling up to
// maxSlice while they go on), not as a sleeper, so that writers issue no
// wake-up, and it leaves the frames there to the operations unless the
// ring fills past a quarter. A rank that alternates compute and exchanges
// with this peer then has no thread woken on its core for each message.
// Once a slice passes with no spin, it waits as it did before operations
// spun: for its first millisecond it checks the ring from Go timers,
// without counting as a sleeper (a frame arriving just before an
// operation starts waiting for it is then taken by that operation, not by
// an OS thread woken for it); only a reader idle for longer sleeps on the
// futex. Closing, the peer's end and an earlier deadline end a quiet nap
// at once, and so does Kick, which also ends the quiet phase: a goroutine
// waits for a frame of this link without reading it.
func (l *Link) WaitReadable() error {
	select {
	case <-l.kick: // an old wake-up: what it was for is looked at below
	default:
	}
	for slice := quietSlice; l.spins.Load() != l.spinsSeen && !l.kicked.Swap(false); slice = min(2*slice, maxSlice) {
		l.spinsSeen = l.spins.Load()
		if err := l.nap(slice); err != nil {
			return err
		}
		if l.avail() >= uint64(len(l.in.data)/4) || l.gone() {
			return nil
		}
	}
	start := time.Now()
	for backoff := 5 * time.Microsecond; time.Since(start) < lazyWait; backoff = min(2*backoff, 100*time.Microsecond) {
		if l.avail() > 0 || l.gone() {
			return nil
		}
		if d := l.deadline(&l.readDL); !d.IsZero() && !time.Now().Before(d) {
			return os.ErrDeadlineExceeded
		}
		time.Sleep(backoff)
	}
	return l.waitData(&l.readDL, false, false)
}

// gone reports whether either end of the link closed.
func (l *Link) gone() bool {
	return l.peerGone.Load() || l.localClose.Load() || atomic.LoadUint32(l.in.closed) != 0
}

// nap waits d, or until wakeQuiet, or until the read deadline passes
// (then it returns os.ErrDeadlineExceeded).
func (l *Link) nap(d time.Duration) error {
	dl := l.deadline(&l.readDL)
	if !dl.IsZero() {
		left := time.Until(dl)
		if left <= 0 {
			return os.ErrDeadlineExceeded
		}
		d = min(d, left)
	}
	if l.napT == nil {
		l.napT = time.NewTimer(d)
	} else {
		l.napT.Reset(d)
	}
	select {
	case <-l.kick:
		l.napT.Stop()
	case <-l.napT.C:
	}
	return nil
}

// Kick ends the background reader's quiet phase (transport.Kicker).
func (l *Link) Kick() {
	l.kicked.Store(true)
	l.wakeQuiet()
}

// wakeQuiet ends the background reader's quiet nap, if it naps.
func (l *Link) wakeQuiet() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// quietSlice is the background reader's first look at a ring operations
// read themselves, maxSlice its longest wait between looks (under the
// engine's probe delay, 10 ms, so that a probe on a link that no operation
// waits on is still answered before the next).
const (
	quietSlice = time.Millisecond
	maxSlice   = 8 * time.Millisecond
)

// waitSpins is how many times a reader looks at the ring before sleeping
// in the middle of a frame (a few microseconds, or as many sched_yields
// with Yield).
const waitSpins = 4000

// yieldCPU gives the CPU away in a spinning wait (Config.Yield). A raw
// call, so that the runtime does not hand this goroutine's P to another
// thread meanwhile; a variable, so that the tests can count the calls.
var yieldCPU = func() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }

// lazyWait is how long the background reader polls before it sleeps.
const lazyWait = time.Millisecond

func (l *Link) Poll() error { return l.waitData(&l.pollDL, true, false) }

// setDL sets a deadline. Sleepers re-read their deadline at least every
// 100 ms; one brought forward wakes them at once (an earlier deadline is
// how a failing endpoint interrupts its readers and writers).
func (l *Link) setDL(which *time.Time, t time.Time, ring *ring, seq func(*ring) *uint32) {
	l.mu.Lock()
	earlier := !t.IsZero() && (which.IsZero() || t.Before(*which))
	*which = t
	l.mu.Unlock()
	if earlier {
		l.wakeQuiet()
		atomic.AddUint32(seq(ring), 1)
		futex(seq(ring), futexWake, 1<<30, nil)
	}
}

func dataSeq(r *ring) *uint32  { return r.dataSeq }
func spaceSeq(r *ring) *uint32 { return r.spaceSeq }

// SetPollDeadline bounds the token holder's waits; the holder is the
// caller, so nobody needs waking.
func (l *Link) SetPollDeadline(t time.Time) error {
	l.mu.Lock()
	l.pollDL = t
	l.mu.Unlock()
	return nil
}

func (l *Link) SetReadDeadline(t time.Time) error {
	l.setDL(&l.pollDL, t, l.in, dataSeq)
	l.setDL(&l.readDL, t, l.in, dataSeq)
	return nil
}

func (l *Link) SetWriteDeadline(t time.Time) error {
	l.setDL(&l.writeDL, t, l.out, spaceSeq)
	return nil
}

// Close marks our end closed, wakes everyone and closes the connection
// (the peer's watcher sees it). The mapping stays until the process ends:
// a goroutine still inside a copy must not fault.
func (l *Link) Close() error {
	l.closeOnce.Do(func() {
		l.localClose.Store(true)
		atomic.StoreUint32(l.out.closed, 1)
		l.wakeAll()
		l.conn.Close()
	})
	return nil
}
