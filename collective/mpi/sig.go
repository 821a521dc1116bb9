package mpi

import (
	"fmt"
	"sort"
	"strings"

	"github.com/weft-hpc/weft/collective/driver"
)

// The signature check: MPI does not compare the arguments of a collective
// across ranks, and calls that differ in count, type, reduction or root
// exchange garbage, crash the library or hang. Before each collective
// (WEFT_CHECK, params.go) the ranks agree on the call's signature: one
// MPI_Allreduce of a packet holding (h, -h), h a 62-bit hash of the
// signature, combined with max, tells every rank whether the largest hash
// equals the smallest; a small allreduce's data rides in the same packet
// (packet.go). Only when they differ do the ranks gather every signature,
// and each applies the same rule to name the rank to blame (blame, below)
// before the mismatched call runs.

// sig is what every rank of a collective must pass alike.
type sig struct {
	Kind   driver.Kind
	DType  driver.DType
	Op     driver.Op
	Root   int
	Count  int    // driver.Call's Count; 0 for AllToAllV, whose counts differ by rank; the rank's own block for GatherV and ScatterV
	Counts uint64 // fingerprint of the block counts of AllGatherV and ReduceScatterV, and of GatherV and ScatterV at the root; 0 elsewhere
	Seq    int64  // the call's number on its communicator, from 0 (not hashed: the k-th check of every rank is its k-th call)
}

// sigOf is the signature of collective a, the seq-th on its communicator.
func sigOf(a *driver.Call, seq int64) sig {
	s := sig{Kind: a.Kind, DType: a.DType, Op: a.Op, Root: a.Root, Count: a.Count, Seq: seq}
	switch a.Kind {
	case driver.AllGatherV, driver.ReduceScatterV:
		s.Counts = fingerprint(a.Counts)
	case driver.GatherV, driver.ScatterV:
		// Only the root has the counts (collective.Comm.GatherV): every
		// rank says its own block, the root the counts' fingerprint, and
		// agree compares them (blocks).
		own := a.Send
		if a.Kind == driver.ScatterV {
			own = a.Recv
		}
		s.Count = len(own) / a.DType.Size()
		if a.Counts != nil {
			s.Counts = fingerprint(a.Counts)
		}
	case driver.AllToAllV:
		s.Count = 0 // sendCounts and recvCounts differ by rank; MPI matches them pair by pair
	}
	return s
}

// fingerprint hashes a list of counts into a nonzero value.
func fingerprint(counts []int) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, n := range counts {
		h = mix(h ^ uint64(n))
	}
	return h | 1
}

// mix is splitmix64's finalizer: every input bit moves every output bit.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// rootedV reports whether k is GatherV or ScatterV, whose signatures
// differ by rank when they match (each rank's own block; the counts at the
// root only).
func rootedV(k driver.Kind) bool { return k == driver.GatherV || k == driver.ScatterV }

// key is what must be alike on every rank: the signature without its
// number, and without the blocks of GatherV and ScatterV (blocks checks
// those).
func (s sig) key() sig {
	s.Seq = 0
	if rootedV(s.Kind) {
		s.Count, s.Counts = 0, 0
	}
	return s
}

// hash is the value the ranks agree on: 62 bits, so that its negation
// fits an int64 and one MPI_MAX gives both the largest and the smallest.
func (s sig) hash() int64 {
	h := uint64(0xcbf29ce484222325)
	for _, v := range [...]uint64{uint64(s.Kind), uint64(s.DType), uint64(s.Op), uint64(s.Root), uint64(s.Count), s.Counts} {
		h = mix(h ^ v)
	}
	return int64(h >> 2)
}

// sigWords is the length of a signature as int64s, for MPI_Allgather.
const sigWords = 7

func (s sig) words() [sigWords]int64 {
	return [sigWords]int64{int64(s.Kind), int64(s.DType), int64(s.Op), int64(s.Root), int64(s.Count), int64(s.Counts), s.Seq}
}

func sigFrom(w []int64) sig {
	return sig{Kind: driver.Kind(w[0]), DType: driver.DType(w[1]), Op: driver.Op(w[2]), Root: int(w[3]),
		Count: int(w[4]), Counts: uint64(w[5]), Seq: w[6]}
}

