package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weft-hpc/weft/hdf5"
	"github.com/weft-hpc/weft/hdf5io"
	"github.com/weft-hpc/weft/internal/mpitest"
	"github.com/weft-hpc/weft/internal/tmpfile"
)

// h5pyEdit changes the file at path with the Python statements code as a
// Python user would (f: the file opened by h5py read-write, np: numpy).
func h5pyEdit(t *testing.T, path, code string) {
	t.Helper()
	h5py(t)
	script := "import sys, h5py, numpy as np\nf = h5py.File(sys.argv[1], 'r+')\n" + code + "\nf.close()\n"
	if out, err := exec.Command("/usr/bin/python3", "-c", script, path).CombinedOutput(); err != nil {
		t.Fatalf("h5py: %v\n%s\n%s", err, code, out)
	}
}

// partitioned writes weft gen sbm's graph of n nodes, partitioned by
// weft partition -k 2 (bgl), into a new folder.
func partitioned(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "g.h5")
	mustWeft(t, "gen", "sbm", "--nodes", fmt.Sprint(n), "--blocks", "4", "-o", path)
	mustWeft(t, "partition", "-k", "2", "--sample-seeds", "1", path)
	return path
}

// wantFail runs weft args and wants an error that says every one of subs.
func wantFail(t *testing.T, subs []string, args ...string) {
	t.Helper()
	_, err := weft(t, args...)
	if err == nil {
		t.Errorf("weft %s succeeded, want an error saying %q", strings.Join(args, " "), subs)
		return
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("weft %s: %v\ndoes not say %q", strings.Join(args, " "), err, s)
		}
	}
}

// TestBadLabels (issue 29, items 1-3): one bad value in /node/label is an
// error naming the file and the element in every command that reads
// labels, and a legal but huge class count does not hang encode.
func TestBadLabels(t *testing.T) {
	needHDF5(t)
	path := partitioned(t, 3000)
	h5pyEdit(t, path, "f['node/label'][9] = 2**40")
	want := []string{path, "/node/label[9] = 1099511627776", "a label is -1 (unlabelled) or a class in [0, 65536)"}
	// It panicked: makeslice: len out of range.
	wantFail(t, want, "train", "gnn", "--data", path, "--ranks", "2", "--partition", "bgl", "--epochs", "1")
	wantFail(t, want, "encode", path)
	out, err := weft(t, "info", path)
	if err == nil || !strings.Contains(out, "/node/label[9] = 1099511627776") {
		t.Errorf("weft info: %v\n%s", err, out)
	}

	// A training label of 10^6 made encode run for ever (a probe of 10^6
	// classes); now it is refused as it is read.
	small := filepath.Join(t.TempDir(), "s.h5")
	mustWeft(t, "gen", "sbm", "--nodes", "400", "-o", small)
	h5pyEdit(t, small, "f['node/label'][int(f['split/train'][0])] = 10**6")
	wantFail(t, []string{small, "/node/label[", "] = 1000000"}, "encode", small)
	// A legal class count far above the samples: the probe is skipped
	// (it would learn 65536 classes from a few hundred nodes), the
	// encodings are written.
	h5pyEdit(t, small, "f['node/label'][int(f['split/train'][0])] = 65535")
	if out := mustWeft(t, "info", small); !strings.Contains(out, "classes     65536 (1 + the largest label)") {
		t.Errorf("weft info does not print the classes:\n%s", out)
	}
	mustWeft(t, "encode", "--dim", "2", "--steps", "2", small)
	if s, err := hdf5io.Stat(small); err != nil || !hasDataset(s, posEncPath) {
		t.Errorf("encode with 65536 classes wrote no encodings: %v", err)
	}
}

func hasDataset(s *hdf5io.Summary, name string) bool {
	f, err := hdf5.Open(s.Path)
	if err != nil {
		return false
	}
	defer f.Close()
	ok, _ := f.Exists(name)
	return ok
}

