//go:build mpi

package mpi_test

// Mismatched collectives under the mpi backend: MPI does not compare the
// arguments of a collective across ranks, so before the signature check
// (WEFT_CHECK) a count, type, reduction or root that differed gave wrong
// results, a crash or a hang. Each case has rank 1 call differently from
// the others; every rank must get ErrMismatch naming rank 1, with both
// calls in the message, and no byte of the call may have moved.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/mpi"
	"github.com/weft-hpc/weft/internal/mpitest"
)

// sentinel fills the buffers a mismatched call must leave alone.
const sentinel = -7.5

type mismatchCase struct {
	name string
	want []string // in every rank's error
	// run makes this rank's call (odd: it is rank 1 of the world) and
	// returns its error and a check that its receive buffer is untouched.
	run func(ctx context.Context, d *collective.Comm, odd bool) (error, func() error)
}

func filled[T float32 | float64 | collective.F16](n int, v T) []T {
	x := make([]T, n)
	for i := range x {
		x[i] = v
	}
	return x
}

func untouched[T comparable](x []T, v T) func() error {
	return func() error {
		if i := slices.IndexFunc(x, func(e T) bool { return e != v }); i >= 0 {
			return fmt.Errorf("the receive buffer changed at element %d: %v", i, x[i])
		}
		return nil
	}
}

// allReduce32 is an AllReduce of n float32 with op.
func allReduce32(ctx context.Context, d *collective.Comm, n int, op collective.Op) (error, func() error) {
	recv := filled[float32](n, sentinel)
	return d.AllReduce(ctx, collective.Buf(filled[float32](n, 1)), collective.Buf(recv), op), untouched(recv, sentinel)
}

// allReduce64 is an AllReduce of n float64 with op.
func allReduce64(ctx context.Context, d *collective.Comm, n int, op collective.Op) (error, func() error) {
	recv := filled[float64](n, sentinel)
	return d.AllReduce(ctx, collective.Buf(filled[float64](n, 1)), collective.Buf(recv), op), untouched(recv, sentinel)
}

// fits is the most float64 the check's packet carries.
const fits = mpi.PacketData / 8

// ar64 and ar32 are allReduce64 and allReduce32 of n elements with op,
// for oddEven.
func ar64(n int, op collective.Op) func(context.Context, *collective.Comm) (error, func() error) {
	return func(ctx context.Context, d *collective.Comm) (error, func() error) { return allReduce64(ctx, d, n, op) }
}

func ar32(n int, op collective.Op) func(context.Context, *collective.Comm) (error, func() error) {
	return func(ctx context.Context, d *collective.Comm) (error, func() error) { return allReduce32(ctx, d, n, op) }
}

// oddEven has rank 1 make one call and the other ranks another.
func oddEven(odd, even func(ctx context.Context, d *collective.Comm) (error, func() error)) func(context.Context, *collective.Comm, bool) (error, func() error) {
	return func(ctx context.Context, d *collective.Comm, isOdd bool) (error, func() error) {
		if isOdd {
			return odd(ctx, d)
		}
		return even(ctx, d)
	}
}

