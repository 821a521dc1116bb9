//go:build linux

package shm

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/weft-hpc/weft/internal/wire"
)

// pair opens both ends over a loopback TCP connection, with the segment in
// a private directory.
func pair(t testing.TB, ring int) (*Link, *Link) {
	t.Helper()
	Dir = t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var a, b *Link
	var ea, eb error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			eb = err
			return
		}
		b, eb = Open(context.Background(), Config{Conn: c, RingBytes: ring})
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a, ea = Open(context.Background(), Config{Conn: c, Creator: true, RingBytes: ring})
	wg.Wait()
	if ea != nil || eb != nil {
		t.Fatal(ea, eb)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	if ents, _ := os.ReadDir(Dir); len(ents) != 0 {
		t.Errorf("segment file left after both sides attached: %v", ents)
	}
	return a, b
}

// TestFramesBothWays streams frames bigger than the ring in both
// directions at once, checking every byte.
func TestFramesBothWays(t *testing.T) {
	a, b := pair(t, 64<<10)
	sizes := []int{0, 1, 100, 64 << 10, 300000, 7}
	send := func(l *Link, tag uint32) {
		for i, n := range sizes {
			p := bytes.Repeat([]byte{byte(tag + uint32(i))}, n)
			h := wire.Header{Kind: wire.KindData, Tag: tag, Seq: uint64(i), MsgLen: uint64(n)}
			if err := l.WriteFrame(&h, p); err != nil {
				t.Error(err)
				return
			}
		}
	}
	recv := func(l *Link, tag uint32) {
		var h wire.Header
		for i, n := range sizes {
			if err := l.ReadHeader(&h); err != nil {
				t.Error(err)
				return
			}
			got := make([]byte, h.Len)
			if err := l.ReadPayload(got); err != nil {
				t.Error(err)
				return
			}
			if h.Tag != tag || h.Seq != uint64(i) || len(got) != n || !bytes.Equal(got, bytes.Repeat([]byte{byte(tag + uint32(i))}, n)) {
				t.Errorf("frame %d: header %+v, %d bytes", i, h, len(got))
			}
		}
	}
	var wg sync.WaitGroup
	for _, f := range []func(){func() { send(a, 1) }, func() { send(b, 2) }, func() { recv(b, 1) }, func() { recv(a, 2) }} {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	wg.Wait()
}

// TestPollAndDeadline: TryReadHeader does not block, Poll and reads give
// up at their deadline, and a deadline set while asleep wakes the sleeper.
func TestPollAndDeadline(t *testing.T) {
	a, b := pair(t, 0)
	var h wire.Header
	if ok, err := b.TryReadHeader(&h); ok || err != nil {
		t.Fatalf("empty ring: %v %v", ok, err)
	}
	b.SetPollDeadline(time.Now().Add(20 * time.Millisecond))
	if err := b.Poll(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Poll past deadline: %v", err)
	}
	b.SetReadDeadline(time.Time{})
	errc := make(chan error, 1)
	go func() { errc <- b.ReadHeader(&h) }()
	time.Sleep(20 * time.Millisecond)
	b.SetReadDeadline(time.Now())
	if err := <-errc; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("deadline set while asleep: %v", err)
	}
	b.SetReadDeadline(time.Time{})
	a.WriteFrame(&wire.Header{Kind: wire.KindHeartbeat}, nil)
	if err := b.WaitReadable(); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.TryReadHeader(&h); !ok || err != nil || h.Kind != wire.KindHeartbeat {
		t.Fatalf("TryReadHeader: %v %v %+v", ok, err, h)
	}
}