// TestBrokenSplitsAndPartitions (issue 29, item 3): a split mask three
// entries short, and a partition group that is there but broken, are
// named with what is wrong by every command that reads them, not taken as
// "no training nodes", "partition not found" or a reason to draw random
// training nodes.
func TestBrokenSplitsAndPartitions(t *testing.T) {
	needHDF5(t)
	base := partitioned(t, 3000)
	train := []string{"train", "gnn", "--ranks", "2", "--partition", "bgl", "--epochs", "1", "--data"}
	for _, tc := range []struct {
		desc, code string
		want       []string
		cmds       [][]string // each gets the file as its last argument
	}{
		{"mask 3 short", "m = np.zeros(2997, bool); m[:1800] = True; del f['split/train']; f['split/train'] = m",
			[]string{"/split/train", "a boolean mask of shape [2997]", "one entry per node: want [3000]"},
			[][]string{{"info"}, {"encode"}, train, {"partition", "--name", "x", "-k", "2"}}},
		{"num_parts missing", "del f['partition/bgl'].attrs['num_parts']", []string{"/partition/bgl", "missing attribute num_parts"}, [][]string{{"info"}, train}},
		{"num_parts 0", "f['partition/bgl'].attrs['num_parts'] = 0", []string{"/partition/bgl", "num_parts = 0 not in [1, 2147483647]"}, [][]string{{"info"}, train}},
		{"num_parts 2^40", "f['partition/bgl'].attrs['num_parts'] = 2**40", []string{"/partition/bgl", "num_parts = 1099511627776 not in"}, [][]string{{"info"}, train}},
		{"assign short", "a = f['partition/bgl/assign'][:]; del f['partition/bgl/assign']; f['partition/bgl/assign'] = a[:-1]",
			[]string{"/partition/bgl/assign", "shape [2999]", "want [3000]"}, [][]string{{"info"}, train}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "g.h5")
			copyFile(t, base, path)
			h5pyEdit(t, path, tc.code)
			for _, c := range tc.cmds {
				args := append(append([]string{}, c...), path)
				out, err := weft(t, args...)
				msg := ""
				if err != nil {
					msg = err.Error()
				}
				if c[0] == "info" {
					msg = out // the problems are listed, the error counts them
				}
				if err == nil || strings.Contains(msg, "not found") || strings.Contains(msg, "no training nodes") {
					t.Errorf("weft %s: %v", strings.Join(args, " "), err)
					continue
				}
				for _, w := range append(tc.want, path) {
					if !strings.Contains(msg, w) {
						t.Errorf("weft %s: %s\ndoes not say %q", strings.Join(args, " "), msg, w)
					}
				}
			}
		})
	}
}

