package psbench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/weft-hpc/weft/ingest/fmnist"
	"github.com/weft-hpc/weft/psmode"
)

// TestBenchSmall runs the four jobs at a tiny size: the table and the
// plot come out, and the MLP learns.
func TestBenchSmall(t *testing.T) {
	if _, err := os.Stat(filepath.Join(fmnist.Dir, "train-images-idx3-ubyte.gz")); err != nil {
		t.Skipf("Fashion-MNIST not found (%v): the Debian package dataset-fashion-mnist is not installed (scripts/deps.sh installs it)", err)
	}
	var log bytes.Buffer
	res, err := Bench(context.Background(), Config{Job: psmode.Job{Config: psmode.Config{Workers: 2, Servers: 2, PartitionBytes: 64 << 10},
		Params: 200_000, Hidden: 16, Steps: 30, Log: &log}, Onset: 4, Limit: 3000})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	res.Table(&b)
	t.Log("\n" + b.String())
	for _, r := range res.Runs {
		if len(r.Times) != 30 {
			t.Errorf("%s: %d step times", r.Name(), len(r.Times))
		}
		if r.Accuracy < 0.3 {
			t.Errorf("%s: test accuracy %.3f: the MLP does not learn", r.Name(), r.Accuracy)
		}
	}
	png := filepath.Join(t.TempDir(), "ps.png")
	if err := res.Plot(png); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(png); err != nil || st.Size() < 1000 {
		t.Errorf("plot: %v", err)
	}
}