var mismatches = []mismatchCase{
	// Small allreduces, whose data rides in the check's packet
	// (packet.go): against each other, against one too large for it, and
	// against another kind.
	{"packet/count", []string{"allreduce(2 x float64, sum)", "allreduce(3 x float64, sum)"}, oddEven(ar64(2, collective.Sum), ar64(3, collective.Sum))},
	{"packet/op", []string{"allreduce(4 x float32, max)", "allreduce(4 x float32, sum)"}, oddEven(ar32(4, collective.Max), ar32(4, collective.Sum))},
	{"packet/dtype", []string{"allreduce(1 x float64, sum)", "allreduce(2 x float32, sum)"}, oddEven(ar64(1, collective.Sum), ar32(2, collective.Sum))},
	{"packet/size", []string{fmt.Sprintf("allreduce(%d x float64, sum)", fits+1), fmt.Sprintf("allreduce(%d x float64, sum)", fits)}, oddEven(ar64(fits+1, collective.Sum), ar64(fits, collective.Sum))},
	{"packet/kind", []string{"broadcast(1 x float64, root 0)", "allreduce(1 x float64, sum)"}, oddEven(
		func(ctx context.Context, d *collective.Comm) (error, func() error) {
			buf := filled[float64](1, sentinel)
			return d.Broadcast(ctx, collective.Buf(buf), 0), untouched(buf, sentinel)
		},
		ar64(1, collective.Sum))},
	{"count", []string{"allreduce(500 x float32, sum)", "allreduce(1000 x float32, sum)"},
		func(ctx context.Context, d *collective.Comm, odd bool) (error, func() error) {
			if odd {
				return allReduce32(ctx, d, 500, collective.Sum)
			}
			return allReduce32(ctx, d, 1000, collective.Sum)
		}},
	{"dtype", []string{"allreduce(500 x float64, sum)", "allreduce(1000 x float32, sum)"},
		func(ctx context.Context, d *collective.Comm, odd bool) (error, func() error) {
			if odd { // the same bytes
				recv := filled[float64](500, sentinel)
				return d.AllReduce(ctx, collective.Buf(filled[float64](500, 1)), collective.Buf(recv), collective.Sum), untouched(recv, sentinel)
			}
			return allReduce32(ctx, d, 1000, collective.Sum)
		}},
	{"dtype/float16", []string{"allreduce(2000 x float16, max)", "allreduce(1000 x float32, max)"},
		func(ctx context.Context, d *collective.Comm, odd bool) (error, func() error) {
			if odd { // the same bytes, through a user-defined operation
				s := collective.F16From(sentinel)
				recv := filled(2000, s)
				return d.AllReduce(ctx, collective.Buf(filled(2000, collective.F16From(1))), collective.Buf(recv), collective.Max), untouched(recv, s)
			}
			return allReduce32(ctx, d, 1000, collective.Max)
		}},
	{"op", []string{"allreduce(1000 x float32, max)", "allreduce(1000 x float32, sum)"},
		func(ctx context.Context, d *collective.Comm, odd bool) (error, func() error) {
			if odd {
				return allReduce32(ctx, d, 1000, collective.Max)
			}
			return allReduce32(ctx, d, 1000, collective.Sum)
		}},
	{"root", []string{"reduce(1000 x float32, sum, root 1)", "reduce(1000 x float32, sum, root 0)"},
		func(ctx context.Context, d *collective.Comm, odd bool) (error, func() error) {
			root := 0
			if odd {
				root = 1
			}
			recv := filled[float32](1000, sentinel)
			rb := collective.Buf(recv)
			if d.Rank() != root {
				rb = collective.Buffer{}
			}
			return d.Reduce(ctx, collective.Buf(filled[float32](1000, 1)), rb, collective.Sum, root), untouched(recv, sentinel)
		}},
	{"kind", []string{"broadcast(1000 x float32, root 0)", "allreduce(1000 x float32, sum)"},
		func(ctx context.Context, d *collective.Comm, odd bool) (error, func() error) {
			if odd {
				buf := filled[float32](1000, sentinel)
				return d.Broadcast(ctx, collective.Buf(buf), 0), untouched(buf, sentinel)
			}
			return allReduce32(ctx, d, 1000, collective.Sum)
		}},
	{"counts", []string{"allgatherv(", "counts #"},
		func(ctx context.Context, d *collective.Comm, odd bool) (error, func() error) {
			counts := make([]int, d.Size())
			for i := range counts {
				counts[i] = 2
			}
			if odd {
				counts[0] = 3
			}
			total := 0
			for _, n := range counts {
				total += n
			}
			recv := filled[float32](total, sentinel)
			return d.AllGatherV(ctx, collective.Buf(filled[float32](2, 1)), collective.Buf(recv), counts), untouched(recv, sentinel)
		}},
	{"reducescatterv/counts", []string{"reducescatterv(", "sum, counts #"},
		func(ctx context.Context, d *collective.Comm, odd bool) (error, func() error) {
			// The same total, but rank 1 cuts it otherwise.
			counts := slices.Repeat([]int{2}, d.Size())
			counts[0] = 3
			if odd {
				counts[0], counts[1] = 2, 3
			}
			total := 2*d.Size() + 1
			recv := filled[float32](counts[d.Rank()], sentinel)
			return d.ReduceScatterV(ctx, collective.Buf(filled[float32](total, 1)), collective.Buf(recv), counts, collective.Sum), untouched(recv, sentinel)
		}},
	{"gatherv/blocks", []string{"gatherv(float32, root 0)", "rank 1's send holds 3"},
		func(ctx context.Context, d *collective.Comm, odd bool) (error, func() error) {
			// Counts at the root only: rank 1's block is not its count.
			var counts []int
			var recv []float32
			if d.Rank() == 0 {
				counts = slices.Repeat([]int{2}, d.Size())
				recv = filled[float32](2*d.Size(), sentinel)
			}
			own := 2
			if odd {
				own = 3
			}
			return d.GatherV(ctx, collective.Buf(filled[float32](own, 1)), collective.Buf(recv), counts, 0), untouched(recv, sentinel)
		}},
	{"scatterv/blocks", []string{"scatterv(float32, root 1)", "rank 0's recv holds 2", "the root sends"},
		func(ctx context.Context, d *collective.Comm, odd bool) (error, func() error) {
			// The root, rank 1, gives rank 0 three elements; it expects two.
			var counts []int
			var send []float32
			if odd {
				counts = slices.Repeat([]int{2}, d.Size())
				counts[0] = 3
				send = filled[float32](2*d.Size()+1, 1)
			}
			recv := filled[float32](2, sentinel)
			return d.ScatterV(ctx, collective.Buf(send), counts, collective.Buf(recv), 1), untouched(recv, sentinel)
		}},
	{"nonblocking", []string{"allreduce(500 x float32, sum)", "allreduce(1000 x float32, sum)"},
		func(ctx context.Context, d *collective.Comm, odd bool) (error, func() error) {
			n := 1000
			if odd {
				n = 500
			}
			recv := filled[float32](n, sentinel)
			return d.IAllReduce(collective.Buf(filled[float32](n, 1)), collective.Buf(recv), collective.Sum).Wait(ctx), untouched(recv, sentinel)
		}},
	{"split", []string{"op #1: ", "allreduce(500 x float32, sum)"},
		// On a communicator in reverse order: errors name world ranks.
		func(ctx context.Context, d *collective.Comm, odd bool) (error, func() error) {
			s, err := d.Split(ctx, 0, -d.Rank())
			if err != nil {
				return fmt.Errorf("split: %w", err), nil
			}
			defer s.Close()
			if err := s.Barrier(ctx); err != nil { // op #0
				return fmt.Errorf("barrier: %w", err), nil
			}
			if odd {
				return allReduce32(ctx, s, 500, collective.Sum)
			}
			return allReduce32(ctx, s, 1000, collective.Sum)
		}},
}

