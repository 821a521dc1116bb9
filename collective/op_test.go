package collective_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/weft-hpc/weft/collective"
)

// onRanks runs f on every rank of a fresh local world of n and returns
// their errors.
func onRanks(t *testing.T, n int, f func(c *collective.Comm) error, opts ...collective.Option) []error {
	t.Helper()
	comms, err := collective.NewLocal(n, opts...)
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			errs[r] = f(c)
		}()
	}
	wg.Wait()
	return errs
}

// testOps makes the tests' user-defined reductions once per process (a
// process has collective.MaxUserOps; -count=N runs the tests N times):
// absmax (commutative, int64) and last (x op y = y, int32: the last
// rank's value wins, which only rank order gives).
var testOps = sync.OnceValues(func() (ops [2]collective.Op, err error) {
	ops[0], err = collective.NewOp("absmax-test", true, func(in, inout []int64) {
		for i, x := range in {
			inout[i] = max(x, -x, inout[i], -inout[i])
		}
	})
	if err == nil {
		ops[1], err = collective.NewOp("last", false, func(in, inout []int32) {})
	}
	return ops, err
})

// TestBufTypes: every Go element type makes a Buffer of its DType, whose
// size is the Go size.
func TestBufTypes(t *testing.T) {
	check := func(name string, b collective.Buffer, want collective.DType, goSize uintptr) {
		t.Helper()
		if b.DType() != want || b.Len() != 3 || uintptr(b.DType().Size()) != goSize {
			t.Errorf("Buf([]%s): %v, %d elements of %d bytes; want %v, 3 of %d", name, b.DType(), b.Len(), b.DType().Size(), want, goSize)
		}
	}
	check("int8", collective.Buf(make([]int8, 3)), collective.Int8, 1)
	check("int16", collective.Buf(make([]int16, 3)), collective.Int16, 2)
	check("int", collective.Buf(make([]int, 3)), map[uintptr]collective.DType{4: collective.Int32, 8: collective.Int64}[unsafe.Sizeof(0)], unsafe.Sizeof(0))
	check("uint", collective.Buf(make([]uint, 3)), map[uintptr]collective.DType{4: collective.Uint32, 8: collective.Uint64}[unsafe.Sizeof(uint(0))], unsafe.Sizeof(uint(0)))
	check("uint16", collective.Buf(make([]uint16, 3)), collective.Uint16, 2)
	check("uint32", collective.Buf(make([]uint32, 3)), collective.Uint32, 4)
	check("uint64", collective.Buf(make([]uint64, 3)), collective.Uint64, 8)
	check("complex64", collective.Buf(make([]complex64, 3)), collective.Complex64, 8)
	check("complex128", collective.Buf(make([]complex128, 3)), collective.Complex128, 16)
	check("Pair[float32]", collective.Buf(make([]collective.Pair[float32], 3)), collective.Float32Int, unsafe.Sizeof(collective.Pair[float32]{}))
	check("Pair[float64]", collective.Buf(make([]collective.Pair[float64], 3)), collective.Float64Int, unsafe.Sizeof(collective.Pair[float64]{}))
	check("Pair[int32]", collective.Buf(make([]collective.Pair[int32], 3)), collective.Int32Int, unsafe.Sizeof(collective.Pair[int32]{}))
	check("Pair[int64]", collective.Buf(make([]collective.Pair[int64], 3)), collective.Int64Int, unsafe.Sizeof(collective.Pair[int64]{}))
	for _, dt := range collective.DTypes {
		if got, err := collective.ParseDType(dt.String()); err != nil || got != dt {
			t.Errorf("ParseDType(%q) = %v, %v", dt.String(), got, err)
		}
	}
	for _, op := range collective.Ops {
		if got, err := collective.ParseOp(op.String()); err != nil || got != op {
			t.Errorf("ParseOp(%q) = %v, %v", op.String(), got, err)
		}
	}
	if _, err := collective.ParseDType("quaternion"); err == nil || !strings.Contains(err.Error(), "complex128") {
		t.Errorf("ParseDType(quaternion): %v, want an error listing the types", err)
	}
}

