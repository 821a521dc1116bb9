package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"syscall"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/collective/transport/shm"
	"github.com/weft-hpc/weft/internal/reduce"
)

// The shared-memory allreduce works on one segment that every rank of a
// communicator maps (shm.Group), when all its ranks are on one host and
// talk over shared memory: no frames, no matching, no rings. Ranks move in
// steps: a rank raises its stamp to its next step and waits until every
// rank has reached it. The buffer goes through in rounds of at most one
// data area (areaFor), two steps each:
//
//  1. every rank copies the parts of its round that others reduce into
//     its slot, and takes a step;
//  2. rank r reduces part r of the round (its own input and the other
//     slots' part r, in rank order) into its output and the result area,
//     and takes a step;
//  3. it copies the other parts from the result area.
//
// So each part is reduced by one rank and copied by the others (every rank
// ends with the same bits), every byte crosses between cores once each way,
// and what crosses stays in cache: the areas are small and reused every
// other round, where Weft's pair rings and Open MPI's shared-memory
// transport stream every byte through a queue and copy it again
// (docs/BENCHMARKS.md measures both). A buffer of at most groupSmall bytes
// takes one step instead: every rank copies all of it into its slot and
// reduces all slots, in rank order, itself; one of at most groupInline
// bytes rides in the rank's mailbox beside its stamp, so that a peer gets
// stamp and payload in one cache-line transfer. Two sets of areas and
// mailboxes alternate, so a rank writes one only after every rank has left
// it. The first step of an operation carries each rank's call in its
// mailbox: a rank that called something else is a mismatch.
//
// A rank waits by polling the stamps for the spin time (giving the CPU
// away between polls when the host is oversubscribed), then sleeps on the
// group's futex in slices, watching the endpoint's failure (a dead peer's
// link reports it), the caller's context and the silence limit.

const (
	groupSmall  = 16 << 10                  // one-step rounds through the slots at or below
	groupLong   = 1 << 20                   // oversubscribed: sleep at once between steps at or above
	groupInline = shm.MailBytes - callBytes // one-step rounds in the mailboxes at or below
)

// areaFor is the size of the data areas of c's segment: 4 MiB rounds for
// up to four ranks (fewer steps, and the fastest of 256 KiB-4 MiB at 2 and
// at 4 ranks, docs/BENCHMARKS.md), halved as ranks are added so that the
// segment stays under 48 MiB, down to 256 KiB. Every rank computes the
// same.
func areaFor(c *conn) int {
	a := 4 << 20
	for a > 256<<10 && 2*(c.size+1)*a > 48<<20 {
		a /= 2
	}
	return a
}

// shmGroupRuns reports whether c can use a shared segment: more than one
// rank and every peer of c over shared memory. Every member computes the
// same answer (ranks share memory exactly when they share a host), and
// stops using it together if setting it up failed anywhere.
func shmGroupRuns(c *conn, _ *driver.Call) bool {
	if c.groupState == 0 {
		c.groupState = groupNo
		if c.size > 1 {
			c.groupState = groupUnset
			for r, w := range c.world {
				if r == c.rank {
					continue
				}
				if _, ok := c.ep.peers[w].link.(*shm.Link); !ok {
					c.groupState = groupNo
					break
				}
			}
		}
	}
	return c.groupState != groupNo
}

// groupState values.
const (
	groupUnset = 1 + iota // can have one; not made yet
	groupReady            // c.group is mapped
	groupNo               // cannot, or making it failed on some rank
)

// Tags of the set-up messages: above any tag an algorithm uses, since a
// failed set-up falls back to the ring in the same operation.
const (
	tagGroupName uint32 = 1<<30 + iota
	tagGroupAck
	tagGroupVerdict
)

// groupNameBytes is the fixed size of the name message.
const groupNameBytes = 128

