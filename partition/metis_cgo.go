//go:build cgo

package partition

/*
#cgo LDFLAGS: -lmetis
#include <metis.h>
#include <stdint.h>

#if IDXTYPEWIDTH != 32
#error "partition: this binding expects libmetis built with IDXTYPEWIDTH 32"
#endif

static int weft_metis_kway(idx_t nvtxs, idx_t ncon, idx_t *xadj, idx_t *adjncy, idx_t *vwgt,
                           idx_t nparts, idx_t ufactor, idx_t seed, idx_t *part, idx_t *edgecut) {
	idx_t options[METIS_NOPTIONS];
	METIS_SetDefaultOptions(options);
	options[METIS_OPTION_SEED] = seed;
	options[METIS_OPTION_NUMBERING] = 0;
	options[METIS_OPTION_OBJTYPE] = METIS_OBJTYPE_CUT;
	if (ufactor > 0) options[METIS_OPTION_UFACTOR] = ufactor;
	return METIS_PartGraphKway(&nvtxs, &ncon, xadj, adjncy, vwgt, NULL, NULL, &nparts,
	                           NULL, NULL, options, edgecut, part);
}
*/
import "C"

import "unsafe"

const metisBuilt = true

// metisKway is the thin call: Go slices are passed for the call only;
// METIS keeps no pointer to them.
func metisKway(xadj, adjncy, vwgt []int32, ncon, k, ufactor int, seed int32, part []int32) error {
	var adj *C.idx_t
	if len(adjncy) > 0 {
		adj = (*C.idx_t)(unsafe.Pointer(&adjncy[0]))
	} else {
		// METIS reads adjncy[xadj[0]] even for an edgeless graph.
		one := make([]int32, 1)
		adj = (*C.idx_t)(unsafe.Pointer(&one[0]))
	}
	var vw *C.idx_t
	if vwgt != nil {
		vw = (*C.idx_t)(unsafe.Pointer(&vwgt[0]))
	}
	var cut C.idx_t
	st := C.weft_metis_kway(C.idx_t(len(xadj)-1), C.idx_t(ncon), (*C.idx_t)(unsafe.Pointer(&xadj[0])), adj, vw,
		C.idx_t(k), C.idx_t(ufactor), C.idx_t(seed), (*C.idx_t)(unsafe.Pointer(&part[0])), &cut)
	if st != C.METIS_OK {
		return MetisError(st)
	}
	return nil
}