// TestOpTypeErrors: a reduction on a type it does not take fails on every
// rank with ErrInvalid naming both, before anything is sent, and the
// communicator goes on.
func TestOpTypeErrors(t *testing.T) {
	ops, err := testOps()
	if err != nil {
		t.Fatal(err)
	}
	absMax := ops[0]
	cases := []struct {
		op   collective.Op
		buf  func() collective.Buffer
		want string
	}{
		{collective.Min, func() collective.Buffer { return collective.Buf(make([]complex64, 4)) }, "reduction min does not take type complex64"},
		{collective.Max, func() collective.Buffer { return collective.Buf(make([]complex128, 4)) }, "reduction max does not take type complex128"},
		{collective.BXor, func() collective.Buffer { return collective.Buf(make([]float32, 4)) }, "reduction bxor does not take type float32"},
		{collective.LAnd, func() collective.Buffer { return collective.Buf(make([]complex64, 4)) }, "reduction land does not take type complex64"},
		{collective.MinLoc, func() collective.Buffer { return collective.Buf(make([]float64, 4)) }, "reduction minloc does not take type float64"},
		{collective.Sum, func() collective.Buffer { return collective.Buf(make([]collective.Pair[int32], 4)) }, "reduction sum does not take type int32int"},
		{collective.Avg, func() collective.Buffer { return collective.Buf(make([]int16, 4)) }, "reduction avg does not take type int16"},
		{absMax, func() collective.Buffer { return collective.Buf(make([]int32, 4)) }, "reduction absmax-test does not take type int32"},
		{collective.Op(127), func() collective.Buffer { return collective.Buf(make([]int32, 4)) }, "unknown reduction 127"},
	}
	errs := onRanks(t, 2, func(c *collective.Comm) error {
		ctx := context.Background()
		for _, tc := range cases {
			b := tc.buf()
			err := c.AllReduce(ctx, b, b, tc.op)
			if !errors.Is(err, collective.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				return fmt.Errorf("allreduce %v of %v: %v, want ErrInvalid saying %q", tc.op, b.DType(), err, tc.want)
			}
		}
		// Still usable, and the user op works on its own type.
		x := []int64{int64(c.Rank()*2 - 3)}
		if err := c.AllReduce(ctx, collective.Buf(x), collective.Buf(x), absMax); err != nil || x[0] != 3 {
			return fmt.Errorf("absmax after the errors: %v, %v", x, err)
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	if _, err := collective.NewOp[int32]("nil", true, nil); !errors.Is(err, collective.ErrInvalid) {
		t.Errorf("NewOp with a nil function: %v, want ErrInvalid", err)
	}
}

// TestNonCommutativeLarge: a reduction that does not commute gets the
// rank-ordered result also for buffers where the ring, Rabenseifner's
// algorithm or the pipelined chain would run, also when WEFT_ALGO
// (WithAlgorithm) asks for one of those, and for reduce to a root other
// than 0.
func TestNonCommutativeLarge(t *testing.T) {
	ops, err := testOps()
	if err != nil {
		t.Fatal(err)
	}
	last := ops[1]
	const n, cnt = 4, 100000 // 400 KB: above every small-message threshold
	for _, algo := range []string{"", "ring", "rabenseifner", "chain", "shm", "tree"} {
		t.Run("algo="+algo, func(t *testing.T) { nonCommutative(t, last, n, cnt, algo) })
	}
}

func nonCommutative(t *testing.T, last collective.Op, n, cnt int, algo string) {
	var opts []collective.Option
	if algo != "" {
		opts = append(opts, collective.WithAlgorithm(algo))
	}
	errs := onRanks(t, n, func(c *collective.Comm) error {
		ctx := context.Background()
		x := make([]int32, cnt)
		for i := range x {
			x[i] = int32(c.Rank()*1000 + i%7)
		}
		y := make([]int32, cnt)
		if err := c.AllReduce(ctx, collective.Buf(x), collective.Buf(y), last); err != nil {
			return err
		}
		for i, v := range y {
			if v != int32((n-1)*1000+i%7) {
				return fmt.Errorf("allreduce: element %d = %d, want rank %d's", i, v, n-1)
			}
		}
		rs := make([]int32, cnt/n)
		if err := c.ReduceScatter(ctx, collective.Buf(x), collective.Buf(rs), last); err != nil {
			return err
		}
		for i, v := range rs {
			if v != int32((n-1)*1000+(c.Rank()*cnt/n+i)%7) {
				return fmt.Errorf("reducescatter: element %d = %d", i, v)
			}
		}
		var recv collective.Buffer
		if c.Rank() == 1 {
			recv = collective.Buf(y)
			clear(y)
		}
		if err := c.Reduce(ctx, collective.Buf(x), recv, last, 1); err != nil {
			return err
		}
		if c.Rank() == 1 {
			for i, v := range y {
				if v != int32((n-1)*1000+i%7) {
					return fmt.Errorf("reduce to 1: element %d = %d", i, v)
				}
			}
		}
		return nil
	}, opts...)
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}
