package main

import (
	"encoding/csv"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBenchP2P runs weft bench latency and bandwidth on two goroutine
// ranks, as a table and as CSV, and checks that every size is there with a
// positive time or bandwidth and no wrong byte.
func TestBenchP2P(t *testing.T) {
	for _, op := range []string{"latency", "bandwidth"} {
		t.Run(op, func(t *testing.T) {
			out, err := weft(t, "bench", op, "--local", "2", "-b", "0", "-e", "64K", "-f", "16", "-n", "50")
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			unit := map[string]string{"latency": "(us)", "bandwidth": "(MB/s)"}[op]
			if !strings.Contains(out, unit) || !strings.Contains(out, "Out of bounds values : 0 OK") {
				t.Errorf("table lacks %s or the #wrong total:\n%s", unit, out)
			}
			var sizes []string
			for _, l := range strings.Split(out, "\n") {
				f := strings.Fields(l)
				if len(f) != 3 || strings.HasPrefix(l, "#") {
					continue
				}
				sizes = append(sizes, f[0])
				if f[2] != "0" {
					t.Errorf("#wrong %s at %s bytes", f[2], f[0])
				}
				if f[0] != "0" && (f[1] == "0.00" || strings.HasPrefix(f[1], "-")) {
					t.Errorf("%s bytes: %s %s", f[0], f[1], unit)
				}
			}
			if got := strings.Join(sizes, " "); got != "0 1 16 256 4096 65536" {
				t.Errorf("sizes %q, want 0 1 16 256 4096 65536:\n%s", got, out)
			}

			out, err = weft(t, "bench", op, "--local", "3", "-b", "8", "-e", "1K", "-f", "4", "-n", "20", "--csv")
			if err != nil {
				t.Fatalf("--csv: %v\n%s", err, out)
			}
			rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
			if err != nil {
				t.Fatalf("--csv: %v\n%s", err, out)
			}
			if len(rows) != 5 || strings.Join(rows[0], ",") != "op,ranks,size_bytes,iters,time_us,bandwidth_mbs,wrong" {
				t.Fatalf("--csv: %q", rows)
			}
			for _, r := range rows[1:] {
				if r[0] != op || r[1] != "3" || r[3] != "20" || r[6] != "0" || r[4] == "0.000" || r[5] == "0.00" {
					t.Errorf("--csv row %q", r)
				}
			}
		})
	}
}

// TestBenchFromZero: -b 0 measures 0 bytes, then goes on from one element
// (a size of 0 would never grow by -f).
func TestBenchFromZero(t *testing.T) {
	out, err := weft(t, "bench", "allreduce", "--local", "2", "-b", "0", "-e", "16", "-n", "5", "--csv")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var sizes []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Split(l, ","); len(f) > 8 && f[7] == "out-of-place" {
			sizes = append(sizes, f[2])
		}
	}
	if strings.Join(sizes, " ") != "0 4 8 16" {
		t.Errorf("sizes %v, want 0 4 8 16:\n%s", sizes, out)
	}
}