// setupGroup makes c's segment, inside the operation x that first needs
// it: rank 0 creates it and sends its name, the others attach and say
// whether they could, rank 0 unlinks it and tells everyone whether all
// could. It returns false (on every rank alike) when some rank could not.
func (x *exec) setupGroup() (ok bool, err error) {
	c := x.c
	n := c.size
	var g *shm.Group
	defer func() {
		if g != nil && (err != nil || !ok) {
			g.Unlink() // rank 0's, if it failed before unlinking
			g.Close()
		}
	}()
	yes := []byte{1}
	name := make([]byte, groupNameBytes)
	if c.rank == 0 {
		if g, err = shm.CreateGroup(n, areaFor(c)); err == nil {
			copy(name, g.Name())
		} else {
			c.ep.cfg.log.Debug("shared-memory collectives off: cannot create the segment", "err", err)
			yes[0] = 0
		}
		for q := 1; q < n; q++ {
			if err := x.send(q, tagGroupName, name); err != nil {
				return false, err
			}
		}
		for q := 1; q < n; q++ {
			got := []byte{0}
			if err := x.recvWait(q, tagGroupAck, got); err != nil {
				return false, err
			}
			yes[0] &= got[0]
		}
		if g != nil {
			g.Unlink()
		}
		for q := 1; q < n; q++ {
			if err := x.send(q, tagGroupVerdict, yes); err != nil {
				return false, err
			}
		}
	} else {
		if err := x.recvWait(0, tagGroupName, name); err != nil {
			return false, err
		}
		if end := bytes.IndexByte(name, 0); end != 0 {
			if end < 0 {
				end = len(name)
			}
			if g, err = shm.AttachGroup(string(name[:end]), n, c.rank, areaFor(c)); err != nil {
				c.ep.cfg.log.Debug("shared-memory collectives off: cannot attach the segment", "err", err)
			}
		}
		if g == nil {
			yes[0] = 0
		}
		if err := x.send(0, tagGroupAck, yes); err != nil {
			return false, err
		}
		if err := x.recvWait(0, tagGroupVerdict, yes); err != nil {
			return false, err
		}
	}
	if yes[0] == 0 {
		return false, nil
	}
	c.ep.addGroup(c, g)
	return true, nil
}

// allreduceShm is the shared-memory allreduce described above.
func allreduceShm(x *exec, a *driver.Call) error {
	c := x.c
	if !c.ep.groupEnter() {
		return c.ep.stopErr()
	}
	defer c.ep.groupLeave()
	if c.groupState == groupUnset {
		ok, err := x.setupGroup()
		if err != nil {
			return err
		}
		if !ok {
			c.groupState = groupNo
			if a.Count*a.DType.Size() <= smallAllReduce {
				return allreduceRD(x, a)
			}
			return allreduceRing(x, a)
		}
		c.groupState = groupReady
	}
	g := c.group
	n, r := c.size, c.rank
	es := a.DType.Size()
	total := a.Count * es
	t, op := a.DType, a.Op
	first := true
	if total <= groupInline {
		// The payload rides in the mailbox beside the stamp.
		v := c.groupSeq + 1
		copy(g.Mail(r, v)[callBytes:], a.Send)
		if err := x.groupStep(g, &first, false); err != nil {
			return err
		}
		out := a.Recv[:total]
		in := func(q int) []byte { return g.Mail(q, v)[callBytes : callBytes+total] }
		reduce.Apply(t, op, out, in(0), in(1))
		for q := 2; q < n; q++ {
			reduce.Apply(t, op, out, out, in(q))
		}
		x.finishAvg(out)
		return nil
	}
	if total <= groupSmall {
		set := int(c.groupUse & 1)
		c.groupUse++
		copy(g.Area(set, r), a.Send)
		if err := x.groupStep(g, &first, false); err != nil {
			return err
		}
		out := a.Recv[:total]
		reduce.Apply(t, op, out, g.Area(set, 0)[:total], g.Area(set, 1)[:total])
		for q := 2; q < n; q++ {
			reduce.Apply(t, op, out, out, g.Area(set, q)[:total])
		}
		x.finishAvg(out)
		return nil
	}
	per := g.AreaBytes() / es // elements a round
	long := total >= groupLong
	for off := 0; off < a.Count; off += per {
		cnt := min(per, a.Count-off)
		set := int(c.groupUse & 1)
		c.groupUse++
		mine := g.Area(set, r)
		for q := range n {
			if q == r {
				continue
			}
			po, pl := part(cnt, n, q)
			copy(mine[po*es:(po+pl)*es], a.Send[(off+po)*es:(off+po+pl)*es])
		}
		if err := x.groupStep(g, &first, long); err != nil {
			return err
		}
		po, pl := part(cnt, n, r)
		lo, hi := (off+po)*es, (off+po+pl)*es
		out, own := a.Recv[lo:hi], a.Send[lo:hi]
		if r >= 2 && pl > 0 && &out[0] == &own[0] {
			// In place, the first reductions would overwrite this rank's
			// input before its turn in rank order.
			own = mine[po*es : (po+pl)*es]
			copy(own, out)
		}
		in := func(q int) []byte {
			if q == r {
				return own
			}
			return g.Area(set, q)[po*es : (po+pl)*es]
		}
		if pl > 0 {
			reduce.Apply(t, op, out, in(0), in(1))
			for q := 2; q < n; q++ {
				reduce.Apply(t, op, out, out, in(q))
			}
			x.finishAvg(out)
			copy(g.Area(set, n)[po*es:], out)
		}
		if err := x.groupStep(g, &first, long); err != nil {
			return err
		}
		res := g.Area(set, n)
		for q := range n {
			if q == r {
				continue
			}
			po, pl := part(cnt, n, q)
			copy(a.Recv[(off+po)*es:(off+po+pl)*es], res[po*es:(po+pl)*es])
		}
	}
	return nil
}

