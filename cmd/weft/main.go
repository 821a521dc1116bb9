// Command weft is Weft's one binary: benchmarks of the collectives (bench),
// what a rank sees of its launch or what a dataset file holds (info), and
// graph datasets in the HDF5 layout of docs/FORMAT.md (gen, convert).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal cancels ctx and lets the command clean up; a
	// second one gets the default action and ends the process at once.
	context.AfterFunc(ctx, stop)
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
