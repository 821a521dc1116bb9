// Package plotfile writes gonum plots to files for the benchmarks' --plot
// flags: the format from the file's extension (png, svg, pdf), written
// beside the target and renamed, so a failure leaves no half file.
package plotfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// Save draws p at width x height into path.
func Save(p *plot.Plot, width, height vg.Length, path string) error {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	wt, err := p.WriterTo(width, height, format)
	if err != nil {
		return fmt.Errorf("plot %s: %w (use .png, .svg or .pdf)", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".weft-plot-*")
	if err != nil {
		return fmt.Errorf("writing plot %s: %w", path, err)
	}
	if _, err = wt.WriteTo(tmp); err == nil {
		err = tmp.Close()
	} else {
		tmp.Close()
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing plot %s: %w", path, err)
	}
	return nil
}