// groupStep raises this rank's stamp to its next step and waits until
// every rank has reached that step (long: in an operation of at least
// groupLong bytes). On the operation's first step it
// publishes this rank's call in its mailbox first and then checks the
// others': every rank compares every other's call before it returns, the
// agreement the frame-based algorithms reach through their data
// (agree.go), and a difference is a mismatch voted on as any other.
func (x *exec) groupStep(g *shm.Group, first *bool, long bool) error {
	c := x.c
	c.groupSeq++
	v := c.groupSeq
	if *first {
		putCall(g.Mail(c.rank, v), x.seq, x.d)
	}
	g.Raise(v)
	if err := x.groupWait(g, v, long); err != nil {
		return err
	}
	if *first {
		*first = false
		for q := range c.size {
			if q == c.rank {
				continue
			}
			seq, d := getCall(g.Mail(q, v))
			// The mailbox has no room for desc.outer; no hierarchical
			// collective runs an allreduce in a host (hier.go).
			d.outer = x.d.outer
			if seq != x.seq {
				// Its operations of this communicator are numbered
				// otherwise: its call of this one is not known.
				return c.ep.mismatchAt(c.id, x.seq, c.world[q], &x.d, nil,
					fmt.Sprintf("op #%d: rank %d called %s, rank %d met it in the shared segment from its op #%d (%s)", x.seq, c.ep.rank, x.d, c.world[q], seq, d))
			}
			if d != x.d {
				return c.mismatch(c.world[q], &curOp{seq: x.seq, d: x.d}, seq, d)
			}
		}
	}
	return nil
}

// callBytes is the room of a call's description at the start of a
// mailbox; a payload of up to groupInline bytes follows it.
const callBytes = 24

// groupWait waits until every rank's counter is at least v: polling for
// the spin time, then sleeping in slices. A rank whose counter stays put
// for the silence limit is blamed.
func (x *exec) groupWait(g *shm.Group, v uint64, long bool) error {
	c := x.c
	ep := c.ep
	behind := func() int {
		for q := range c.size {
			if !g.Reached(q, v) {
				return q
			}
		}
		return -1
	}
	// The rank that finds every stamp at v wakes the sleepers; the others
	// leave them be, since each wake-up costs a sleeper a system call and a
	// thread switch, on an oversubscribed host another rank's time.
	if behind() < 0 {
		g.Wake()
		return nil
	}
	// Poll without the clock first: most waits end within a few
	// microseconds, and reading the clock costs as much as a poll. With
	// more ranks than CPUs, poll giving the CPU away (sched_yield) in a
	// small operation, but sleep at once in a long one: there the rank
	// waited for needs this CPU for long, and ranks yielding to each other
	// while they wait for it took more time than the sleeps
	// (docs/BENCHMARKS.md).
	var spinEnd time.Time
	for spins := 1; !(ep.cfg.yield && long); spins++ {
		if behind() < 0 {
			return nil
		}
		if ep.cfg.yield {
			syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
		} else if spins%256 != 0 {
			continue
		}
		if err := x.groupTrouble(g, v); err != nil {
			return err
		}
		if ep.cfg.yield || spins%256 == 0 {
			now := time.Now()
			if spinEnd.IsZero() {
				spinEnd = now.Add(ep.cfg.spin)
			} else if now.After(spinEnd) {
				break
			}
		}
	}
	var done <-chan struct{}
	if x.ctx != nil {
		done = x.ctx.Done()
	}
	ready := func() bool { return behind() < 0 || ep.failure() != nil }
	last, lastAt := g.Progress(), time.Now()
	start, probed := lastAt, false
	for {
		g.Sleep(ready, pollSlice)
		q := behind()
		if q < 0 {
			return nil
		}
		if err := x.groupTrouble(g, v); err != nil {
			return err
		}
		select {
		case <-done:
			c.abortCtx(x.ctx, x.d.op)
			return ep.stopErr()
		default:
		}
		now := time.Now()
		if !probed && now.Sub(start) >= probeAfter {
			// A rank not there yet may wait in another operation: tell
			// it this one (agree.go).
			for q, w := range c.world {
				if q != c.rank && !g.Reached(q, v) {
					x.probe(ep.peers[w])
				}
			}
			probed = true
		}
		if p := g.Progress(); p != last {
			last, lastAt = p, now
		} else if t := ep.cfg.timeout; t > 0 && now.Sub(lastAt) >= t {
			ep.failWith(x.silent(c.world[q], t))
			return ep.stopErr()
		}
	}
}