// String describes the call as errors show it: "allreduce(1000 x float32,
// sum)", "reduce(8 x int64, max, root 2)".
func (s sig) String() string {
	switch s.Kind {
	case driver.Barrier:
		return "barrier()"
	case driver.AllToAllV:
		return fmt.Sprintf("alltoallv(%v)", s.DType)
	case driver.GatherV, driver.ScatterV:
		return fmt.Sprintf("%v(%v, root %d)", s.Kind, s.DType, s.Root)
	}
	b := fmt.Sprintf("%v(%d x %v", s.Kind, s.Count, s.DType)
	switch s.Kind {
	case driver.AllReduce, driver.ReduceScatter, driver.ReduceScatterV, driver.Reduce, driver.Scan, driver.Exscan:
		b += ", " + s.Op.String()
	}
	if s.Counts != 0 {
		b += fmt.Sprintf(", counts #%08x", uint32(s.Counts>>32))
	}
	switch s.Kind {
	case driver.Reduce, driver.Broadcast, driver.Gather, driver.GatherV, driver.Scatter, driver.ScatterV:
		b += fmt.Sprintf(", root %d", s.Root)
	}
	return b + ")"
}

// same reports whether two signatures describe calls that match.
func (s sig) same(t sig) bool { return s.key() == t.key() }

// mismatch is the failure every rank returns when the signatures sigs
// (one per rank of the communicator, whose world ranks are world) differ:
// the rank to blame by blame's rule, and every group's call.
func mismatch(sigs []sig, world []int) *driver.Failure {
	keys := make([]sig, len(sigs))
	for i, s := range sigs {
		keys[i] = s.key()
	}
	groups := blame(keys, world)
	parts := make([]string, len(groups))
	for k, g := range groups {
		parts[len(groups)-1-k] = fmt.Sprintf("%s called %v", rankList(g, world), sigs[g[0]])
	}
	culprit := world[groups[0][0]]
	return &driver.Failure{Kind: driver.ErrMismatch, Culprit: culprit, Origin: -1, Msg: fmt.Sprintf(
		"op #%d: %s; rank %d is the odd one out (the signature check, WEFT_CHECK: the call did not run)",
		sigs[0].Seq, strings.Join(parts, ", "), culprit)}
}

// blame groups the ranks of a communicator (indices of keys; world gives
// their world ranks) that hold the same key, the group to blame first: the
// smallest, and between groups of one size the one whose lowest world rank
// is higher, so that of two ranks the higher one is blamed. The rank to
// blame is the lowest of the first group. It is the rule of Weft's own
// transports (collective/engine's vote), on world ranks as there, so that
// both backends name the same rank; every rank computes it from the same
// keys. Each group lists its ranks in the order of their world ranks.
func blame[K comparable](keys []K, world []int) [][]int {
	index := map[K]int{}
	var groups [][]int
	for r, k := range keys {
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], r)
	}
	for _, g := range groups {
		sort.Slice(g, func(i, j int) bool { return world[g[i]] < world[g[j]] })
	}
	sort.SliceStable(groups, func(i, j int) bool {
		a, b := groups[i], groups[j]
		if len(a) != len(b) {
			return len(a) < len(b)
		}
		return world[a[0]] > world[b[0]]
	})
	return groups
}

// rankList names ranks of a communicator by their world ranks.
func rankList(rs []int, world []int) string {
	if len(rs) == 1 {
		return fmt.Sprintf("rank %d", world[rs[0]])
	}
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprint(world[r])
	}
	return "ranks " + strings.Join(s, ", ")
}

// blocks is the failure every rank returns when the ranks of a GatherV or
// ScatterV (sigs, alike but for the blocks) disagree with the root's
// counts, or nil when they do not. Each rank's signature holds its own
// block; counts is the root's, which every rank has once the root has
// broadcast them. The rank blamed is the sender of a block that does not
// fit, as on Weft's transports: for GatherV the lowest world rank whose
// block is not the root's count, for ScatterV the root.
func blocks(sigs []sig, counts []int, world []int) *driver.Failure {
	s := sigs[0]
	buf := "send"
	if s.Kind == driver.ScatterV {
		buf = "recv"
	}
	culprit := -1
	var wrong []string
	for r, t := range sigs {
		if t.Count == counts[r] {
			continue
		}
		wrong = append(wrong, fmt.Sprintf("rank %d's %s holds %d", world[r], buf, t.Count))
		if culprit < 0 || world[r] < culprit {
			culprit = world[r]
		}
	}
	if len(wrong) == 0 {
		return nil
	}
	sender := "it sends a block the root does not expect"
	if s.Kind == driver.ScatterV {
		culprit, sender = world[s.Root], "the root sends a block that does not fit"
	}
	return &driver.Failure{Kind: driver.ErrMismatch, Culprit: culprit, Origin: -1, Msg: fmt.Sprintf(
		"op #%d: %v: the root's counts are %v, but %s; rank %d is the odd one out: %s (the signature check, WEFT_CHECK: the call did not run)",
		s.Seq, s, counts, strings.Join(wrong, ", "), culprit, sender)}
}
