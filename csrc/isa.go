package csrc

import (
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
)

// ISA is an instruction-set level of the native kernels. The values match
// the C side (WEFT_ISA_* in include/weft_isa.h).
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
// Where it is false every kernel of the packages below csrc returns
// ErrNotBuilt.
func Available() bool { return best != None }

// Best returns the highest level this CPU supports, None where Available is
// false.
func Best() ISA { return best }

// ErrNotBuilt is returned by every kernel call where the native kernels
// are not built in (CGO_ENABLED=0 or not amd64), and wrapped in the error
// for a level the CPU lacks.
var ErrNotBuilt = errors.New("csrc: native kernels not available (they need cgo on amd64)")

var current atomic.Uint32 // the level the kernels run at

func init() { current.Store(uint32(best)) }

// Current returns the level the kernels run at: Best unless SetISA chose
// another.
func Current() ISA { return ISA(current.Load()) }

// SetISA makes the kernels run at level isa and returns the previous
// level, for tests and benchmarks that compare levels. It fails with
// ErrNotBuilt if the CPU or build does not support isa. It is safe to call concurrently with
// the kernels; calls in flight finish with the level they started with.
func SetISA(isa ISA) (prev ISA, err error) {
	if err := isa.Check(); err != nil {
		return Current(), err
	}
	return ISA(current.Swap(uint32(isa))), nil
}

// Check returns nil where this build and CPU can run level isa, else
// ErrNotBuilt, wrapped in an error that names the level where only the
// CPU lacks it.
func (isa ISA) Check() error {
	if isa.Supported() {
		return nil
	}
	if !Available() {
		return ErrNotBuilt
	}
	return fmt.Errorf("csrc: level %s is not supported by this CPU (best: %s): %w", isa, best, ErrNotBuilt)
}