// TestNextFrameWaitsSleep: Poll and WaitReadable wait for the next frame
// without spinning on the ring, so that the engine alone decides how long
// a wait polls (WEFT_SPIN). With Yield (more ranks than CPUs) each spin
// here was a sched_yield that held the goroutine's P and handed the core
// to another rank: a parameter-server job, whose every rank waits on
// several links at once, ran a hundred times slower. The rest of a frame
// still spins, and yields.
func TestNextFrameWaitsSleep(t *testing.T) {
	a, b := pair(t, 64<<10)
	b.yield = true
	var yields atomic.Int64
	yield := yieldCPU
	yieldCPU = func() { yields.Add(1); yield() }
	t.Cleanup(func() { yieldCPU = yield })

	b.SetPollDeadline(time.Now().Add(20 * time.Millisecond))
	if err := b.Poll(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Poll past deadline: %v", err)
	}
	b.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if err := b.WaitReadable(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("WaitReadable past deadline: %v", err)
	}
	b.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	var h wire.Header
	if err := b.ReadHeader(&h); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("ReadHeader past deadline: %v", err)
	}
	if n := yields.Load(); n != 0 {
		t.Errorf("waits for the next frame gave the CPU away %d times, want none", n)
	}

	// A sleeping Poll wakes for a frame.
	b.SetReadDeadline(time.Time{})
	b.SetPollDeadline(time.Now().Add(time.Minute))
	go func() {
		time.Sleep(10 * time.Millisecond)
		a.WriteFrame(&wire.Header{Kind: wire.KindData, MsgLen: 3}, []byte{1, 2, 3})
	}()
	if err := b.Poll(); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.TryReadHeader(&h); !ok || err != nil || h.Len != 3 {
		t.Fatalf("TryReadHeader: %v %v %+v", ok, err, h)
	}
	if err := b.ReadPayload(make([]byte, 3)); err != nil {
		t.Fatal(err)
	}

	// A payload that comes after its header spins, yielding, first.
	go func() {
		hb := make([]byte, wire.HeaderSize)
		(&wire.Header{Kind: wire.KindData, MsgLen: 8, Len: 8}).Encode(hb)
		a.put(hb, true)
		time.Sleep(10 * time.Millisecond)
		a.put(make([]byte, 8), false)
	}()
	if err := b.Poll(); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.TryReadHeader(&h); !ok || err != nil || h.Len != 8 {
		t.Fatalf("TryReadHeader: %v %v %+v", ok, err, h)
	}
	if err := b.ReadPayload(make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	if yields.Load() == 0 {
		t.Error("the rest of a frame was waited for without a yield")
	}
}

