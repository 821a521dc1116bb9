package engine

import (
	"fmt"
	"strings"

	"github.com/weft-hpc/weft/collective/driver"
)

// An algorithm is one way to run a collective. Each operation has a list of
// algorithms in order of preference; the first that can run and prefers the
// (ranks, arguments) runs, and the last one of each list takes everything.
// WEFT_ALGO (or WithAlgorithm) forces a choice wherever the forced algorithm
// can run. Every rank must pick the same one: the choice travels in each
// frame and a difference is reported as a mismatch. docs/ALGORITHMS.md gives
// each algorithm's cost.
type algorithm struct {
	name   string
	id     uint8
	op     driver.Kind
	can    func(c *conn, a *driver.Call) bool // structural: can it run at all (nil: always)
	prefer func(c *conn, a *driver.Call) bool // default choice: is it the best here (nil: always)
	run    func(x *exec, a *driver.Call) error
}

// Thresholds of the default choice, in bytes per rank's buffer. Measured on
// the project's machines; see docs/BENCHMARKS.md.
const (
	smallAllReduce = 64 << 10 // recursive doubling below; above, Rabenseifner's on 4, 8, 16... ranks, else the ring
	smallBroadcast = 64 << 10 // binomial tree below, pipelined chain above
	smallReduce    = 64 << 10 // binomial tree below, pipelined chain above
	smallGather    = 16 << 10 // recursive doubling (power-of-two ranks) below, ring above
)

// algorithms is filled by init: the algorithms refer back to it (the
// hierarchical ones run inner operations), which a variable initializer
// cannot.
var algorithms map[driver.Kind][]*algorithm

func algorithmTable() map[driver.Kind][]*algorithm {
	return map[driver.Kind][]*algorithm{
		driver.AllReduce: {
			{name: "hier", id: 16, can: canBoth(spansHosts, commutesOnly), run: allreduceHier},
			{name: "shm", id: 25, can: canBoth(shmGroupRuns, commutesOnly), run: allreduceShm},
			{name: "rd", id: 1, prefer: func(c *conn, a *driver.Call) bool {
				return a.Count*a.DType.Size() <= smallAllReduce || !a.Op.Commutative() && !rhFits(c, a)
			}, run: allreduceRD},
			{name: "rabenseifner", id: 26, can: func(c *conn, a *driver.Call) bool { return isPow2(c.size) && a.Count >= c.size }, prefer: rhFits, run: allreduceRH},
			{name: "ring", id: 2, can: commutesOnly, run: allreduceRing},
		},
		driver.Broadcast: {
			{name: "hier", id: 17, can: spansHosts, run: broadcastHier},
			{name: "tree", id: 3, prefer: func(c *conn, a *driver.Call) bool { return a.Count*a.DType.Size() <= smallBroadcast }, run: broadcastTree},
			{name: "chain", id: 4, run: broadcastChain},
		},
		driver.Reduce: {
			{name: "ordered", id: 27, can: func(c *conn, a *driver.Call) bool { return !a.Op.Commutative() }, run: reduceOrdered},
			{name: "tree", id: 5, can: commutesOnly, prefer: func(c *conn, a *driver.Call) bool { return a.Count*a.DType.Size() <= smallReduce }, run: reduceTree},
			{name: "chain", id: 6, can: commutesOnly, run: reduceChain},
		},
		driver.AllGather: {
			{name: "hier", id: 18, can: spansHosts, run: allgatherHier},
			{name: "rd", id: 7, can: func(c *conn, a *driver.Call) bool { return isPow2(c.size) }, prefer: func(c *conn, a *driver.Call) bool { return a.Count*a.DType.Size() <= smallGather }, run: allgatherRD},
			{name: "ring", id: 8, run: allgatherRing},
		},
		driver.AllGatherV: {
			{name: "ring", id: 9, run: allgatherRing},
		},
		driver.ReduceScatter: {
			{name: "rd", id: 10, prefer: func(c *conn, a *driver.Call) bool {
				return a.Count*c.size*a.DType.Size() <= smallAllReduce || !a.Op.Commutative()
			}, run: reducescatterRD},
			{name: "ring", id: 11, can: commutesOnly, run: reducescatterRing},
		},
		driver.ReduceScatterV: {
			{name: "rd", id: 40, prefer: func(c *conn, a *driver.Call) bool {
				return a.Count*a.DType.Size() <= smallAllReduce || !a.Op.Commutative()
			}, run: reducescatterRD},
			{name: "ring", id: 41, can: commutesOnly, run: reducescatterRing},
		},
		driver.AllToAll: {
			{name: "pairwise", id: 12, run: alltoallPairwise},
		},
		driver.AllToAllV: {
			{name: "pairwise", id: 13, run: alltoallPairwise},
		},
		driver.Barrier: {
			{name: "dissemination", id: 14, run: barrierDissemination},
		},
		driver.Split: {
			{name: "ring", id: 15, run: allgatherRing},
		},
		driver.Gather:   {{name: "linear", id: 19, run: gatherLinear}},
		driver.GatherV:  {{name: "linear", id: 20, run: gatherLinear}},
		driver.Scatter:  {{name: "linear", id: 21, run: scatterLinear}},
		driver.ScatterV: {{name: "linear", id: 22, run: scatterLinear}},
		driver.Scan:     {{name: "chain", id: 23, run: scanChain}},
		driver.Exscan:   {{name: "chain", id: 24, run: scanChain}},
	}
}

