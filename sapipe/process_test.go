package sapipe

// A short run under mpirun, on internal/mpitest's harness: the test
// binary re-executes itself as the ranks (WEFT_TEST_ROLE=train), which
// report "RESULT ..." lines.

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/internal/mpitest"
	"github.com/weft-hpc/weft/nn"
)

func TestMain(m *testing.M) { os.Exit(mpitest.Main(m, runRole)) }

// runRole is one rank of the job TestMPI starts.
func runRole(role string) int {
	if role != "train" {
		fmt.Printf("RESULT unknown role %q\n", role)
		return 2
	}
	if err := trainRank(); err != nil {
		fmt.Printf("RESULT error %v\n", err)
		return 1
	}
	return 0
}

func trainRank() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := collective.Open(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	nn.SetThreads(1)
	data := synthetic(2048, 8, 3, 1)
	m := nn.MLP(1, 8, 32, 3)
	tr, err := New(ctx, c, m, &nn.SGD{LR: 0.1, Momentum: 0.9}, Config{Mode: SAPipe, Warmup: 2, Predict: true, Compensate: true, BucketBytes: 256})
	if err != nil {
		return err
	}
	var losses []float64
	if _, err := tr.Epoch(ctx, data, EpochOptions{Batch: 16, Seed: 1, MaxSteps: 40, Each: func(s Stats) { losses = append(losses, s.Loss) }}); err != nil {
		return err
	}
	if err := tr.Flush(ctx); err != nil {
		return err
	}
	h := fnv.New64a()
	for _, v := range tr.Real() {
		b := math.Float32bits(v)
		h.Write([]byte{byte(b), byte(b >> 8), byte(b >> 16), byte(b >> 24)})
	}
	mean := func(s []float64) float64 {
		var t float64
		for _, v := range s {
			t += v
		}
		return t / float64(len(s))
	}
	fmt.Printf("RESULT rank=%d first=%.4f last=%.4f params=%x\n", c.Rank(), mean(losses[:5]), mean(losses[len(losses)-5:]), h.Sum64())
	return nil
}

// TestMPI trains SAPipe on 2 ranks under mpirun over Weft's TCP transport
// and checks that the loss falls and both ranks end with the same bits.
func TestMPI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := mpitest.Command(ctx, t, 2, "train", "WEFT_BACKEND=tcp")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mpirun: %v\n%s", err, out)
	}
	var params []string
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "RESULT rank=") {
			continue
		}
		var rank int
		var first, last float64
		var p string
		if _, err := fmt.Sscanf(line, "RESULT rank=%d first=%f last=%f params=%s", &rank, &first, &last, &p); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if !(last < 0.7*first) {
			t.Errorf("rank %d: loss %.4f -> %.4f, did not fall", rank, first, last)
		}
		params = append(params, p)
	}
	if len(params) != 2 || params[0] != params[1] {
		t.Fatalf("want two ranks with the same parameters, got %v\n%s", params, out)
	}
}
