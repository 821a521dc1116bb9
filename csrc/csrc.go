package csrc

import (
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
)

// ISA is an instruction-set level of the native kernels. The values match
// the C side (WEFT_ISA_* in weft_reduce.h).
type ISA uint8

// Levels, lowest first; each includes the instructions of the ones below.
const (
	None    ISA = 0 // no native kernels: built without cgo or not on amd64
	Generic ISA = 1 // portable C, any x86-64
	AVX2    ISA = 2 // AVX2 and F16C
	AVX512  ISA = 3 // AVX-512 F, BW, DQ and VL, with AVX2 and F16C
)

var isaNames = [...]string{None: "none", Generic: "generic", AVX2: "avx2", AVX512: "avx512"}

// String returns "none", "generic", "avx2" or "avx512", or "ISA(n)".
func (isa ISA) String() string {
	if int(isa) < len(isaNames) {
		return isaNames[isa]
	}
	return "ISA(" + strconv.Itoa(int(isa)) + ")"
}

// Supported reports whether this build and CPU can run the kernels of
// level isa.
func (isa ISA) Supported() bool { return isa != None && isa <= best }

// ISAs returns every level this build and CPU support, lowest first; empty
// where Available is false.
func ISAs() []ISA {
	var out []ISA
	for i := Generic; i <= best; i++ {
		out = append(out, i)
	}
	return out
}

// Available reports whether the native kernels are built in (cgo on amd64).
// Where it is false every Apply and Scale returns ErrNotBuilt.
func Available() bool { return best != None }

// Best returns the highest level this CPU supports, None where Available is
// false.
func Best() ISA { return best }

// ErrNotBuilt is returned by every kernel call where the native kernels
// are not built in (CGO_ENABLED=0 or not amd64), and wrapped in the error
// for a level the CPU lacks.
var ErrNotBuilt = errors.New("csrc: native kernels not available (they need cgo on amd64)")

var (
	current   atomic.Uint32 // the ISA of Apply and Scale
	streamMin atomic.Int64  // bytes from which stores bypass the cache
)

// DefaultStreamMin is the destination length from which kernels write with
// non-temporal stores: a destination this large, with its two inputs, no
// longer fits the last-level cache of the machines Weft runs on (Zen 5: 32
// MiB per CCD), so caching it only evicts other data and costs a read for
// ownership of every line. Measured at 64 MiB on an AVX-512 Xeon: 21 GB/s
// streaming against 15 GB/s cached; at 4-16 MiB the two are within 15%,
// and in cache (256 KiB) streaming is half as fast.
const DefaultStreamMin = 16 << 20

func init() {
	current.Store(uint32(best))
	streamMin.Store(DefaultStreamMin)
}

// Current returns the level Apply and Scale use: Best unless SetISA chose
// another.
func Current() ISA { return ISA(current.Load()) }

// SetISA makes Apply and Scale use level isa and returns the previous
// level, for tests and benchmarks that compare levels. It fails with
// ErrNotBuilt if the CPU or build does not support isa. It is safe to call concurrently with
// the kernels; calls in flight finish with the level they started with.
func SetISA(isa ISA) (prev ISA, err error) {
	if !isa.Supported() {
		return Current(), unsupported(isa)
	}
	return ISA(current.Swap(uint32(isa))), nil
}

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

// Element types and operators: the values of reduce.Type and reduce.Op,
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

// checkApply validates the arguments of Apply as package reduce defines
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
	if PartialOverlap(dst, a) || PartialOverlap(dst, b) {
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

// unsupported is the error for a level this build or CPU cannot run.
func unsupported(isa ISA) error {
	if !Available() {
		return ErrNotBuilt
	}
	return fmt.Errorf("csrc: level %s is not supported by this CPU (best: %s): %w", isa, best, ErrNotBuilt)
}

// Apply computes dst[i] = a[i] op b[i] with the kernels of Current(); see
// ISA.Apply.
func Apply(typ, op uint8, dst, a, b []byte) error { return Current().Apply(typ, op, dst, a, b) }

// Scale divides dst by n in place with the kernels of Current(); see
// ISA.Scale.
func Scale(typ uint8, dst []byte, n int) error { return Current().Scale(typ, dst, n) }
