package engine

import (
	"fmt"

	"github.com/weft-hpc/weft/collective/driver"
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
	local   *conn   // this rank's host
	leaders *conn   // the leaders; nil off leaders
	myHost  int
}

func spansHosts(c *conn, a *driver.Call) bool { return c.topo().spans }

// topo computes the topology once.
func (c *conn) topo() *topology {
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
			t.local = c.sub(fmt.Sprintf("host/%v", t.members[t.myHost]), t.members[t.myHost])
			leaders := make([]int, len(t.members))
			for i, m := range t.members {
				leaders[i] = m[0]
			}
			if t.members[t.myHost][0] == c.rank {
				t.leaders = c.sub(fmt.Sprintf("leaders/%v", leaders), leaders)
			}
		}
		c.topology = t
	})
	return c.topology
}

// nested runs a on sub inside the running operation x, on x's goroutine,
// as sub's next operation.
func (x *exec) nested(sub *conn, a *driver.Call) error {
	alg := sub.ep.pick(a.Kind, sub, a)
	d := callDesc(a)
	d.algo = alg.id
	return sub.execute(x.ctx, d, alg, a)
}

// sumOf is the operation the inner steps use: Avg divides once, at the end.
func sumOf(op driver.Op) driver.Op {
	if op == driver.Avg {
		return driver.Sum
	}
	return op
}

func allreduceHier(x *exec, a *driver.Call) error {
	t := x.c.topo()
	op := sumOf(a.Op)
	leader := t.leaders != nil
	if t.local.size > 1 {
		var recv []byte
		if leader {
			recv = a.Recv
		}
		if err := x.nested(t.local, &driver.Call{Kind: driver.Reduce, Send: a.Send, Recv: recv, DType: a.DType, Op: op, Count: a.Count}); err != nil {
			return err
		}
	} else if len(a.Send) > 0 && &a.Recv[0] != &a.Send[0] {
		copy(a.Recv, a.Send)
	}
	if leader {
		if err := x.nested(t.leaders, &driver.Call{Kind: driver.AllReduce, Send: a.Recv, Recv: a.Recv, DType: a.DType, Op: op, Count: a.Count}); err != nil {
			return err
		}
	}
	if t.local.size > 1 {
		if err := x.nested(t.local, &driver.Call{Kind: driver.Broadcast, Send: a.Recv, Recv: a.Recv, DType: a.DType, Count: a.Count}); err != nil {
			return err
		}
	}
	x.finishAvg(a.Recv)
	return nil
}

func broadcastHier(x *exec, a *driver.Call) error {
	t := x.c.topo()
	rootHost := t.hostOf[a.Root]
	if t.myHost == rootHost && t.local.size > 1 {
		lr := indexOf(t.members[rootHost], a.Root)
		if err := x.nested(t.local, &driver.Call{Kind: driver.Broadcast, Send: a.Recv, Recv: a.Recv, DType: a.DType, Root: lr, Count: a.Count}); err != nil {
			return err
		}
	}
	if t.leaders != nil {
		if err := x.nested(t.leaders, &driver.Call{Kind: driver.Broadcast, Send: a.Recv, Recv: a.Recv, DType: a.DType, Root: rootHost, Count: a.Count}); err != nil {
			return err
		}
	}
	if t.myHost != rootHost && t.local.size > 1 {
		return x.nested(t.local, &driver.Call{Kind: driver.Broadcast, Send: a.Recv, Recv: a.Recv, DType: a.DType, Count: a.Count})
	}
	return nil
}

func allgatherHier(x *exec, a *driver.Call) error {
	t := x.c.topo()
	es := a.DType.Size()
	blk := a.Count * es
	mine := t.members[t.myHost]
	host := x.scratchBuf(1, len(mine)*blk)
	if err := x.nested(t.local, &driver.Call{Kind: driver.AllGather, Send: a.Send, Recv: host, DType: a.DType, Count: a.Count}); err != nil {
		return err
	}
	// All blocks, grouped by host.
	grouped := x.scratchBuf(0, x.c.size*blk)
	if t.leaders != nil {
		counts := make([]int, len(t.members))
		for i, m := range t.members {
			counts[i] = len(m) * a.Count
		}
		if err := x.nested(t.leaders, &driver.Call{Kind: driver.AllGatherV, Send: host, Recv: grouped, DType: a.DType, Counts: counts, Count: x.c.size * a.Count}); err != nil {
			return err
		}
	}
	if t.local.size > 1 {
		if err := x.nested(t.local, &driver.Call{Kind: driver.Broadcast, Send: grouped, Recv: grouped, DType: a.DType, Count: x.c.size * a.Count}); err != nil {
			return err
		}
	}
	off := 0
	for _, m := range t.members {
		for _, r := range m {
			copy(a.Recv[r*blk:(r+1)*blk], grouped[off:off+blk])
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
