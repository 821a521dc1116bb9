package feature

// slotIndex maps node ids to cache slots. Over a graph of known size whose
// index costs no more than the rows it points into (4 bytes a node against
// the cached rows' bytes, or at most 16 MiB) it is a dense array, one load
// per lookup; otherwise a map. The map's hashing was a tenth of a 4-rank
// epoch on a 1M-node graph, where every sampled remote node is looked up.
type slotIndex struct {
	dense []int32 // slot+1 per node, 0 when absent
	m     map[int64]int32
}

func newSlotIndex(numNodes int64, capacity, rowBytes int) slotIndex {
	if numNodes > 0 && (4*numNodes <= int64(capacity)*int64(rowBytes) || numNodes <= 1<<22) {
		return slotIndex{dense: make([]int32, numNodes)}
	}
	return slotIndex{m: make(map[int64]int32, capacity)}
}

func (x *slotIndex) get(id int64) (int32, bool) {
	if x.dense != nil {
		if id < 0 || id >= int64(len(x.dense)) {
			return 0, false
		}
		s := x.dense[id]
		return s - 1, s > 0
	}
	s, ok := x.m[id]
	return s, ok
}

// set records id at slot; ids outside a dense index's range are ignored
// (they can never be found either).
func (x *slotIndex) set(id int64, slot int32) {
	if x.dense != nil {
		if id >= 0 && id < int64(len(x.dense)) {
			x.dense[id] = slot + 1
		}
		return
	}
	x.m[id] = slot
}

func (x *slotIndex) del(id int64) {
	if x.dense != nil {
		if id >= 0 && id < int64(len(x.dense)) {
			x.dense[id] = 0
		}
		return
	}
	delete(x.m, id)
}
