package shard

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/gnn/sample"
)

// reqHeader is the number of int64s that open each request block: seed,
// epoch, batch, layer, fanout.
const reqHeader = 5

// CommStats counts one component's traffic to and from other ranks.
type CommStats struct {
	Rounds    int64 // AllToAllV exchanges (each with its AllToAll of counts)
	Requested int64 // ids this rank asked other ranks for
	Served    int64 // ids this rank answered for other ranks
	BytesSent int64 // payload bytes sent to other ranks (counts excluded)
	BytesRecv int64 // payload bytes received from other ranks
}

// Bytes is BytesSent + BytesRecv.
func (c CommStats) Bytes() int64 { return c.BytesSent + c.BytesRecv }

// Sub returns c - d.
func (c CommStats) Sub(d CommStats) CommStats {
	return CommStats{c.Rounds - d.Rounds, c.Requested - d.Requested, c.Served - d.Served, c.BytesSent - d.BytesSent, c.BytesRecv - d.BytesRecv}
}

type commCounters struct{ rounds, requested, served, sent, recv atomic.Int64 }

func (c *commCounters) snapshot() CommStats {
	return CommStats{c.rounds.Load(), c.requested.Load(), c.served.Load(), c.sent.Load(), c.recv.Load()}
}

// checkComm matches a communicator with a shard: one rank per part, rank
// r holding part r. A nil communicator is allowed for a one-part shard.
func checkComm(s *Shard, c *collective.Comm) error {
	if c == nil {
		if s.book.NumParts() != 1 {
			return fmt.Errorf("shard: a shard of a %d-part partition needs a communicator", s.book.NumParts())
		}
		return nil
	}
	if c.Size() != s.book.NumParts() || c.Rank() != s.part {
		return fmt.Errorf("shard: rank %d of %d cannot serve part %d of %d (one rank per part, rank r holds part r)",
			c.Rank(), c.Size(), s.part, s.book.NumParts())
	}
	return nil
}

// Source is the partition-aware distributed neighbour source (see the
// package doc). It implements sample.Source; its calls are collective and
// must not overlap.
type Source struct {
	shard *Shard
	comm  *collective.Comm
	n     commCounters
}

var _ sample.Source = (*Source)(nil)

// NewSource returns a Source over shard whose peers are reached through
// comm (nil for a one-part shard).
func NewSource(shard *Shard, comm *collective.Comm) (*Source, error) {
	if err := checkComm(shard, comm); err != nil {
		return nil, err
	}
	return &Source{shard: shard, comm: comm}, nil
}

// Stats returns the traffic counters since the Source was made.
func (s *Source) Stats() CommStats { return s.n.snapshot() }

// sampleLocal appends the sampled neighbours of local node i.
func (s *Source) sampleLocal(key sample.Key, v, i int64, fanout int, pos, out []int64) ([]int64, []int64) {
	pos = sample.Positions(key, v, s.shard.Degree(i), fanout, pos)
	for _, p := range pos {
		out = append(out, s.shard.neighbor(i, p))
	}
	return pos, out
}

// SampleNeighbors implements sample.Source. It is collective over the
// Source's communicator: every rank calls it, possibly with no nodes.
func (s *Source) SampleNeighbors(ctx context.Context, nodes []int64, fanout int, key sample.Key, f *sample.Frontier) error {
	sh := s.shard
	me, P := sh.part, sh.book.NumParts()
	// Per node: where its neighbours land. Local nodes are drawn now; for
	// remote ones remember (owner, position in the owner's request).
	type ref struct{ owner, at int32 }
	refs := make([]ref, len(nodes))
	local := make([][]int64, len(nodes))
	reqs := make([][]int64, P)
	var pos, flat []int64
	for i, v := range nodes {
		if v < 0 || v >= sh.NumNodes() {
			return fmt.Errorf("shard: node %d outside [0, %d)", v, sh.NumNodes())
		}
		p, l := sh.book.Locate(v)
		if p == me {
			start := len(flat)
			pos, flat = s.sampleLocal(key, v, l, fanout, pos, flat)
			local[i] = flat[start:len(flat):len(flat)]
			refs[i] = ref{-1, 0}
			continue
		}
		if reqs[p] == nil {
			reqs[p] = []int64{int64(key.Seed), key.Epoch, key.Batch, int64(key.Layer), int64(fanout)}
		}
		refs[i] = ref{int32(p), int32(len(reqs[p]) - reqHeader)}
		reqs[p] = append(reqs[p], v)
	}
	var replies [][]int64 // replies[p]: counts of each requested node, then neighbours
	if P > 1 {
		var err error
		replies, err = s.exchange(ctx, reqs)
		if err != nil {
			return err
		}
	}
	// Offsets of each requested node's neighbours inside its reply.
	starts := make([][]int64, P)
	for p := range P {
		if len(reqs[p]) == 0 {
			continue
		}
		m := len(reqs[p]) - reqHeader
		rep := replies[p]
		if len(rep) < m {
			return fmt.Errorf("shard: rank %d answered %d values for %d nodes", p, len(rep), m)
		}
		st := make([]int64, m+1)
		st[0] = int64(m)
		for j := range m {
			st[j+1] = st[j] + rep[j]
		}
		if st[m] != int64(len(rep)) {
			return fmt.Errorf("shard: rank %d sent a malformed reply (%d values, counts say %d)", p, len(rep), st[m])
		}
		starts[p] = st
	}
	f.Reset(len(nodes))
	for i := range nodes {
		r := refs[i]
		if r.owner < 0 {
			f.Nbrs = append(f.Nbrs, local[i]...)
		} else {
			st := starts[r.owner]
			f.Nbrs = append(f.Nbrs, replies[r.owner][st[r.at]:st[r.at+1]]...)
		}
		f.Indptr[i+1] = int64(len(f.Nbrs))
	}
	return nil
}