// TestPeerDeath: when the peer's connection goes (its process died), a
// blocked reader wakes with io.EOF once the frames already in the ring are
// read, and a writer stuck on a full ring gets an error.
func TestPeerDeath(t *testing.T) {
	a, b := pair(t, 64<<10)
	a.WriteFrame(&wire.Header{Kind: wire.KindHeartbeat}, nil)
	errc := make(chan error, 1)
	go func() {
		big := make([]byte, 1<<20) // more than the ring: blocks
		h := wire.Header{Kind: wire.KindData, MsgLen: uint64(len(big))}
		errc <- b.WriteFrame(&h, big)
	}()
	time.Sleep(20 * time.Millisecond)
	a.conn.Close() // what the kernel does when a's process dies
	var h wire.Header
	if err := b.ReadHeader(&h); err != nil || h.Kind != wire.KindHeartbeat {
		t.Fatalf("frame before the death: %v %+v", err, h)
	}
	if err := b.ReadHeader(&h); err != io.EOF {
		t.Fatalf("read after the death: %v", err)
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("write to a dead peer succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("writer still blocked 5s after the peer died")
	}
}

// TestCleanStale removes segments of dead creators and keeps the others.
func TestCleanStale(t *testing.T) {
	Dir = t.TempDir()
	dead := filepath.Join(Dir, "weft-999999999-0011")
	live := filepath.Join(Dir, "weft-"+strconv.Itoa(os.Getpid())+"-0011")
	other := filepath.Join(Dir, "not-ours")
	for _, p := range []string{dead, live, other} {
		os.WriteFile(p, nil, 0o600)
	}
	CleanStale()
	for p, want := range map[string]bool{dead: false, live: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists=%v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}

// TestLastFramesBeforeClose: a peer that writes its last frame and closes
// while the reader looks at an empty ring; the reader gets the frame, then
// io.EOF. (The reader looked at the ring, then at the peer's state: a
// frame written and a close made between the two looks was lost, and a
// rank failed with "lost connection" at the barrier before Close.)
func TestLastFramesBeforeClose(t *testing.T) {
	for i := range 200 {
		a, b := pair(t, 64<<10)
		payload := []byte("the last frame")
		go func() {
			for range i % 7 * 50 { // land the close at different points of the reader's loop
				runtime.Gosched()
			}
			a.WriteFrame(&wire.Header{Kind: wire.KindData, Len: uint32(len(payload)), MsgLen: uint64(len(payload))}, payload)
			a.Close()
		}()
		var h wire.Header
		for {
			ok, err := b.TryReadHeader(&h)
			if ok {
				break
			}
			if err != nil {
				t.Fatalf("try %d: %v before the last frame", i, err)
			}
		}
		got := make([]byte, h.Len)
		if err := b.ReadPayload(got); err != nil || string(got) != string(payload) {
			t.Fatalf("try %d: payload %q, %v", i, got, err)
		}
		if err := b.ReadHeader(&h); err != io.EOF {
			t.Fatalf("try %d: read after the close: %v, want io.EOF", i, err)
		}
		b.Close()
	}
}

// TestSegmentPrefaulted: the writer's first pass through its ring takes
// no page faults, since Open mapped the segment in whole (where the kernel
// has MADV_POPULATE_WRITE, 5.14 on): counted with the thread's minor
// faults while it writes a whole ring of frames that a reader drains.
func TestSegmentPrefaulted(t *testing.T) {
	probe, err := unix.Mmap(-1, 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	err = unix.Madvise(probe, unix.MADV_POPULATE_WRITE)
	unix.Munmap(probe)
	if err != nil {
		t.Skipf("this kernel has no MADV_POPULATE_WRITE (%v)", err)
	}
	const ring = 1 << 20
	x, y := pair(t, ring)
	done := make(chan error, 1)
	go func() {
		var h wire.Header
		buf := make([]byte, 4096)
		y.SetReadDeadline(time.Now().Add(10 * time.Second))
		for n := 0; n < ring; n += len(buf) {
			if err := y.ReadHeader(&h); err != nil {
				done <- err
				return
			}
			if err := y.ReadPayload(buf); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	payload := make([]byte, 4096)
	x.SetWriteDeadline(time.Now().Add(10 * time.Second))
	var before, after unix.Rusage
	unix.Getrusage(unix.RUSAGE_THREAD, &before)
	for n := 0; n < ring; n += len(payload) {
		if err := x.WriteFrame(&wire.Header{Kind: wire.KindData, MsgLen: uint64(len(payload))}, payload); err != nil {
			t.Fatal(err)
		}
	}
	unix.Getrusage(unix.RUSAGE_THREAD, &after)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Without the prefault a pass faults once a page: 256 times here.
	if f := after.Minflt - before.Minflt; f > 32 {
		t.Fatalf("writing a %d-byte ring through once took %d page faults", ring, f)
	}
}

// TestQuietReader: while operations keep reading the link themselves (they
// spin on it), the background reader's WaitReadable leaves small frames
// in the ring and does not count as a sleeper, so that writers wake no
// thread; it returns once a slice passes with no spin, when the ring
// fills past a quarter, when Kick says a goroutine waits without reading,
// and when the peer goes.
func TestQuietReader(t *testing.T) {
	a, b := pair(t, 64<<10)
	spin := func() { b.Spinning(true); b.Spinning(false) }
	frame := func(n int) {
		if err := a.WriteFrame(&wire.Header{Kind: wire.KindData, MsgLen: uint64(n)}, make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
	wait := func() (chan error, func()) {
		errc := make(chan error, 1)
		go func() { errc <- b.WaitReadable() }()
		stop, stopped := make(chan struct{}), make(chan struct{})
		go func() { // operations that spin on the link, one at a time
			defer close(stopped)
			for {
				select {
				case <-stop:
					return
				default:
				}
				spin()
				runtime.Gosched() // a sleep under a millisecond lasts one
			}
		}()
		return errc, func() { close(stop); <-stopped }
	}
	returnsWithin := func(what string, errc chan error, d time.Duration) {
		t.Helper()
		select {
		case err := <-errc:
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		case <-time.After(d):
			t.Fatalf("%s: WaitReadable did not return within %v", what, d)
		}
	}
	drain := func() {
		var h wire.Header
		for {
			ok, err := b.TryReadHeader(&h)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				return
			}
			b.ReadPayload(nil)
		}
	}

	// Spinning operations: a small frame stays, and no reader sleeps.
	spin()
	errc, stop := wait()
	frame(100)
	time.Sleep(30 * time.Millisecond)
	select {
	case err := <-errc:
		t.Fatalf("WaitReadable returned (%v) for a small frame while operations spun on the link", err)
	default:
	}
	if n := atomic.LoadUint32(b.in.rSleep); n != 0 {
		t.Errorf("%d readers sleep on the ring in the quiet phase, want none", n)
	}
	// A quarter of the ring: the writer must not block on the operations.
	frame(16 << 10)
	returnsWithin("a quarter of the ring", errc, time.Second)
	stop()
	drain()

	// Kick: a goroutine waits for a frame without reading the link.
	spin()
	errc, stop = wait()
	time.Sleep(5 * time.Millisecond)
	frame(100)
	b.Kick()
	returnsWithin("Kick", errc, 100*time.Millisecond)
	stop()
	drain()

	// Operations stop spinning: after a slice without spins, it waits as
	// before, and a frame wakes it.
	spin()
	errc = make(chan error, 1)
	go func() { errc <- b.WaitReadable() }()
	time.Sleep(3 * maxSlice)
	frame(100)
	returnsWithin("no spin for a slice", errc, 100*time.Millisecond)
	drain()

	// The peer goes.
	spin()
	errc, stop = wait()
	defer stop()
	a.Close()
	returnsWithin("peer closed", errc, 100*time.Millisecond)
}