var algoIDs [256]*algorithm

// byKind is algorithms indexed by the operation, for pick: an array
// lookup, where a map of a one-byte key hashes it on every call.
var byKind [256][]*algorithm

func init() {
	algorithms = algorithmTable()
	for op, list := range algorithms {
		byKind[op] = list
		for _, a := range list {
			if algoIDs[a.id] != nil {
				panic(fmt.Sprintf("engine: algorithm id %d used twice", a.id))
			}
			a.op = op
			algoIDs[a.id] = a
		}
	}
}

func algoByID(id uint8) *algorithm { return algoIDs[id] }

// rhFits: Rabenseifner's algorithm is the choice for large buffers (it
// combines in rank order, so it serves reductions that do not commute
// too); recursive doubling takes those it cannot.
func rhFits(c *conn, a *driver.Call) bool { return isPow2(c.size) && a.Count >= c.size && c.size >= 4 }

// canBoth is the can of an algorithm with two conditions.
func canBoth(f, g func(c *conn, a *driver.Call) bool) func(c *conn, a *driver.Call) bool {
	return func(c *conn, a *driver.Call) bool { return f(c, a) && g(c, a) }
}

// pick chooses the algorithm for an operation.
func (ep *endpoint) pick(op driver.Kind, c *conn, a *driver.Call) *algorithm {
	list := byKind[op]
	if name, ok := ep.cfg.algo[op]; ok {
		for _, alg := range list {
			if alg.name == name && (alg.can == nil || alg.can(c, a)) {
				return alg
			}
		}
	}
	for _, alg := range list {
		if (alg.can == nil || alg.can(c, a)) && (alg.prefer == nil || alg.prefer(c, a)) {
			return alg
		}
	}
	return list[len(list)-1]
}

// parseAlgo reads WEFT_ALGO: a name for every operation that has it
// ("ring"), or per-operation choices ("allreduce=ring,broadcast=chain").
func parseAlgo(s string) (map[driver.Kind]string, error) {
	m := make(map[driver.Kind]string)
	if s == "" {
		return m, nil
	}
	known := func(op driver.Kind, name string) bool {
		for _, a := range algorithms[op] {
			if a.name == name {
				return true
			}
		}
		return false
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		opName, name, perOp := strings.Cut(item, "=")
		if !perOp {
			found := false
			for op := range algorithms {
				if known(op, item) {
					m[op] = item
					found = true
				}
			}
			if !found {
				return nil, fmt.Errorf("no operation has an algorithm named %q", item)
			}
			continue
		}
		var op driver.Kind
		for k := range algorithms {
			if k.String() == opName {
				op = k
			}
		}
		if op == 0 {
			return nil, fmt.Errorf("unknown operation %q in %q", opName, item)
		}
		if !known(op, name) {
			var names []string
			for _, a := range algorithms[op] {
				names = append(names, a.name)
			}
			return nil, fmt.Errorf("%v has no algorithm %q (it has %s)", op, name, strings.Join(names, ", "))
		}
		m[op] = name
	}
	return m, nil
}
