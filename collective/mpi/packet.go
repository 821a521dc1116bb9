//go:build mpi

package mpi

// The signature packet (sig.go, weft_mpi.c): the buffer of the signature
// check's MPI_Allreduce, which carries a small allreduce's data too.

/*
#include <stdlib.h>
#include "weft_mpi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/weft-hpc/weft/collective/driver"
)

// packetData is the bytes of data a packet carries at most.
const packetData = C.WEFT_PACKET_DATA

// packetElem is, for each built-in (type, reduction) a packet can carry,
// the element's size in bytes; 0 for the others (the logical reductions,
// user-defined ones, the pair types, complex numbers), which run as a
// call of their own after the check. Filled once from the C side's table.
var packetElem = func() (t [32][16]int8) {
	for dt := range t {
		for op := range t[dt] {
			t[dt][op] = int8(C.weft_packet_bytes(C.int(dt), C.int(op)))
		}
	}
	return t
}()

// newPacket is a packet in C memory, so that cgo has no Go memory to check
// in the call that passes it; freePacket frees it.
func newPacket() *C.weft_packet {
	return (*C.weft_packet)(C.calloc(1, C.size_t(unsafe.Sizeof(C.weft_packet{}))))
}

func freePacket(p *C.weft_packet) { C.free(unsafe.Pointer(p)) }

// carries reports whether the allreduce a fits in a packet: a built-in
// reduction of a type the packet's kernels take, and at most packetData
// bytes.
func carries(a *driver.Call) bool {
	if a.Kind != driver.AllReduce || len(a.Send) == 0 || len(a.Send) > packetData || len(a.Recv) != len(a.Send) {
		return false
	}
	dt, op := uint(a.DType), uint(a.Op)
	return dt < 32 && op < 16 && packetElem[dt][op] > 0
}

// packetBytes is p's data.
func packetBytes(p *C.weft_packet) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&p.data[0])), packetData)
}

// fill sets p to the hash h and, when a is not nil, a's data.
func fill(p *C.weft_packet, h int64, a *driver.Call) {
	p.h, p.nh = C.int64_t(h), C.int64_t(-h)
	if a == nil {
		p.dt, p.op, p.n = 0, 0, 0
		return
	}
	p.dt, p.op, p.n = C.int32_t(a.DType), C.int32_t(a.Op), C.int32_t(a.Count)
	copy(packetBytes(p), a.Send)
}

// agreed reports whether the packet, reduced over the ranks, says that
// every rank's hash was the same (and their data headers alike).
func agreed(p *C.weft_packet) bool { return p.h == -p.nh }

// packetReduce combines two ranks' packets as the check's MPI_Allreduce
// does, for tests: the packet of hash hIn and call in (nil: no data) into
// that of hOut and out. It returns the data the result holds, and whether
// it says the ranks agreed.
func packetReduce(hIn int64, in *driver.Call, hOut int64, out *driver.Call) ([]byte, bool) {
	a, b := newPacket(), newPacket()
	defer freePacket(a)
	defer freePacket(b)
	fill(a, hIn, in)
	fill(b, hOut, out)
	C.weft_packet_reduce(a, b)
	return append([]byte(nil), packetBytes(b)...), agreed(b)
}
