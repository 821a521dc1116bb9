// Command weft is Weft's one binary: benchmarks of the collectives (bench)
// and what a rank sees of its launch (info). Later subcommands convert and
// partition graph datasets and train (see the README).
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
	root := &cobra.Command{
		Use:           "weft",
		Short:         "Weft: collectives, parameter servers and GNN pipelines for data-parallel training",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(benchCmd(), infoCmd())
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "weft:", err)
		os.Exit(1)
	}
}