// groupTrouble is why a wait for step v cannot end: the endpoint failed,
// or a rank not there yet closed its communicator (it said goodbye).
func (x *exec) groupTrouble(g *shm.Group, v uint64) error {
	ep := x.c.ep
	if ep.failure() != nil {
		return ep.stopErr()
	}
	for q, w := range x.c.world {
		if q == x.c.rank || g.Reached(q, v) {
			continue
		}
		p := ep.peers[w]
		p.mu.Lock()
		gone := p.gone
		p.mu.Unlock()
		if gone != nil {
			return gone
		}
	}
	return nil
}

// groupEnter counts an operation on a shared segment, unless the endpoint
// is closing; groupLeave ends it. close unmaps the segments once none
// runs.
func (ep *endpoint) groupEnter() bool {
	ep.groupOps.Add(1)
	if ep.closing.Load() {
		ep.groupOps.Add(-1)
		return false
	}
	return true
}

func (ep *endpoint) groupLeave() { ep.groupOps.Add(-1) }

// addGroup records c's new segment.
func (ep *endpoint) addGroup(c *conn, g *shm.Group) {
	c.group = g
	ep.mu.Lock()
	ep.groups = append(ep.groups, g)
	ep.mu.Unlock()
}

// stopErr is the endpoint's failure, for an operation that stops because
// of it.
func (ep *endpoint) stopErr() error {
	if f := ep.verdict(); f != nil {
		return f
	}
	return &driver.Failure{Kind: driver.ErrClosed, Culprit: -1, Origin: ep.rank, Msg: "communicator closed"}
}

// closeGroups unmaps the segments, after waiting (a little) for
// operations still on them to see the failure and leave.
func (ep *endpoint) closeGroups() {
	for i := 0; ep.groupOps.Load() != 0; i++ {
		if i == 1000 {
			ep.cfg.log.Warn(fmt.Sprintf("rank %d: a shared-memory collective still runs a second after close; its segment stays mapped", ep.rank))
			return
		}
		time.Sleep(time.Millisecond)
	}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	for _, g := range ep.groups {
		g.Close()
	}
	ep.groups = nil
}

func putCall(b []byte, seq uint64, d desc) {
	binary.LittleEndian.PutUint64(b[0:], seq)
	b[8], b[9], b[10], b[11] = byte(d.op), byte(d.dtype), byte(d.redop), d.algo
	binary.LittleEndian.PutUint32(b[12:], uint32(d.root))
	binary.LittleEndian.PutUint64(b[16:], d.count)
}

func getCall(b []byte) (uint64, desc) {
	return binary.LittleEndian.Uint64(b[0:]), desc{op: driver.Kind(b[8]), dtype: driver.DType(b[9]), redop: driver.Op(b[10]), algo: b[11],
		root: int32(binary.LittleEndian.Uint32(b[12:])), count: binary.LittleEndian.Uint64(b[16:])}
}
