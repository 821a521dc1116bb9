package collective

import (
	"fmt"
	"hash/fnv"
)

// Hierarchical collectives, for communicators whose ranks span several
// hosts with several ranks on at least one: the work inside each host goes
// over shared memory, and only one rank per host (its leader, the lowest
// rank there) talks across hosts:
//
//	allreduce: reduce to the leader in each host, allreduce among leaders,
//	           broadcast in each host
//	broadcast: broadcast in the root's host, among leaders, in the other hosts
//	allgather: allgather in each host, allgatherv of the host blocks among
//	           leaders, broadcast in each host, reorder to rank order
//
// The inner steps are ordinary operations on two private communicators
// (this rank's host, and the leaders) that every rank derives from the
// topology without talking; they run inside the outer operation, on its
// goroutine, in the same order on every rank.

// topology is how a communicator's ranks sit on hosts.
type topology struct {
	spans   bool    // several hosts, and several ranks on one of them
	hostOf  []int   // host index of each rank (hosts numbered by first rank)
	members [][]int // the ranks of each host, in rank order
	local   *Comm   // this rank's host
	leaders *Comm   // the leaders; nil off leaders
	myHost  int
}

func spansHosts(c *Comm, a *args) bool { return c.topo().spans }

// topo computes the topology once.
func (c *Comm) topo() *topology {
	c.topoOnce.Do(func() {
		t := &topology{hostOf: make([]int, c.size)}
		index := map[int]int{}
		for r := range c.size {
			h := c.ep.hostOf(c.world[r])
			i, ok := index[h]
			if !ok {
				i = len(t.members)
				index[h] = i
				t.members = append(t.members, nil)
			}
			t.hostOf[r] = i
			t.members[i] = append(t.members[i], r)
		}
		t.myHost = t.hostOf[c.rank]
		for _, m := range t.members {
			t.spans = t.spans || len(m) > 1
		}
		t.spans = t.spans && len(t.members) > 1
		if t.spans {
			t.local = c.derived("host", t.members[t.myHost])
			leaders := make([]int, len(t.members))
			for i, m := range t.members {
				leaders[i] = m[0]
			}
			if t.members[t.myHost][0] == c.rank {
				t.leaders = c.derived("leaders", leaders)
			}
		}
		c.topology = t
	})
	return c.topology
}

// derived makes the private communicator of the given ranks of c (which
// include this rank), with an id every member computes alike.
func (c *Comm) derived(kind string, ranks []int) *Comm {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%v", c.id, kind, ranks)
	id := h.Sum64()
	world := make([]int, len(ranks))
	me := -1
	for i, r := range ranks {
		world[i] = c.world[r]
		if r == c.rank {
			me = i
		}
	}
	return newComm(c.ep, id, me, world)
}

// nested runs op on sub inside the running operation x, on x's goroutine.
func (x *exec) nested(sub *Comm, op opKind, a *args) error {
	d := desc{op: op, dtype: a.dt, redop: a.op, root: int32(a.root), count: uint64(a.count)}
	if op == opBroadcast || op == opAllGatherV {
		d.redop = 0
	}
	alg := sub.ep.pick(op, sub, a)
	d.algo = alg.id
	sub.mu.Lock()
	seq := sub.seq
	sub.seq++
	sub.mu.Unlock()
	sub.cur.Store(&curOp{seq: seq, d: d})
	if f := sub.ep.scanEarly(sub, seq, d); f != nil {
		return f
	}
	return alg.run(&exec{c: sub, ctx: x.ctx, seq: seq, d: d, chunk: x.chunk}, a)
}

// sumOf is the operation the inner steps use: Avg divides once, at the end.
func sumOf(op Op) Op {
	if op == Avg {
		return Sum
	}
	return op
}

func allreduceHier(x *exec, a *args) error {
	t := x.c.topo()
	op := sumOf(a.op)
	leader := t.leaders != nil
	if t.local.size > 1 {
		var recv []byte
		if leader {
			recv = a.recv
		}
		if err := x.nested(t.local, opReduce, &args{send: a.send, recv: recv, dt: a.dt, op: op, count: a.count}); err != nil {
			return err
		}
	} else if len(a.send) > 0 && &a.recv[0] != &a.send[0] {
		copy(a.recv, a.send)
	}
	if leader {
		if err := x.nested(t.leaders, opAllReduce, &args{send: a.recv, recv: a.recv, dt: a.dt, op: op, count: a.count}); err != nil {
			return err
		}
	}
	if t.local.size > 1 {
		if err := x.nested(t.local, opBroadcast, &args{send: a.recv, recv: a.recv, dt: a.dt, count: a.count}); err != nil {
			return err
		}
	}
	x.finishAvg(a.recv)
	return nil
}

func broadcastHier(x *exec, a *args) error {
	t := x.c.topo()
	rootHost := t.hostOf[a.root]
	if t.myHost == rootHost && t.local.size > 1 {
		lr := indexOf(t.members[rootHost], a.root)
		if err := x.nested(t.local, opBroadcast, &args{send: a.recv, recv: a.recv, dt: a.dt, root: lr, count: a.count}); err != nil {
			return err
		}
	}
	if t.leaders != nil {
		if err := x.nested(t.leaders, opBroadcast, &args{send: a.recv, recv: a.recv, dt: a.dt, root: rootHost, count: a.count}); err != nil {
			return err
		}
	}
	if t.myHost != rootHost && t.local.size > 1 {
		return x.nested(t.local, opBroadcast, &args{send: a.recv, recv: a.recv, dt: a.dt, count: a.count})
	}
	return nil
}

func allgatherHier(x *exec, a *args) error {
	t := x.c.topo()
	es := a.dt.Size()
	blk := a.count * es
	mine := t.members[t.myHost]
	host := x.scratchBuf(1, len(mine)*blk)
	if err := x.nested(t.local, opAllGather, &args{send: a.send, recv: host, dt: a.dt, count: a.count}); err != nil {
		return err
	}
	// All blocks, grouped by host.
	grouped := x.scratchBuf(0, x.c.size*blk)
	if t.leaders != nil {
		counts := make([]int, len(t.members))
		for i, m := range t.members {
			counts[i] = len(m) * a.count
		}
		if err := x.nested(t.leaders, opAllGatherV, &args{send: host, recv: grouped, dt: a.dt, counts: counts, count: x.c.size * a.count}); err != nil {
			return err
		}
	}
	if t.local.size > 1 {
		if err := x.nested(t.local, opBroadcast, &args{send: grouped, recv: grouped, dt: a.dt, count: x.c.size * a.count}); err != nil {
			return err
		}
	}
	off := 0
	for _, m := range t.members {
		for _, r := range m {
			copy(a.recv[r*blk:(r+1)*blk], grouped[off:off+blk])
			off += blk
		}
	}
	return nil
}

func indexOf(s []int, v int) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// hostOf is the host index of a world rank (ranks with the same host name
// and boot id share one); an endpoint without a host map is one host.
func (ep *endpoint) hostOf(worldRank int) int {
	if ep.hosts == nil {
		return 0
	}
	return ep.hosts[worldRank]
}
