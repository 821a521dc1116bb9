package sapipe

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/weft-hpc/weft/collective"
)

// TestJob runs the epoch loop of weft train mlp on two ranks over a
// separable set of 784-feature samples: it learns, reports on rank 0
// only, numbers the steps over the run and leaves the first Skip steps
// out of the statistics.
func TestJob(t *testing.T) {
	train, test := synthetic(512, 784, 10, 5), synthetic(256, 784, 10, 5)
	job := &Job{Model: "mlp", Optimizer: "sgd", LR: 0.05, Momentum: 0.9, Config: Config{Mode: SAPipe, Warmup: 2, Predict: true, Compensate: true},
		Epochs: 2, Batch: 32, MaxSteps: 5, Skip: 3, Seed: 1, Eval: true}
	var (
		mu     sync.Mutex
		starts int
		steps  []int
		epochs []Epoch
		res    = make([]*Result, 2)
	)
	rep := Report{
		Start: func(s Setup) {
			mu.Lock()
			defer mu.Unlock()
			starts++
			if s.Ranks != 2 || s.Config.Mode != SAPipe || s.Buckets == "" {
				t.Errorf("setup %+v", s)
			}
		},
		Step:  func(ep, step int, s Stats) { mu.Lock(); steps = append(steps, step); mu.Unlock() },
		Epoch: func(e Epoch) { mu.Lock(); epochs = append(epochs, e); mu.Unlock() },
	}
	runRanks(t, 2, func(c *collective.Comm) error {
		r, err := job.Run(context.Background(), c, train, test, rep)
		res[c.Rank()] = r
		return err
	})
	if starts != 1 || len(steps) != 10 || steps[9] != 10 || len(epochs) != 2 {
		t.Fatalf("rank 0 reported %d starts, steps %v, %d epochs; want 1, 1..10, 2", starts, steps, len(epochs))
	}
	for r, x := range res {
		if x.Stats.Steps != 7 || x.Stats.Samples != 7*32 || x.Bytes != 4*(784*256+256+256*256+256+256*10+10) {
			t.Errorf("rank %d: %d steps, %d samples, %d bytes; want 7 steps after the 3 skipped", r, x.Stats.Steps, x.Stats.Samples, x.Bytes)
		}
	}
	if len(res[0].Curve) != 2 || res[1].Curve != nil || res[1].Final != 0 {
		t.Errorf("curve %v on rank 0, %v and %v on rank 1: want 2 points on rank 0 alone", res[0].Curve, res[1].Curve, res[1].Final)
	}
	if res[0].Final < 0.8 || epochs[1].Accuracy != res[0].Curve[1].Acc || epochs[1].SamplesPerSec <= 0 {
		t.Errorf("test accuracy %.3f (want at least 0.8 on separable classes), epoch 1 %+v", res[0].Final, epochs[1])
	}
}

func TestJobCheck(t *testing.T) {
	for _, tc := range []struct {
		job  Job
		want string
	}{
		{Job{Model: "rnn", Optimizer: "sgd"}, `sapipe: unknown model "rnn" (mlp, cnn)`},
		{Job{Model: "cnn", Optimizer: "lamb"}, `sapipe: unknown optimizer "lamb" (sgd, adam)`},
		{Job{Model: "mlp", Optimizer: "adam"}, ""},
	} {
		err := tc.job.Check()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s/%s: %v, want %q", tc.job.Model, tc.job.Optimizer, err, tc.want)
		}
	}
}