// exchange sends every request block to its owner, answers the blocks
// other ranks sent here, and returns the replies to this rank's requests.
func (s *Source) exchange(ctx context.Context, reqs [][]int64) ([][]int64, error) {
	in, err := allToAllV(ctx, s.comm, reqs, &s.n)
	if err != nil {
		return nil, fmt.Errorf("shard: sampling requests: %w", err)
	}
	out := make([][]int64, len(in))
	var pos []int64
	for p, blk := range in {
		if len(blk) == 0 {
			continue
		}
		if len(blk) < reqHeader {
			return nil, fmt.Errorf("shard: rank %d sent a %d-value sampling request", p, len(blk))
		}
		key := sample.Key{Seed: uint64(blk[0]), Epoch: blk[1], Batch: blk[2], Layer: int(blk[3])}
		fanout := int(blk[4])
		ids := blk[reqHeader:]
		rep := make([]int64, len(ids), len(ids)*(1+max(fanout, 4)))
		for j, v := range ids {
			l, ok := s.shard.Local(v)
			if !ok {
				return nil, fmt.Errorf("shard: rank %d asked rank %d for node %d, which it does not own (partition books differ)", p, s.shard.part, v)
			}
			n0 := len(rep)
			pos, rep = s.sampleLocal(key, v, l, fanout, pos, rep)
			rep[j] = int64(len(rep) - n0)
		}
		s.n.served.Add(int64(len(ids)))
		out[p] = rep
	}
	got, err := allToAllV(ctx, s.comm, out, &s.n)
	if err != nil {
		return nil, fmt.Errorf("shard: sampling replies: %w", err)
	}
	for _, r := range reqs {
		if len(r) > 0 {
			s.n.requested.Add(int64(len(r) - reqHeader))
		}
	}
	return got, nil
}

// allToAllV sends blocks[p] to rank p (the block to itself must be empty)
// after an AllToAll of the counts, and returns the blocks received.
func allToAllV[T int64 | float32](ctx context.Context, c *collective.Comm, blocks [][]T, n *commCounters) ([][]T, error) {
	P := c.Size()
	me := c.Rank()
	if len(blocks[me]) != 0 {
		return nil, errors.New("shard: internal error: block addressed to self")
	}
	sc := make([]int64, P)
	total := 0
	for p, b := range blocks {
		sc[p] = int64(len(b))
		total += len(b)
	}
	rc := make([]int64, P)
	if err := c.AllToAll(ctx, collective.Buf(sc), collective.Buf(rc)); err != nil {
		return nil, err
	}
	send := make([]T, 0, total)
	sendCounts := make([]int, P)
	recvCounts := make([]int, P)
	rtotal := 0
	for p := range P {
		send = append(send, blocks[p]...)
		sendCounts[p] = len(blocks[p])
		if rc[p] < 0 || rc[p] > 1<<40 {
			return nil, fmt.Errorf("shard: rank %d announced %d values", p, rc[p])
		}
		recvCounts[p] = int(rc[p])
		rtotal += int(rc[p])
	}
	recv := make([]T, rtotal)
	if err := c.AllToAllV(ctx, collective.Buf(send), sendCounts, collective.Buf(recv), recvCounts); err != nil {
		return nil, err
	}
	var zero T
	size := int64(sizeOf(zero))
	n.rounds.Add(1)
	n.sent.Add(int64(total) * size)
	n.recv.Add(int64(rtotal) * size)
	out := make([][]T, P)
	off := 0
	for p := range P {
		out[p] = recv[off : off+recvCounts[p] : off+recvCounts[p]]
		off += recvCounts[p]
	}
	return out, nil
}

func sizeOf(v any) int {
	switch v.(type) {
	case float32:
		return 4
	default:
		return 8
	}
}
