package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/hdf5io"
	"github.com/weft-hpc/weft/internal/progress"
	"github.com/weft-hpc/weft/internal/tmpfile"
)

// outFile is where a command writes its result: a temporary file beside
// the final path (package tmpfile names it .NAME.weft-tmp-PID-HOST, and the
// next run removes it if this process dies without doing so), renamed over
// the final path only when everything succeeded, removed on failure and at
// once on an interrupt, so no half-written file is ever left under the
// name the user asked for.
type outFile struct {
	final, tmp string
	t          *tmpfile.File
	stop       func() bool
}

func newOutFile(ctx context.Context, final string) (*outFile, error) {
	if final == "" {
		return nil, fmt.Errorf("no output file: give -o FILE.h5")
	}
	t, err := tmpfile.New(final, 0o666)
	if err != nil {
		return nil, fmt.Errorf("output %s: %w", final, err)
	}
	for _, p := range t.Removed {
		logStep("removed %s, left by a weft process that has ended", p)
	}
	o := &outFile{final: final, tmp: t.Path, t: t}
	o.stop = exitOnInterrupt(ctx, t.Abort, fmt.Sprintf("%s not written", final))
	return o, nil
}

// exitOnInterrupt arms the end of a command whose work does not watch
// ctx: when ctx is done (SIGINT, SIGTERM), cleanup runs (if not nil),
// "interrupted; what" is printed and the process exits with status 130 at
// once. stop disarms it; it returns false when the interrupt has begun,
// and the caller must then not go on (the process is exiting).
func exitOnInterrupt(ctx context.Context, cleanup func(), what string) (stop func() bool) {
	return context.AfterFunc(ctx, func() {
		if cleanup != nil {
			cleanup()
		}
		fmt.Fprintf(os.Stderr, "\nweft: interrupted; %s\n", what)
		os.Exit(130)
	})
}

// commit syncs the temporary file and renames it to the final name,
// holding the final name's writers' lock for the rename: a weft partition
// or encode writing into an existing file of that name finishes first, and
// then this file replaces it (its own write does not undo this one).
func (o *outFile) commit() error {
	if !o.stop() {
		select {} // the interrupt handler is removing the file and exiting
	}
	lk, err := tmpfile.LockFinal(o.final)
	if err != nil {
		o.t.Abort()
		return fmt.Errorf("output %s: %w", o.final, err)
	}
	defer lk.Unlock()
	if err := o.t.Commit(); err != nil {
		return fmt.Errorf("output %s: %w", o.final, err)
	}
	return nil
}

// abort removes the temporary file (after a failure).
func (o *outFile) abort() {
	if o.stop() {
		o.t.Abort()
	}
}

// dataset is what gen and convert hand to the writer.
type dataset struct {
	edges      *graph.EdgeList
	undirected bool // add reverse edges
	keepLoops  bool
	nodes      graph.NodeData
}

// writeDataset builds the CSR of d and writes the layout to path
// atomically, with a progress bar per step, and prints a one-line summary.
func writeDataset(ctx context.Context, path string, d *dataset, level int) error {
	out, err := newOutFile(ctx, path)
	if err != nil {
		return err
	}
	if err := buildAndWrite(out.tmp, d, level); err != nil {
		out.abort()
		return err
	}
	return out.commit()
}

func buildAndWrite(tmp string, d *dataset, level int) error {
	start := time.Now()
	var stats graph.BuildStats
	var bar *progress.Bar
	stage := ""
	g, err := graph.Build(d.edges, graph.BuildOptions{
		Symmetrize:    d.undirected,
		KeepSelfLoops: d.keepLoops,
		ConsumeInput:  true,
		Stats:         &stats,
		Progress: func(s string, done, total int64) {
			if s != stage {
				bar.Done()
				stage = s
				bar = progress.Count("csr: "+s, total)
			}
			bar.Report(done, total)
		},
	})
	bar.Done()
	if err != nil {
		return err
	}
	d.edges = nil
	built := time.Since(start)
	h := hdf5io.Graph{CSR: *g, NodeData: d.nodes}
	wbar := progress.Bytes("writing", -1)
	t := time.Now()
	err = hdf5io.WriteGraph(tmp, &h, hdf5io.WriteOptions{Level: level, Progress: wbar.Report})
	wbar.Done()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "weft: %d nodes, %d edges (%d duplicates, %d self loops dropped); csr %v, write %v, peak memory %s\n",
		g.NumNodes, g.NumEdges(), stats.Duplicates, stats.SelfLoops, built.Round(time.Millisecond),
		time.Since(t).Round(time.Millisecond), peakRSS())
	return nil
}

// peakRSS is the process's peak resident memory (getrusage's maxrss).
func peakRSS() string {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return "?"
	}
	return fmt.Sprintf("%.1f MiB", float64(ru.Maxrss)/1024)
}

// logStep prints one line of what a long command did, on stderr.
func logStep(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "weft: "+format+"\n", a...)
}

// writeEdgeText writes el as a text edge list, one "src dst" line per
// edge, atomically.
func writeEdgeText(ctx context.Context, path string, el *graph.EdgeList) error {
	out, err := newOutFile(ctx, path)
	if err != nil {
		return err
	}
	err = func() error {
		f, err := os.Create(out.tmp)
		if err != nil {
			return err
		}
		defer f.Close()
		bar := progress.Count("writing edges", int64(len(el.Src)))
		defer bar.Done()
		w := bufio.NewWriterSize(f, 1<<20)
		fmt.Fprintf(w, "# %d nodes, %d edges\n", el.NumNodes, len(el.Src))
		var line []byte
		for i := range el.Src {
			line = strconv.AppendInt(line[:0], el.Src[i], 10)
			line = append(line, ' ')
			line = strconv.AppendInt(line, el.Dst[i], 10)
			line = append(line, '\n')
			w.Write(line)
			if i&(1<<20-1) == 0 {
				bar.Report(int64(i), int64(len(el.Src)))
			}
		}
		if err := w.Flush(); err != nil {
			return err
		}
		return f.Close()
	}()
	if err != nil {
		out.abort()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return out.commit()
}

// batchMemory makes the garbage collector of a one-shot conversion keep
// the heap within 1.5x of the live data (GOGC=50) instead of 2x, unless
// the user set GOGC: peak memory is what limits the graphs a machine can
// convert, and the extra collections cost nothing measurable (10M edges:
// 0.70 s and 469 MiB at GOGC=100, 0.68 s and 386 MiB at 50).
func batchMemory() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
}
