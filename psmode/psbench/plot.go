package psbench

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/weft-hpc/weft/internal/plotfile"
)

var runColors = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff},
}

// Plot draws step time over the run for every run, with PSLD's detections
// and decisions marked, into a PNG, SVG or PDF file.
func (res *Result) Plot(path string) error {
	p := plot.New()
	c := res.Config
	p.Title.Text = fmt.Sprintf("weft ps: %d workers, %d servers, %.0fM params; straggler server %d %gx from step %d",
		c.Workers, c.Servers, float64(c.Params)/1e6, c.Straggler, c.Factor, c.Onset)
	p.X.Label.Text = "step"
	p.Y.Label.Text = "step time (ms)"
	p.Add(plotter.NewGrid())
	for i, r := range res.Runs {
		pts := make(plotter.XYs, len(r.Times))
		for s, t := range r.Times {
			pts[s] = plotter.XY{X: float64(s + 1), Y: float64(t) / 1e6}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return fmt.Errorf("psbench: plot: %w", err)
		}
		l.Color = runColors[i%len(runColors)]
		l.Width = vg.Points(1.2)
		if !r.Straggler {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(l)
		p.Legend.Add(r.Name(), l)
		// Decisions on the PSLD line.
		marks := map[string]draw.GlyphDrawer{"straggler": draw.CrossGlyph{}, "rebalance": draw.TriangleGlyph{},
			"scale-out": draw.SquareGlyph{}, "scale-in": draw.SquareGlyph{}, "keep": draw.CircleGlyph{}, "rollback": draw.PyramidGlyph{}}
		byKind := map[string]plotter.XYs{}
		for _, e := range r.Events {
			if e.Step >= 1 && int(e.Step) <= len(r.Times) {
				byKind[e.Kind] = append(byKind[e.Kind], pts[e.Step-1])
			}
		}
		for _, kind := range []string{"straggler", "rebalance", "scale-out", "scale-in", "keep", "rollback"} {
			if len(byKind[kind]) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(byKind[kind])
			if err != nil {
				return fmt.Errorf("psbench: plot: %w", err)
			}
			sc.GlyphStyle.Shape = marks[kind]
			sc.GlyphStyle.Radius = vg.Points(4)
			sc.GlyphStyle.Color = runColors[i%len(runColors)]
			p.Add(sc)
			p.Legend.Add(fmt.Sprintf("%s (%s)", kind, r.Name()), sc)
		}
	}
	p.Legend.Top = true
	p.Y.Min = 0
	if err := plotfile.Save(p, 10*vg.Inch, 5*vg.Inch, path); err != nil {
		return fmt.Errorf("psbench: %w", err)
	}
	return nil
}
