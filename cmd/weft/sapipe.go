package main

import (
	"context"
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/weft-hpc/weft/internal/plotfile"
	"github.com/weft-hpc/weft/nn"
	"github.com/weft-hpc/weft/sapipe"
)

// withBenchSapipe adds "weft bench sapipe" under the collective benchmark
// command (cobra routes a subcommand's name before the parent's argument).
func withBenchSapipe(bench *cobra.Command) *cobra.Command {
	bench.AddCommand(benchSapipeCmd())
	return bench
}

// variant is a named trainer configuration of the comparison.
type variant struct {
	name string
	cfg  sapipe.Config
}

// parseVariants reads "bsp,pipesgd,sapipe" and the ablations
// sapipe-nowp (no weight prediction), sapipe-nodc (no delay compensation)
// and sapipe-plain (partial staleness alone) over base.
func parseVariants(s string, base sapipe.Config) ([]variant, error) {
	var vs []variant
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		c := base
		switch name {
		case "bsp":
			c.Mode = sapipe.BSP
		case "pipesgd":
			c.Mode = sapipe.PipeSGD
		case "sapipe":
			c.Mode = sapipe.SAPipe
		case "sapipe-nowp":
			c.Mode, c.Predict = sapipe.SAPipe, false
		case "sapipe-nodc":
			c.Mode, c.Compensate = sapipe.SAPipe, false
		case "sapipe-plain":
			c.Mode, c.Predict, c.Compensate = sapipe.SAPipe, false, false
		default:
			return nil, fmt.Errorf("unknown mode %q (bsp, pipesgd, sapipe, sapipe-nowp, sapipe-nodc, sapipe-plain)", name)
		}
		vs = append(vs, variant{name, c})
	}
	return vs, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func benchSapipeCmd() *cobra.Command {
	var (
		o                            trainOpts
		est, modes, ranksList, links string
		plotTo, seedsList            string
		lambda, ratio                float64
		steps, accEpochs, accRanks   int
		mode                         string
	)
	cmd := &cobra.Command{
		Use:   "sapipe",
		Short: "Compare bsp, pipesgd and sapipe on Fashion-MNIST: throughput, exposed communication, accuracy",
		Long: `Train the same model in each mode, one after the other in this run, on
in-process goroutine ranks (a NewLocal communicator: the ranks share this
machine's cores, and their allreduce is memory copies), and print:

 1. throughput: for each rank count and link, samples/s, per-step compute,
    communication, exposed communication and optimizer-update time; the
    link is unthrottled (0) or emulated by collective.WithEmulatedLink at a rate in
    Gbit/s, or "auto": calibrated so that one step's allreduce takes
    --comm-ratio times the compute of a BSP step;
 2. accuracy: test accuracy after --acc-epochs epochs for each mode and
    seed, on --acc-ranks ranks over the last link, and, with --plot,
    test accuracy against training time.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			if err := o.finish(est, lambda); err != nil {
				return err
			}
			vs, err := parseVariants(modes, o.cfg)
			if err != nil {
				return err
			}
			ranks, err := parseInts(ranksList)
			if err != nil {
				return err
			}
			seeds, err := parseInts(seedsList)
			if err != nil {
				return err
			}
			train, test, err := nn.LoadFashionMNIST(dataDir, dataLimit)
			if err != nil {
				return err
			}
			o.skip = o.cfg.Warmup + 5
			o.epochs = 1
			o.maxSteps = o.skip + steps

			fmt.Fprintf(out, "# weft bench sapipe: %s, batch %d per rank, %s lr %g, %d timed steps after %d, in-process ranks (NewLocal)\n",
				o.model, o.batch, o.optim, o.lr, steps, o.skip)
			fmt.Fprintf(out, "# %5s %12s %-13s %10s %8s %8s %8s %8s %8s %8s %7s\n",
				"ranks", "link", "mode", "samples/s", "step_ms", "compute", "comm", "exposed", "exp%", "update", "vs_bsp")
			lastLink := map[int]float64{} // the accuracy comparison's link
			for _, n := range ranks {
				for _, link := range strings.Split(links, ",") {
					gbps, err := resolveLink(ctx, strings.TrimSpace(link), ratio, o, n, train)
					if err != nil {
						return err
					}
					lastLink[n] = gbps
					var bspRate, bspUpdate float64
					for _, v := range vs {
						r := o
						r.cfg, r.ranks, r.gbps = v.cfg, n, gbps
						res, err := runTraining(ctx, r, train, nil)
						if err != nil {
							return fmt.Errorf("%s: %w", v.name, err)
						}
						s := res.Stats
						k := float64(max(s.Steps, 1))
						rate := float64(s.Samples*n) / s.Wall.Seconds()
						if v.cfg.Mode == sapipe.BSP {
							bspRate, bspUpdate = rate, ms(s.Update)/k
						}
						vsBSP := "-"
						if bspRate > 0 {
							vsBSP = fmt.Sprintf("%.2fx", rate/bspRate)
						}
						fmt.Fprintf(out, "  %5d %12s %-13s %10.0f %8.3f %8.3f %8.3f %8.3f %7.1f%% %8.3f %7s\n",
							n, gbpsString(gbps), v.name, rate, ms(s.Wall)/k, ms(s.Compute)/k, ms(s.Comm)/k, ms(s.Exposed)/k,
							100*s.Exposed.Seconds()/s.Wall.Seconds(), ms(s.Update)/k, vsBSP)
						if v.cfg.Mode == sapipe.SAPipe && bspRate > 0 && (v.cfg.Predict || v.cfg.Compensate) {
							fmt.Fprintf(out, "  %5s %12s %-13s compensation overhead: update %.3f ms vs bsp %.3f ms = %.1f%% of a step\n",
								"", "", "", ms(s.Update)/k, bspUpdate, 100*(ms(s.Update)/k-bspUpdate)/(ms(s.Wall)/k))
						}
					}
				}
			}
			if accEpochs <= 0 {
				return nil
			}
			gbps, ok := lastLink[accRanks]
			if !ok {
				all := strings.Split(links, ",")
				gbps, err = resolveLink(ctx, strings.TrimSpace(all[len(all)-1]), ratio, o, accRanks, train)
				if err != nil {
					return err
				}
			}
			fmt.Fprintf(out, "\n# accuracy: %d epochs, %d ranks, link %s, test set of %d\n", accEpochs, accRanks, gbpsString(gbps), test.Len())
			fmt.Fprintf(out, "# %-13s %s %8s %7s %8s\n", "mode", strings.Repeat("   seed", len(seeds)), "mean", "sd", "train_s")
			curves := map[string][]sapipe.Point{}
			var names []string
			for _, v := range vs {
				var accs []float64
				var secs float64
				for si, seed := range seeds {
					r := o
					r.cfg, r.ranks, r.gbps, r.seed = v.cfg, accRanks, gbps, uint64(seed)
					r.epochs, r.maxSteps, r.skip, r.eval = accEpochs, 0, 0, true
					res, err := runTraining(ctx, r, train, test)
					if err != nil {
						return fmt.Errorf("%s seed %d: %w", v.name, seed, err)
					}
					accs = append(accs, res.Final)
					secs += res.Stats.Wall.Seconds()
					if si == 0 {
						curves[v.name] = res.Curve
						names = append(names, v.name)
					}
				}
				mean, sd := meanSD(accs)
				fmt.Fprintf(out, "  %-13s", v.name)
				for _, a := range accs {
					fmt.Fprintf(out, " %6.2f", 100*a)
				}
				fmt.Fprintf(out, " %8.2f %7.2f %8.1f\n", 100*mean, 100*sd, secs/float64(len(seeds)))
			}
			if plotTo != "" {
				title := fmt.Sprintf("weft bench sapipe: %s, %d ranks, link %s, seed %d", o.model, accRanks, gbpsString(gbps), seeds[0])
				if err := plotAccuracy(plotTo, title, curves, names); err != nil {
					return err
				}
				fmt.Fprintf(out, "# wrote %s\n", plotTo)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.model, "model", "mlp", "mlp or cnn")
	f.StringVar(&modes, "modes", "bsp,pipesgd,sapipe", "modes to compare, among bsp, pipesgd, sapipe, sapipe-nowp, sapipe-nodc, sapipe-plain")
	f.StringVar(&ranksList, "ranks", "2,4", "in-process rank counts")
	f.StringVar(&links, "net-gbps", "0,auto", "links to compare: 0 (unthrottled), a rate in Gbit/s, or auto")
	floatFlag(f, &ratio, "comm-ratio", 1, above0(1e6), "auto link: one step's allreduce takes this many times a BSP step's compute")
	intFlag(f, &steps, "steps", "", 100, 1, maxCount, "timed steps per mode")
	intFlag(f, &accEpochs, "acc-epochs", "", 5, 0, maxCount, "epochs of the accuracy comparison (0: skip it)")
	intFlag(f, &accRanks, "acc-ranks", "", 2, 1, maxLocal, "ranks of the accuracy comparison")
	f.StringVar(&seedsList, "seeds", "1,2,3", "seeds of the accuracy comparison")
	f.StringVar(&plotTo, "plot", "", "draw test accuracy against training time into this .png/.svg file")
	addTrainFlags(cmd, &o, &mode, &est, &lambda)
	return cmd
}

// resolveLink turns a --net-gbps entry into Gbit/s; "auto" measures a BSP
// step's compute on n ranks, unthrottled, and sizes the link so that the
// step's allreduce (2(n-1)/n of the parameters on the wire) takes ratio
// times as long.
func resolveLink(ctx context.Context, link string, ratio float64, o trainOpts, n int, train *nn.Dataset) (float64, error) {
	if link != "auto" {
		g, err := strconv.ParseFloat(link, 64)
		if err != nil {
			return 0, fmt.Errorf("--net-gbps: %q: %w", link, err)
		}
		return g, nil
	}
	r := o
	r.cfg.Mode, r.ranks, r.gbps, r.every = sapipe.BSP, n, 0, 0
	res, err := runTraining(ctx, r, train, nil)
	if err != nil {
		return 0, fmt.Errorf("calibrating the link: %w", err)
	}
	compute := res.Stats.Compute.Seconds() / float64(max(res.Stats.Steps, 1))
	wire := 2 * float64(n-1) / float64(n) * float64(res.Bytes)
	return wire * 8 / (ratio * compute) / 1e9, nil
}

func meanSD(xs []float64) (float64, float64) {
	var m, v float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	if len(xs) > 1 {
		v /= float64(len(xs) - 1)
	}
	return m, math.Sqrt(v)
}

var accColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}

// plotAccuracy draws test accuracy against training time, one line per
// name, into path (.png, .svg or .pdf), written beside it and renamed.
func plotAccuracy(path, title string, curves map[string][]sapipe.Point, names []string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "training time (s)"
	p.Y.Label.Text = "test accuracy (%)"
	p.Add(plotter.NewGrid())
	for i, name := range names {
		pts := plotter.XYs{}
		for _, c := range curves[name] {
			pts = append(pts, plotter.XY{X: c.Wall, Y: 100 * c.Acc})
		}
		if len(pts) == 0 {
			continue
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		col := parseHex(accColors[i%len(accColors)])
		l.Color, sc.Color = col, col
		p.Add(l, sc)
		p.Legend.Add(name, l, sc)
	}
	p.Legend.Top = false
	p.Legend.Left = false
	return plotfile.Save(p, 7*vg.Inch, 4.5*vg.Inch, path)
}

func parseHex(s string) color.Color {
	v, _ := strconv.ParseUint(strings.TrimPrefix(s, "#"), 16, 32)
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}