// TestBenchBadFlags: flags the benchmark cannot use are refused with an
// error that names them, before anything runs.
func TestBenchBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"latency", "--local", "2", "-d", "float64"}, "-d (--datatype) does not apply to latency"},
		{[]string{"bandwidth", "--local", "2", "-o", "max"}, "-o (--op) does not apply"},
		{[]string{"latency", "--local", "2", "-r", "1"}, "-r (--root)"},
		{[]string{"latency", "--local", "2", "-a", "0"}, "-a (--average)"},
		{[]string{"latency", "--local", "1"}, "--local 1: latency needs at least 2 ranks"},
		{[]string{"latency", "--local", "2", "-b", "1M", "-e", "1K"}, "-b 1048576 is larger than -e 1024"},
		{[]string{"bandwidth", "--local", "2", "-f", "0"}, `"0" for "-f, --stepfactor" flag`},
		{[]string{"bandwidth", "--local", "2", "-n", "-1"}, `"-1" for "-n, --iters" flag`},
		{[]string{"bandwidth", "--local", "2", "-w", "-1"}, `"-1" for "-w, --warmup" flag`},
		{[]string{"bandwidth", "--local", "2", "-e", "4G"}, "-e 4294967296"},
		{[]string{"latency", "--local", "2", "-b", "lots"}, "-b:"},
		{[]string{"pingpong", "--local", "2"}, `unknown command "pingpong" for "weft bench"`},
		{[]string{"bandwidth"}, "bandwidth needs at least 2 ranks, this world has 1"}, // no launcher: a world of one
	} {
		out, err := weft(t, append([]string{"bench"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("weft bench %s: error %v, want one with %q", strings.Join(c.args, " "), err, c.want)
		}
		if out != "" {
			t.Errorf("weft bench %s printed before refusing:\n%s", strings.Join(c.args, " "), out)
		}
	}
}

// weftChild runs the CLI as a child process (the test binary's main, see
// TestMain) with extra environment, for what depends on process-wide
// state: which device layer a process loads.
func weftChild(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), append([]string{"WEFT_CLI_MAIN=1", "WEFT_PROGRESS=0", "WEFT_CLI_ARGS=" + strings.Join(args, " ")}, env...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestBenchDevice: --device cuda runs the collectives on device buffers,
// checked like host ones (#wrong), through the path the communicator
// chooses: staged when ranks share a GPU, NCCL when each has its own (here
// the host-memory fake and the fake NCCL); without a GPU it says in one
// line what was looked for.
func TestBenchDevice(t *testing.T) {
	out, err := weftChild(t, []string{"WEFT_FAKE_GPUS="}, "bench", "allreduce", "--device", "cuda", "-e", "1K")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err == nil || len(lines) != 1 || !strings.Contains(out, "--device cuda: no GPU here") ||
		!strings.Contains(out, "libcudart.so.13") || !strings.Contains(out, "LD_LIBRARY_PATH") {
		t.Errorf("without a GPU: %v\n%s", err, out)
	}
	for _, c := range []struct {
		op, gpus, path string
	}{
		{"allreduce", "1", "staged: ranks 0 and 1 share a GPU"},
		{"allreduce", "2", "nccl"},
		{"allgather", "2", "nccl"},
		{"reducescatter", "1", "staged"},
		{"broadcast", "2", "nccl"},
		{"reduce", "1", "staged"},
		{"alltoall", "2", "nccl"},
	} {
		out, err := weftChild(t, []string{"WEFT_FAKE_GPUS=" + c.gpus}, "bench", c.op, "--device", "cuda", "--local", "2",
			"-b", "8", "-e", "4M", "-f", "64", "-n", "3", "-d", "float64")
		if err != nil {
			t.Fatalf("%s on %s fake GPUs: %v\n%s", c.op, c.gpus, err, out)
		}
		if !strings.Contains(out, "device buffers on cuda 0") || !strings.Contains(out, c.path) || !strings.Contains(out, "Out of bounds values : 0 OK") {
			t.Errorf("%s on %s fake GPUs: want path %q and no wrong element:\n%s", c.op, c.gpus, c.path, out)
		}
	}
	if _, err := weft(t, "bench", "allreduce", "--device", "tpu", "--local", "2"); err == nil || !strings.Contains(err.Error(), `--device "tpu": want cpu or cuda`) {
		t.Errorf("--device tpu: %v", err)
	}
	if _, err := weft(t, "bench", "latency", "--device", "cuda", "--local", "2"); err == nil || !strings.Contains(err.Error(), "--device cuda does not apply to latency") {
		t.Errorf("latency --device cuda: %v", err)
	}
}

// TestBenchTypes: -d takes every element type and -o every reduction the
// library has (the help lists them from the same lists), checked against
// the serial reference; an unknown one is refused naming the flag and the
// choices.
func TestBenchTypes(t *testing.T) {
	for _, c := range []struct{ op, dt, redop string }{
		{"allreduce", "int8", "sum"},
		{"allreduce", "uint16", "max"},
		{"reducescatter", "uint64", "bxor"},
		{"reduce", "complex128", "prod"},
		{"allreduce", "complex64", "sum"},
		{"allreduce", "int16", "land"},
		{"allreduce", "float64int", "minloc"},
		{"allgather", "uint32", "sum"},
	} {
		out, err := weft(t, "bench", c.op, "--local", "3", "-b", "8", "-e", "64K", "-f", "32", "-n", "3", "-d", c.dt, "-o", c.redop)
		if err != nil {
			t.Fatalf("-d %s -o %s: %v\n%s", c.dt, c.redop, err, out)
		}
		if !strings.Contains(out, "# "+c.dt+", op "+c.redop) || !strings.Contains(out, "Out of bounds values : 0 OK") {
			t.Errorf("%s -d %s -o %s: want the type in the header and no wrong element:\n%s", c.op, c.dt, c.redop, out)
		}
	}
	help, _ := weft(t, "bench", "--help")
	for _, want := range []string{"complex128, float32int", "int8, int16, uint16, uint32, uint64", "band, bor, bxor, minloc, maxloc"} {
		if !strings.Contains(help, want) {
			t.Errorf("weft bench --help lacks %q:\n%s", want, help)
		}
	}
	for _, c := range []struct{ flag, val, want string }{
		{"-d", "int128", `-d: collective: unknown data type "int128" (want one of [float32 float64`},
		{"-o", "mean", `-o: collective: unknown reduction "mean"`},
	} {
		out, err := weft(t, "bench", "allreduce", "--local", "2", c.flag, c.val)
		if err == nil || !strings.Contains(err.Error(), c.want) || out != "" {
			t.Errorf("%s %s: %v (printed %q), want an error with %q", c.flag, c.val, err, out, c.want)
		}
	}
}
