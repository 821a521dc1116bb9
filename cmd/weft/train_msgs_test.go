package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainGNNRankMessages: goroutine ranks that all refuse the same
// thing say it once, and a rank count that does not match the partition
// is the error, not the communicator failures that follow it.
func TestTrainGNNRankMessages(t *testing.T) {
	needHDF5(t)
	f := filepath.Join(t.TempDir(), "sbm.h5")
	mustWeft(t, "gen", "sbm", "--nodes", "600", "-o", f)
	mustWeft(t, "partition", "--algo", "random", "-k", "2", "--halo-hops", "-1", "--sample-seeds", "1", f)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "gnn", "--data", f, "--ranks", "3", "--epochs", "1"}, "--partition: 3 ranks need one"},
		{[]string{"train", "gnn", "--data", f, "--ranks", "3", "--partition", "random", "--epochs", "1"}, `--partition "random": has 2 parts but 3 ranks run`},
	} {
		_, err := weft(t, tc.args...)
		if err == nil || !strings.HasPrefix(err.Error(), "train gnn: "+strings.SplitN(tc.want, ":", 2)[0]) ||
			!strings.Contains(err.Error(), tc.want) || strings.Count(err.Error(), "train gnn:") != 1 {
			t.Errorf("weft %s:\n%v\nwant %q once, first", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