// wantMismatch checks that err is the mismatch the signature check
// reports, blaming world rank culprit and saying each of wants.
func wantMismatch(err error, culprit int, wants ...string) error {
	var oe *collective.OpError
	switch {
	case err == nil:
		return fmt.Errorf("no error, want ErrMismatch")
	case !errors.Is(err, collective.ErrMismatch):
		return fmt.Errorf("%q does not wrap ErrMismatch", err)
	case !errors.As(err, &oe) || oe.Backend != "mpi" || oe.Peer != culprit:
		return fmt.Errorf("%q does not blame rank %d", err, culprit)
	}
	for _, w := range append(wants, fmt.Sprintf("rank %d is the odd one out", culprit)) {
		if !strings.Contains(err.Error(), w) {
			return fmt.Errorf("%q does not say %q", err, w)
		}
	}
	return nil
}

// runMismatch runs one case on a world of its own.
func runMismatch(ctx context.Context, mc mismatchCase) error {
	d, err := openMPI(ctx)
	if err != nil {
		return err
	}
	err, same := mc.run(ctx, d, d.Rank() == 1)
	if same == nil {
		return err
	}
	if err := wantMismatch(err, 1, mc.want...); err != nil {
		return err
	}
	if err := same(); err != nil {
		return err
	}
	if err := d.Barrier(ctx); !errors.Is(err, collective.ErrMismatch) {
		return fmt.Errorf("a barrier after the mismatch: %v, want the mismatch", err)
	}
	return d.Close()
}

// mismatchRole is a rank of the mismatch job: every case, then the
// settings first and off, then a barrier on a world no case touched.
func mismatchRole() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := openMPI(ctx)
	if err != nil {
		fmt.Printf("RESULT init-error %v\n", err)
		return 1
	}
	me := c.Rank()
	fail := func(what string, err error) int {
		fmt.Printf("RESULT fail rank %d: %s: %v\n", me, what, err)
		return 1 // no Close: MPI_Finalize would wait for ranks that may be stuck
	}
	for _, mc := range mismatches {
		if err := runMismatch(ctx, mc); err != nil {
			return fail(mc.name, err)
		}
	}

	// WEFT_CHECK=first checks the first collective of a communicator only.
	restore := mpi.SetCheck("first")
	if err := runMismatch(ctx, mismatches[0]); err != nil {
		return fail("first", err)
	}
	// WEFT_CHECK=off: no check, the calls run as before.
	mpi.SetCheck("off")
	d, err := openMPI(ctx)
	if err != nil {
		return fail("off", err)
	}
	for range 3 {
		x := []float64{float64(me), 1}
		if err := d.AllReduce(ctx, collective.Buf(x), collective.Buf(x), collective.Sum); err != nil {
			return fail("off", err)
		}
		if n := c.Size(); x[0] != float64(n*(n-1)/2) || x[1] != float64(n) {
			return fail("off", fmt.Errorf("allreduce gave %v", x))
		}
	}
	if err := d.Close(); err != nil {
		return fail("off", err)
	}
	restore()

	if err := c.Barrier(ctx); err != nil {
		return fail("a world without a mismatch", err)
	}
	if err := c.Close(); err != nil {
		return fail("close", err)
	}
	fmt.Printf("RESULT ok rank %d: %d mismatches\n", me, len(mismatches)+1)
	return 0
}

