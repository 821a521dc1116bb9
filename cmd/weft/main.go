// Command weft is Weft's one binary. Its commands, as newRoot adds them:
//
//   - bench OP measures a collective (allreduce, allgather, broadcast,
//     reduce, reducescatter, alltoall) the way nccl-tests does, or messages
//     between two ranks (latency, bandwidth) the way the OSU
//     micro-benchmarks do, under a launcher or with --local N goroutine
//     ranks; bench sapipe compares
//     bsp, pipesgd and sapipe training on Fashion-MNIST, and bench ps
//     (also weft ps bench) static key assignment against PSLD.
//   - info summarises a graph dataset file, or without one shows how this
//     rank was launched.
//   - gen generates a graph dataset (rmat, sbm, geo, csl, grid, fmnist-knn)
//     in the HDF5 layout of docs/FORMAT.md.
//   - convert turns an edge list, an OGB raw folder or NumPy arrays into
//     that layout.
//   - partition splits a dataset's graph into parts (BGL, METIS or random),
//     stores the assignment in the file and measures cross-partition
//     sampling traffic.
//   - encode precomputes SP-GNN position and structure encodings into a
//     dataset file.
//   - ps trains a Fashion-MNIST MLP through parameter servers (static
//     assignment or PSLD), workers and servers from one launch.
//   - train mlp and train cnn train on Fashion-MNIST with package pipe's
//     data-parallel trainer (bsp, pipesgd or sapipe); train gnn trains
//     GraphSAGE, GCN, SP-GNN or an MLP baseline on a partitioned graph
//     through the BGL data pipeline.
//   - gpus lists this host's NVIDIA GPUs through NVML: memory, PCIe bus
//     ids, NVLink and P2P topology.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal cancels ctx and lets the command clean up; a
	// second one gets the default action and ends the process at once.
	context.AfterFunc(ctx, stop)
	if err := setLogLevel(os.Getenv("WEFT_LOG")); err != nil {
		fmt.Fprintln(os.Stderr, "weft:", err)
		os.Exit(2)
	}
	if err := newRoot().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "weft:", err)
		if ctx.Err() != nil {
			os.Exit(130) // interrupted, as a shell reports it
		}
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "weft",
		Short:         "Weft: collectives, parameter servers and GNN pipelines for data-parallel training",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(withBenchSapipe(benchCmd()), infoCmd(), genCmd(), convertCmd(), partitionCmd(), encodeCmd(), psCmd(), trainCmd(), gpusCmd())
	return root
}

// setLogLevel makes slog's default logger, where the libraries' notes go
// (gnn/pipeline's, for one), write to stderr at the level WEFT_LOG names
// (warn when empty), as collective's own logger does: an info note must not
// reach the terminal of a user who asked for warnings.
func setLogLevel(name string) error {
	if name == "" {
		name = "warn"
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.ToUpper(name))); err != nil {
		return fmt.Errorf("WEFT_LOG=%q: want error, warn, info or debug", name)
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	return nil
}