// TestEncodeSIGTERM (issue 29, item 2): SIGTERM ends weft encode at once
// with status 130, the file as it was and nothing left beside it.
func TestEncodeSIGTERM(t *testing.T) {
	needHDF5(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "g.h5")
	mustWeft(t, "gen", "sbm", "--nodes", "3000", "-o", path)
	before, _ := os.ReadFile(path)
	var stderr mpitest.Buffer
	// A million walks per node: minutes of work after the position
	// encoding is logged.
	child := startChild(t, &stderr, "encode", "--anchors", "4", "--refine", "-1", "--method", "mc", "--walks", "1000000", "--probe=false", path)
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(stderr.String(), "position encoding") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	child.Process.Signal(syscall.SIGTERM)
	done := make(chan error)
	go func() { done <- child.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		child.Process.Kill()
		t.Fatalf("weft encode ignored SIGTERM\n%s", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(stderr.String(), "interrupted; "+path+" left as it was") {
		t.Errorf("weft encode after SIGTERM: %v, want exit status 130 and the file named\n%s", err, stderr.String())
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Error("the interrupted encode changed the file")
	}
	onlyFiles(t, dir, "g.h5")
}

// TestWritersTakeTurns (issue 29, item 10): two writers of one file at
// once both keep their change. A writer that finds the file's lock held
// waits, says so, and adds its partition to what the holder wrote; two
// weft partition processes started together both succeed with both
// partitions in the file; with one name and no --force, the second is
// refused, not silently replacing the first.
func TestWritersTakeTurns(t *testing.T) {
	needHDF5(t)
	path := partitioned(t, 2000)
	dir := filepath.Dir(path)
	args := func(name string) []string {
		return []string{"partition", "--algo", "random", "-k", "2", "--halo-hops", "-1", "--sample-seeds", "1", "--name", name, path}
	}

	// The test holds the lock, as a writer between its copy and its
	// rename: weft partition computes, then waits.
	lk, err := tmpfile.LockFinal(path)
	if err != nil {
		t.Fatal(err)
	}
	var stderr mpitest.Buffer
	child := startChild(t, &stderr, args("waited")...)
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(stderr.String(), "waiting for another writer of "+path) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(stderr.String(), "pid "+fmt.Sprint(os.Getpid())) {
		t.Errorf("the waiting writer does not name the holder:\n%s", stderr.String())
	}
	// The holder's write (in place here), then its release.
	f, err := hdf5.OpenRW(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.CreateDataset("/partition/held/assign", hdf5.Int32, 2000, 0, hdf5.DatasetOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := hdf5.WriteRows(f, "/partition/held/assign", 0, make([]int32, 2000)); err != nil {
		t.Fatal(err)
	}
	if err := f.SetAttr("/partition/held", hdf5io.AttrNumParts, int64(1)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	lk.Unlock()
	if err := child.Wait(); err != nil {
		t.Fatalf("the waiting writer: %v\n%s", err, stderr.String())
	}
	wantParts(t, path, "bgl", "held", "waited")

	// Two processes at once, three times.
	for round := range 3 {
		a, b := fmt.Sprintf("a%d", round), fmt.Sprintf("b%d", round)
		var ea, eb bytes.Buffer
		ca, cb := startChild(t, &ea, args(a)...), startChild(t, &eb, args(b)...)
		if err := ca.Wait(); err != nil {
			t.Errorf("round %d, writer %s: %v\n%s", round, a, err, ea.String())
		}
		if err := cb.Wait(); err != nil {
			t.Errorf("round %d, writer %s: %v\n%s", round, b, err, eb.String())
		}
		wantParts(t, path, a, b)
	}
	// One name, no --force: one writes it, the other is refused.
	var ea, eb bytes.Buffer
	ca, cb := startChild(t, &ea, args("same")...), startChild(t, &eb, args("same")...)
	errA, errB := ca.Wait(), cb.Wait()
	if (errA == nil) == (errB == nil) {
		t.Errorf("two writers of /partition/same without --force: %v, %v; want one refused\n%s\n%s", errA, errB, ea.String(), eb.String())
	}
	if refused := ea.String() + eb.String(); !strings.Contains(refused, "/partition/same") || !strings.Contains(refused, "already exists") {
		t.Errorf("the refusal does not say /partition/same already exists:\n%s", refused)
	}
	wantParts(t, path, "same")
	onlyFiles(t, dir, "g.h5")
	if _, err := weft(t, "info", path); err != nil {
		t.Errorf("weft info: %v", err)
	}
}

func wantParts(t *testing.T, path string, names ...string) {
	t.Helper()
	s, err := hdf5io.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, ok := s.Partitions[n]; !ok {
			t.Errorf("partition %s lost: the file has %v", n, s.Partitions)
		}
	}
}

// TestByteOrderMark (issue 29, item 11): an edge list saved with a UTF-8
// byte-order mark converts with its first edge.
func TestByteOrderMark(t *testing.T) {
	needHDF5(t)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "e.txt"), filepath.Join(dir, "g.h5")
	os.WriteFile(in, []byte("\xef\xbb\xbf0 1\n1 2\n"), 0o644)
	mustWeft(t, "convert", in, "-o", out)
	s, err := hdf5io.Stat(out)
	if err != nil || s.NumNodes != 3 || s.NumEdges != 2 {
		t.Errorf("converted: %+v, %v; want 3 nodes and 2 edges", s, err)
	}
}

// TestUnknownCommands (issue 29, item 12): a word that names no command
// is a usage error listing what exists, exit status 2; the command alone
// still shows its help.
func TestUnknownCommands(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"gen", "nosuch"}, `unknown command "nosuch" for "weft gen"; want one of: csl, fmnist-knn, geo, grid, rmat, sbm`},
		{[]string{"help", "nosuch"}, `unknown help topic "nosuch"; the commands of "weft": bench, completion, convert, encode, gen, gpus, help, info, partition, ps, train`},
		{[]string{"help", "gen", "nosuch"}, `unknown help topic "gen nosuch"; the commands of "weft gen": csl,`},
		{[]string{"completion", "nosuch"}, `unknown command "nosuch" for "weft completion"; want one of: bash, fish, powershell, zsh`},
		{[]string{"nosuch"}, `unknown command "nosuch" for "weft"; want one of: bench,`},
		{[]string{"train", "nosuch"}, `unknown command "nosuch" for "weft train"; want one of: mlp, cnn, gnn`},
		{[]string{"bench", "nosuch"}, `unknown command "nosuch" for "weft bench"; want one of: allreduce,`},
		{[]string{"ps", "nosuch"}, `unknown command "nosuch" for "weft ps"; want one of: bench`},
	} {
		_, err := weft(t, tc.args...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("weft %s: %v, want a usage error saying %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
	for _, args := range [][]string{{"gen"}, {"help", "gen"}, {"help", "bench", "allreduce"}, {"completion"}, {}} {
		if out, err := weft(t, args...); err != nil || out == "" {
			t.Errorf("weft %s: %v, %d bytes out; want its help", strings.Join(args, " "), err, len(out))
		}
	}
	// The exit status, from a real process.
	var stderr bytes.Buffer
	err := startChild(t, &stderr, "gen", "nosuch").Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "want one of: csl") {
		t.Errorf("weft gen nosuch: %v, want exit status 2 and the list\n%s", err, stderr.String())
	}
}
