package reduce

import (
	"errors"
	"strconv"
	"sync/atomic"

	"github.com/weft-hpc/weft/csrc"
)

// DefaultStreamMin is the destination length from which kernels write with
// non-temporal stores: a destination this large, with its two inputs, no
// longer fits the last-level cache of the machines Weft runs on (Zen 5: 32
// MiB per CCD), so caching it only evicts other data and costs a read for
// ownership of every line. Measured at 64 MiB on an AVX-512 Xeon: 21 GB/s
// streaming against 15 GB/s cached; at 4-16 MiB the two are within 15%,
// and in cache (256 KiB) streaming is half as fast.
const DefaultStreamMin = 16 << 20

var streamMin atomic.Int64 // bytes from which stores bypass the cache

func init() { streamMin.Store(DefaultStreamMin) }

// StreamMin returns the destination length from which the SIMD kernels use
// non-temporal stores.
func StreamMin() int { return int(streamMin.Load()) }

// SetStreamMin sets the destination length in bytes from which the SIMD
// kernels use non-temporal stores (DefaultStreamMin at start) and returns
// the previous value. Values below 1 are taken as 1. Tests lower it to run
// the streaming loops on small odd buffers; a program whose next step reads
// a large result back at once may raise it.
func SetStreamMin(n int) (prev int) {
	return int(streamMin.Swap(int64(max(n, 1))))
}

// Element types and operators: the values of internal/reduce's Type and
// Op (collective/driver's DType and Op, WEFT_T_* and WEFT_OP_* in C),
// which are wire values and never change.
const (
	typeF32  = 1
	typeF64  = 2
	typeF16  = 3
	typeBF16 = 4
	typeU8   = 7
	opAvg    = 4
)

var sizes = [...]int{typeF32: 4, typeF64: 8, typeF16: 2, typeBF16: 2, 5: 4, 6: 8, typeU8: 1}

// checkApply validates the arguments of Apply as internal/reduce defines
// them.
func checkApply(typ, op uint8, dst, a, b []byte) error {
	if typ == 0 || int(typ) >= len(sizes) {
		return errors.New("csrc: invalid type " + strconv.Itoa(int(typ)))
	}
	if op > opAvg || op == opAvg && typ > typeBF16 {
		return errors.New("csrc: invalid op " + strconv.Itoa(int(op)) + " for type " + strconv.Itoa(int(typ)))
	}
	if len(a) != len(dst) || len(b) != len(dst) {
		return errors.New("csrc: length mismatch")
	}
	if len(dst)%sizes[typ] != 0 {
		return errors.New("csrc: length is not a multiple of the element size")
	}
	if csrc.PartialOverlap(dst, a) || csrc.PartialOverlap(dst, b) {
		return errors.New("csrc: dst overlaps an input without being the same slice")
	}
	return nil
}

func checkScale(typ uint8, dst []byte, n int) error {
	if typ < typeF32 || typ > typeBF16 {
		return errors.New("csrc: scale of non-float type " + strconv.Itoa(int(typ)))
	}
	if n < 1 || n > 1<<24 {
		return errors.New("csrc: scale divisor out of range [1, 2^24]")
	}
	if len(dst)%sizes[typ] != 0 {
		return errors.New("csrc: length is not a multiple of the element size")
	}
	return nil
}

// Apply computes dst[i] = a[i] op b[i] with the kernels of csrc.Current();
// see ApplyAt.
func Apply(typ, op uint8, dst, a, b []byte) error { return ApplyAt(csrc.Current(), typ, op, dst, a, b) }

// Scale divides dst by n in place with the kernels of csrc.Current(); see
// ScaleAt.
func Scale(typ uint8, dst []byte, n int) error { return ScaleAt(csrc.Current(), typ, dst, n) }
