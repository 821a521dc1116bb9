package engine

import (
	"fmt"

	"github.com/weft-hpc/weft/collective/driver"
)

// Hierarchical collectives, for communicators whose ranks span several
// hosts with several ranks on at least one: the work inside each host goes
// over shared memory, and across hosts either every rank talks to the
// ranks of the same index on the other hosts (its rail: when every host
// has the same number of ranks, as mpirun and Slurm place them), or only
// one rank per host (its leader, the lowest rank there) does:
//
//	allreduce, rails:   reduce-scatter in each host (local rank i keeps part
//	                    i of the buffer), allreduce of part i along rail i,
//	                    allgather in each host
//	allreduce, leaders: reduce to the leader in each host, allreduce among
//	                    leaders, broadcast in each host
//	broadcast:          broadcast in the root's host, among leaders, in the
//	                    other hosts
//	allgather, rails:   allgather along each rail, allgather of the rails'
//	                    blocks in each host, reorder to rank order
//	allgather, leaders: allgather in each host, allgatherv of the host blocks
//	                    among leaders, broadcast in each host, reorder
//
// With rails, each host sends and receives what it does with leaders, but
// over as many connections as it has ranks, driven by as many processes,
// and no rank carries the whole buffer inside its host (NCCL's rings and
// trees run one per NIC, and Open MPI's han component splits the same way).
//
// The inner steps are ordinary operations on private communicators (this
// rank's host, its rail, the leaders) that every rank derives from the
// topology without talking; they run inside the outer operation, on its
// goroutine, in the same order on every rank.

// topology is how a communicator's ranks sit on hosts.
type topology struct {
	spans   bool    // several hosts, and several ranks on one of them
	hostOf  []int   // host index of each rank (hosts numbered by first rank)
	members [][]int // the ranks of each host, in rank order
	local   *conn   // this rank's host
	leaders *conn   // the leaders; nil off leaders
	rail    *conn   // the ranks of this rank's index on every host; nil unless every host has as many ranks
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
			// The conns of the steps, whose parent is c: a mismatch in
			// one is voted on as c's operation (mismatchAt).
			t.local = c.sub(fmt.Sprintf("host/%v", t.members[t.myHost]), t.members[t.myHost], c)
			leaders := make([]int, len(t.members))
			for i, m := range t.members {
				leaders[i] = m[0]
			}
			if t.members[t.myHost][0] == c.rank {
				t.leaders = c.sub(fmt.Sprintf("leaders/%v", leaders), leaders, c)
			}
			uniform := true
			for _, m := range t.members {
				uniform = uniform && len(m) == len(t.members[0])
			}
			if uniform {
				i := indexOf(t.members[t.myHost], c.rank)
				rail := make([]int, len(t.members))
				for h, m := range t.members {
					rail[h] = m[i]
				}
				t.rail = c.sub(fmt.Sprintf("rail/%v", rail), rail, c)
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
	var d desc
	d.setCall(a)
	d.algo = alg.id
	d.outer = outerSig(x.d)
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
	if t.rail != nil && a.Count >= t.local.size {
		return allreduceRails(x, a, op)
	}
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

// allreduceRails: local rank i reduces part i of the buffer in its host,
// allreduces it with the ranks of index i on the other hosts, and the
// host's ranks gather the parts.
func allreduceRails(x *exec, a *driver.Call, op driver.Op) error {
	t := x.c.topo()
	n, i := t.local.size, t.local.rank
	es := a.DType.Size()
	counts := make([]int, n)
	for j := range n {
		_, counts[j] = part(a.Count, n, j)
	}
	off, size := part(a.Count, n, i)
	mine := a.Recv[off*es : (off+size)*es]
	if err := x.nested(t.local, &driver.Call{Kind: driver.ReduceScatter, Send: a.Send, Recv: mine, DType: a.DType, Op: op, Count: counts[0], Counts: counts}); err != nil {
		return err
	}
	if err := x.nested(t.rail, &driver.Call{Kind: driver.AllReduce, Send: mine, Recv: mine, DType: a.DType, Op: op, Count: size}); err != nil {
		return err
	}
	if err := x.nested(t.local, &driver.Call{Kind: driver.AllGatherV, Send: mine, Recv: a.Recv, DType: a.DType, Count: a.Count, Counts: counts}); err != nil {
		return err
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
		if err := x.nested(t.local, &driver.Call{Kind: driver.Broadcast, Send: a.Recv, Recv: a.Recv, DType: a.DType, Count: a.Count}); err != nil {
			return err
		}
	}
	// The ranks of the root's host heard from no other host, and the
	// others from no rank outside their host but the leaders.
	return x.agree()
}

func allgatherHier(x *exec, a *driver.Call) error {
	t := x.c.topo()
	es := a.DType.Size()
	blk := a.Count * es
	if t.rail != nil {
		return allgatherRails(x, a)
	}
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

// allgatherRails: each rank gathers the blocks of its rail, the host's
// ranks gather their rails' blocks (grouped by local index, then host),
// and each block is copied to its rank's place.
func allgatherRails(x *exec, a *driver.Call) error {
	t := x.c.topo()
	blk := a.Count * a.DType.Size()
	hosts := len(t.members)
	rail := x.scratchBuf(1, hosts*blk)
	if err := x.nested(t.rail, &driver.Call{Kind: driver.AllGather, Send: a.Send, Recv: rail, DType: a.DType, Count: a.Count}); err != nil {
		return err
	}
	grouped := x.scratchBuf(0, x.c.size*blk)
	if err := x.nested(t.local, &driver.Call{Kind: driver.AllGather, Send: rail, Recv: grouped, DType: a.DType, Count: hosts * a.Count}); err != nil {
		return err
	}
	for i := range t.local.size {
		for h, m := range t.members {
			src := (i*hosts + h) * blk
			copy(a.Recv[m[i]*blk:(m[i]+1)*blk], grouped[src:src+blk])
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