// runRanks runs a job of np ranks in role and checks that every rank
// reported "RESULT ok".
func runRanks(t *testing.T, launcher []string, np int, role string, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, launcher[0], launcher[1:]...)
	cmd.Env = mpiEnv(append([]string{mpitest.Role(role)}, env...)...)
	out, err := cmd.CombinedOutput()
	if oks := strings.Count(string(out), "RESULT ok rank"); err != nil || oks != np {
		t.Fatalf("%s: %v; %d of %d ranks passed\n%s", strings.Join(launcher, " "), err, oks, np, mpitest.Tail(out, 40))
	}
	return string(out)
}

// TestOpenMPIMismatch: count, type (the float64-for-float32 case that
// crashed Open MPI at np 4), reduction, root, kind and block counts that
// differ on rank 1, blocking, non-blocking and on a split communicator,
// with WEFT_CHECK's default, first and off, on 2 and 4 ranks.
func TestOpenMPIMismatch(t *testing.T) {
	if mpi.IsMPICH {
		t.Skip("this binary is built for MPICH (-tags mpich): TestMPICHMismatch runs the cases")
	}
	mpirun := mpitest.Mpirun(t)
	for _, np := range []int{2, 4} {
		t.Run(fmt.Sprintf("np=%d", np), func(t *testing.T) {
			runRanks(t, []string{mpirun, "-np", strconv.Itoa(np), mpitest.Self()}, np, "mismatch")
		})
	}
}

// TestMPICHMismatch runs the same cases on MPICH, 2 ranks.
func TestMPICHMismatch(t *testing.T) {
	mpiexec, err := exec.LookPath("mpiexec.mpich")
	if err != nil {
		t.Skip("mpiexec.mpich not found: install mpich and libmpich-dev (scripts/deps.sh does) to test the MPICH build")
	}
	runRanks(t, []string{mpiexec, "-n", "2", mpichBinary(t)}, 2, "mismatch")
}

// worldRank is this process's rank as the launcher says, before MPI
// starts.
func worldRank() int {
	for _, v := range []string{"OMPI_COMM_WORLD_RANK", "PMI_RANK"} {
		if r, err := strconv.Atoi(os.Getenv(v)); err == nil {
			return r
		}
	}
	return -1
}

// checkVarRole opens a world with the WEFT_CHECK that WEFT_TEST_CHECKVAR
// gives this rank ("1=off,2=bogus"; unset elsewhere), and reports the
// error Open returns as "RESULT ok rank R: peer P: message".
func checkVarRole() int {
	me := worldRank()
	for _, kv := range strings.Split(os.Getenv("WEFT_TEST_CHECKVAR"), ",") {
		if r, v, ok := strings.Cut(kv, "="); ok && r == strconv.Itoa(me) {
			os.Setenv("WEFT_CHECK", v)
		}
	}
	_, err := openMPI(context.Background())
	if !errors.Is(err, collective.ErrInvalid) {
		fmt.Printf("RESULT fail rank %d: Open: %v, want ErrInvalid\n", me, err)
		return 1
	}
	fmt.Printf("RESULT ok rank %d: peer %d: %v\n", me, collective.PeerOf(err), err)
	return 0
}

// TestCheckSetting: WEFT_CHECK must be alike on every rank (a rank that
// checks makes a call one that does not would match against its next),
// and valid; otherwise Open fails on every rank, naming the rank.
func TestCheckSetting(t *testing.T) {
	if mpi.IsMPICH {
		t.Skip("this binary is built for MPICH (-tags mpich)")
	}
	mpirun := mpitest.Mpirun(t)
	for _, tc := range []struct {
		np      int
		vars    string
		culprit int
		want    []string
	}{
		{2, "1=off", 1, []string{"WEFT_CHECK differs between ranks: rank 0 has all, rank 1 has off"}},
		{3, "1=first,2=bogus", 2, []string{"rank 2's WEFT_CHECK is not all, first or off", `rank 2: WEFT_CHECK="bogus": want all, first or off`}},
	} {
		t.Run(tc.vars, func(t *testing.T) {
			out := runRanks(t, []string{mpirun, "-np", strconv.Itoa(tc.np), mpitest.Self()}, tc.np, "checkvar", "WEFT_TEST_CHECKVAR="+tc.vars)
			for _, l := range strings.Split(out, "\n") {
				if !strings.HasPrefix(l, "RESULT ok rank") {
					continue
				}
				if !strings.Contains(l, fmt.Sprintf(": peer %d: ", tc.culprit)) || !slices.ContainsFunc(tc.want, func(w string) bool { return strings.Contains(l, w) }) {
					t.Errorf("%s: want rank %d blamed, saying one of %q", l, tc.culprit, tc.want)
				}
			}
		})
	}
}
