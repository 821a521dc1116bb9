//go:build linux

package shm

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A Group is one segment shared by all n ranks of a communicator on one
// host, for collectives that work on shared buffers instead of streaming
// frames through the pair rings. Each rank has two mailboxes, one for the
// odd and one for the even steps of its work: a stamp it alone raises (the
// step it has reached) and, beside it in the same cache line, a few bytes
// of its own (a description of its operation, or a small payload), so
// that a rank that polls a peer's stamp gets its message in the same
// transfer. A rank writes the mailbox of step v only after every rank has
// reached step v-1, so no one still reads what it held at step v-2. Two
// sets of data areas (a slot per rank and a result area) serve larger
// payloads the same way.
//
// The Group only lays out the memory and wakes sleepers; what the steps
// and areas mean is the caller's (package engine's shared-memory
// collectives). Like the pair segments, the file is unlinked as soon as
// every rank has mapped it, and its name carries the creator's pid so that
// CleanStale removes one left by a creator that died first.
type Group struct {
	mem      []byte
	n, rank  int
	area     int     // bytes of each slot and of the result area
	box      []byte  // the mailboxes: rank r's for parity p at (2r+p)*lineSize
	sleepers *uint32 // ranks asleep on wake
	wake     *uint32 // bumped by Wake while someone slept
	name     string
}

const (
	groupMagic = 0x5745465447525031 // "WEFTGRP1"
	// MailBytes is the room in a mailbox beside its stamp.
	MailBytes = 56
)

// groupSize is the segment's size: a header line, two mailboxes per rank,
// and two sets of n slots and a result area.
func groupSize(n, area int) int {
	ctl := (1 + 2*n) * lineSize
	ctl = (ctl + 4095) &^ 4095
	return ctl + 2*(n+1)*area
}

// CreateGroup makes and maps the segment of a group of n ranks with data
// areas of area bytes, as rank 0; the others attach with its name.
func CreateGroup(n, area int) (*Group, error) {
	if n < 1 || area <= 0 || area%lineSize != 0 {
		return nil, fmt.Errorf("shm: group of %d ranks with %d-byte areas", n, area)
	}
	CleanStale()
	size := groupSize(n, area)
	name, mem, err := createSeg(size)
	if err != nil {
		return nil, err
	}
	// Take the pages now: a full tmpfs then fails here, where the caller
	// can fall back, instead of killing a rank with SIGBUS mid-operation.
	if err := unix.Madvise(mem, unix.MADV_POPULATE_WRITE); err != nil && err != unix.EINVAL {
		unix.Munmap(mem)
		os.Remove(filepath.Join(Dir, name))
		return nil, fmt.Errorf("shm: reserving %d bytes for a group segment in %s: %w", size, Dir, err)
	}
	binary.LittleEndian.PutUint64(mem[0:], groupMagic)
	binary.LittleEndian.PutUint64(mem[8:], uint64(n))
	binary.LittleEndian.PutUint64(mem[16:], uint64(area))
	return newGroup(mem, name, n, 0, area), nil
}

// AttachGroup maps the segment name made by CreateGroup, as rank.
func AttachGroup(name string, n, rank, area int) (*Group, error) {
	if filepath.Base(name) != name || rank <= 0 || rank >= n {
		return nil, fmt.Errorf("shm: attaching group segment %q as rank %d of %d", name, rank, n)
	}
	size := groupSize(n, area)
	mem, err := attachSeg(name, size)
	if err != nil {
		return nil, err
	}
	if binary.LittleEndian.Uint64(mem[0:]) != groupMagic || binary.LittleEndian.Uint64(mem[8:]) != uint64(n) ||
		binary.LittleEndian.Uint64(mem[16:]) != uint64(area) {
		unix.Munmap(mem)
		return nil, fmt.Errorf("shm: %s is not a weft group segment of %d ranks with %d-byte areas", filepath.Join(Dir, name), n, area)
	}
	return newGroup(mem, name, n, rank, area), nil
}

func newGroup(mem []byte, name string, n, rank, area int) *Group {
	g := &Group{mem: mem, n: n, rank: rank, area: area, name: name, box: mem[lineSize : (1+2*n)*lineSize]}
	base := unsafe.Pointer(&mem[0])
	g.sleepers = (*uint32)(unsafe.Add(base, 32))
	g.wake = (*uint32)(unsafe.Add(base, 64))
	return g
}

// Name is the segment's file name under Dir (for the other ranks).
func (g *Group) Name() string { return g.name }

// Unlink removes the segment's file; the creator calls it once every rank
// has attached (or given up), and the mappings live on.
func (g *Group) Unlink() { os.Remove(filepath.Join(Dir, g.name)) }

// Close unmaps the segment. No call may follow.
func (g *Group) Close() error {
	if g.mem == nil {
		return nil
	}
	err := unix.Munmap(g.mem)
	g.mem = nil
	return err
}

// Area is data area i of set s (0 or 1): a rank's slot for i < n, the
// result area for i == n.
func (g *Group) Area(s, i int) []byte {
	ctl := groupSize(g.n, g.area) - 2*(g.n+1)*g.area
	off := ctl + (s*(g.n+1)+i)*g.area
	return g.mem[off : off+g.area : off+g.area]
}

// AreaBytes is the size of each data area.
func (g *Group) AreaBytes() int { return g.area }

func (g *Group) stamp(r int, v uint64) *uint64 {
	return (*uint64)(unsafe.Pointer(&g.box[(2*r+int(v&1))*lineSize]))
}

// Mail is the room beside rank r's stamp in the mailbox of step v. A rank
// writes only its own, before raising its stamp to v.
func (g *Group) Mail(r int, v uint64) []byte {
	off := (2*r+int(v&1))*lineSize + 8
	return g.box[off : off+MailBytes : off+MailBytes]
}

// Reached reports whether rank r has raised its stamp to step v or beyond.
func (g *Group) Reached(r int, v uint64) bool { return atomic.LoadUint64(g.stamp(r, v)) >= v }

// Progress is a sum that grows whenever any rank raises its stamp.
func (g *Group) Progress() (s uint64) {
	for r := range g.n {
		s += atomic.LoadUint64(g.stamp(r, 0)) + atomic.LoadUint64(g.stamp(r, 1))
	}
	return s
}

// Raise sets this rank's stamp to step v, one above the last: what it
// wrote before is visible to a rank that sees v. It wakes no one: the rank
// that sees every stamp at v calls Wake.
func (g *Group) Raise(v uint64) { atomic.StoreUint64(g.stamp(g.rank, v), v) }

// Wake wakes the ranks asleep on the group, if any.
func (g *Group) Wake() {
	if atomic.LoadUint32(g.sleepers) != 0 {
		atomic.AddUint32(g.wake, 1)
		futex(g.wake, futexWake, 1<<30, nil)
	}
}

// Sleep waits until ready holds or about d has passed, sleeping on the
// group's futex: a rank that calls Wake meanwhile wakes it.
func (g *Group) Sleep(ready func() bool, d time.Duration) {
	seen := atomic.LoadUint32(g.wake)
	atomic.AddUint32(g.sleepers, 1)
	defer atomic.AddUint32(g.sleepers, ^uint32(0))
	if ready() {
		return
	}
	ts := unix.NsecToTimespec(int64(d))
	futex(g.wake, futexWait, seen, &ts)
}
