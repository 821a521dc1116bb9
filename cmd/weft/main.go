// Command weft is Weft's one binary. Its commands, as newRoot adds them:
//
//   - bench OP measures a collective (allreduce, allgather, broadcast,
//     reduce, reducescatter, alltoall) the way nccl-tests does, or messages
//     between two ranks (latency, bandwidth) the way the OSU
//     micro-benchmarks do, under a launcher or with --local N goroutine
//     ranks; bench sapipe compares
//     bsp, pipesgd and sapipe training on Fashion-MNIST, bench ps
//     (also weft ps bench) static key assignment against PSLD, and bench
//     kernels the bandwidth of the CUDA kernels on a GPU beside a
//     device-to-device copy and PyTorch's equivalents.
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
//   - train mlp and train cnn train on Fashion-MNIST with package sapipe's
//     data-parallel trainer (bsp, pipesgd or sapipe); train gnn trains
//     GraphSAGE, GCN, SP-GNN or an MLP baseline on a partitioned graph
//     through the BGL data pipeline.
//   - gpus lists this host's NVIDIA GPUs through NVML: memory, PCIe bus
//     ids, NVLink and P2P topology.
//
// The exit status is 0 on success, 1 for an error, 2 for a command line
// that names a command or help topic weft does not have (the message
// lists what exists) or a bad WEFT_LOG, and 130 when SIGINT or SIGTERM
// ended the command.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
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
		var ue usageError
		switch {
		case ctx.Err() != nil:
			os.Exit(130) // interrupted, as a shell reports it
		case errors.As(err, &ue):
			os.Exit(2) // a command line naming nothing weft has
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
	root.InitDefaultCompletionCmd()
	strictCommands(root)
	root.SetHelpCommand(helpCmd(root))
	return root
}

// usageError is a command line that names a command or help topic weft
// does not have: main exits with status 2 for it, the status of a usage
// error, after the message that lists what exists.
type usageError struct{ error }

// strictCommands makes every command with subcommands (root, gen,
// completion, bench, train, ps) refuse a word that names none of them,
// with a usageError listing what it has. cobra's default is to print the
// help of a command that does not run itself and exit 0, so a typo went
// unnoticed by scripts (weft gen nosuch).
func strictCommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		strictCommands(sub)
	}
	if !c.HasSubCommands() {
		return
	}
	args := c.Args
	c.Args = func(c *cobra.Command, a []string) error {
		if len(a) > 0 && !slices.Contains(c.ValidArgs, a[0]) {
			return unknownCommand(c, a[0])
		}
		if args != nil {
			return args(c, a)
		}
		return nil
	}
	if !c.Runnable() {
		// Alone, the command shows its help, as before.
		c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	}
}

// commandWords lists what may follow c: its arguments (bench's
// operations, train's models) and its commands.
func commandWords(c *cobra.Command) []string {
	words := slices.Clone(c.ValidArgs)
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() || sub.Name() == "help" {
			words = append(words, sub.Name())
		}
	}
	return words
}

func unknownCommand(c *cobra.Command, word string) error {
	return usageError{fmt.Errorf("unknown command %q for %q; want one of: %s", word, c.CommandPath(), strings.Join(commandWords(c), ", "))}
}

// helpCmd is `weft help [command]`: cobra's, except that a topic weft
// does not have is a usageError listing the commands where it went wrong.
func helpCmd(root *cobra.Command) *cobra.Command {
	find := func(args []string) (*cobra.Command, error) {
		c, rest, err := root.Find(args)
		if err != nil || c == nil {
			c, rest = root, args
		}
		for _, w := range rest {
			if !slices.Contains(c.ValidArgs, w) {
				return nil, usageError{fmt.Errorf("unknown help topic %q; the commands of %q: %s", strings.Join(args, " "), c.CommandPath(), strings.Join(commandWords(c), ", "))}
			}
		}
		return c, nil
	}
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help provides help for any command in the application.\nSimply type weft help [path to command] for full details.",
		Args: func(_ *cobra.Command, args []string) error {
			_, err := find(args)
			return err
		},
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := find(args)
			if err != nil {
				return err
			}
			return c.Help()
		},
	}
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
