package bench

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/weft-hpc/weft/internal/plotfile"
)

// typeName is nccl-tests' name for a type.
func typeName(cfg *Config) string {
	switch s := cfg.DType.String(); s {
	case "float32":
		return "float"
	case "float64":
		return "double"
	case "float16":
		return "half"
	default:
		return s
	}
}

func (cfg *Config) redopName() string {
	switch cfg.Op {
	case "allreduce", "reduce", "reducescatter":
		return cfg.RedOp.String()
	}
	return "none"
}

func (cfg *Config) rootCol() int {
	if cfg.Op == "broadcast" || cfg.Op == "reduce" {
		return cfg.Root
	}
	return -1
}

// Header writes the table's heading in nccl-tests' layout.
func Header(w io.Writer, cfg *Config) {
	fmt.Fprintf(w, "#%66s%s\n", "out-of-place", "                           in-place")
	fmt.Fprintf(w, "# %10s %12s %8s %6s %6s %9s %7s %7s %6s %9s %7s %7s %6s\n",
		"size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong")
	fmt.Fprintf(w, "# %10s %12s %8s %6s %6s %9s %7s %7s %6s %9s %7s %7s %6s\n",
		"(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "")
}

func wrongCol(w int64) string {
	if w < 0 {
		return "N/A"
	}
	return strconv.FormatInt(w, 10)
}

// Row writes one size.
func Row(w io.Writer, cfg *Config, r Result) {
	fmt.Fprintf(w, "  %10d %12d %8s %6s %6d", r.Bytes, r.Count, typeName(cfg), cfg.redopName(), cfg.rootCol())
	for _, run := range r.Runs {
		fmt.Fprintf(w, " %9s %7.2f %7.2f %6s", fmtTime(run.Micros), run.AlgBW, run.BusBW, wrongCol(run.Wrong))
	}
	fmt.Fprintln(w)
}

func fmtTime(us float64) string {
	if us >= 1e4 {
		return strconv.FormatFloat(us, 'f', 0, 64)
	}
	return strconv.FormatFloat(us, 'f', 2, 64)
}

// Footer writes the average bus bandwidth (out of place), as nccl-tests.
func Footer(w io.Writer, rs []Result) {
	sum := 0.0
	wrong := int64(0)
	for _, r := range rs {
		sum += r.Runs[0].BusBW
		for _, run := range r.Runs {
			if run.Wrong > 0 {
				wrong += run.Wrong
			}
		}
	}
	if len(rs) > 0 {
		fmt.Fprintf(w, "# Out of bounds values : %d %s\n", wrong, map[bool]string{true: "OK", false: "FAILED"}[wrong == 0])
		fmt.Fprintf(w, "# Avg bus bandwidth    : %.4g\n", sum/float64(len(rs)))
	}
}

// CSV writes the results as comma-separated values with a header row.
func CSV(w io.Writer, cfg *Config, ranks int, rs []Result) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"op", "ranks", "size_bytes", "count", "type", "redop", "root", "placement", "time_us", "algbw_gbs", "busbw_gbs", "wrong"})
	for _, r := range rs {
		for i, run := range r.Runs {
			cw.Write([]string{cfg.Op, strconv.Itoa(ranks), strconv.FormatInt(r.Bytes, 10), strconv.FormatInt(r.Count, 10),
				cfg.DType.String(), cfg.redopName(), strconv.Itoa(cfg.rootCol()), []string{"out-of-place", "in-place"}[i],
				strconv.FormatFloat(run.Micros, 'f', 3, 64), strconv.FormatFloat(run.AlgBW, 'f', 4, 64),
				strconv.FormatFloat(run.BusBW, 'f', 4, 64), strconv.FormatInt(run.Wrong, 10)})
		}
	}
	cw.Flush()
	return cw.Error()
}

// Plot draws bus bandwidth against size (log scale) into a PNG or SVG file.
func Plot(path string, cfg *Config, ranks int, rs []Result) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("weft %s, %d ranks, %v", cfg.Op, ranks, cfg.DType)
	p.X.Label.Text = "size (bytes)"
	p.Y.Label.Text = "bus bandwidth (GB/s)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	for i, name := range []string{"out-of-place", "in-place"} {
		var pts plotter.XYs
		for _, r := range rs {
			if r.Bytes > 0 && !math.IsNaN(r.Runs[i].BusBW) {
				pts = append(pts, plotter.XY{X: float64(r.Bytes), Y: r.Runs[i].BusBW})
			}
		}
		if len(pts) == 0 {
			continue
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("bench: plot: %w", err)
		}
		l.Color = plotColors[i]
		sc.Color = plotColors[i]
		p.Add(l, sc)
		p.Legend.Add(name, l, sc)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	if err := plotfile.Save(p, 7*vg.Inch, 4.5*vg.Inch, path); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}
