package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/hdf5io"
	"github.com/weft-hpc/weft/internal/progress"
)

// fileInfo prints the summary of a graph dataset file: sizes, degree
// statistics, node data, splits, partitions and the datasets themselves;
// then, unless quick, it reads every value and lists what ReadGraph and
// training would refuse under "problems", and returns an error when there
// is any.
func fileInfo(w io.Writer, path string, quick bool) error {
	r, err := hdf5io.OpenGraph(path)
	if err != nil {
		return err
	}
	defer r.Close()
	s := r.Summary()
	blk, err := r.Indptr()
	if err != nil {
		return err
	}
	ds := (&graph.CSR{NumNodes: s.NumNodes, Indptr: blk}).DegreeStats()
	dir := "undirected (both directions stored)"
	if s.Directed {
		dir = "directed"
	}
	fmt.Fprintf(w, "file        %s (%s, format version %d)\n", s.Path, bytesString(s.FileBytes), s.FormatVersion)
	fmt.Fprintf(w, "graph       %d nodes, %d edges, %s, %s ids\n", s.NumNodes, s.NumEdges, dir, s.IndexType)
	fmt.Fprintf(w, "out-degree  min %d, median %d, mean %.2f, p90 %d, p99 %d, max %d; %d isolated\n",
		ds.Min, ds.Median, ds.Mean, ds.P90, ds.P99, ds.Max, ds.Isolated)
	var node []string
	if s.HasFeat {
		node = append(node, fmt.Sprintf("features %d x %d float32", s.NumNodes, s.FeatDim))
	}
	if s.HasLabel {
		if s.NumClasses > 0 {
			node = append(node, fmt.Sprintf("labels (num_classes %d)", s.NumClasses))
		} else {
			node = append(node, "labels")
		}
	}
	if s.HasOrigID {
		node = append(node, "original ids")
	}
	if s.HasGraphID {
		node = append(node, "graph ids (a set of graphs)")
	}
	if len(node) == 0 {
		node = []string{"none"}
	}
	fmt.Fprintf(w, "node data   %s\n", strings.Join(node, ", "))
	broken := func(group string) []string {
		var names []string
		for _, obj := range slices.Sorted(maps.Keys(s.Broken)) {
			if name, ok := strings.CutPrefix(obj, group+"/"); ok {
				names = append(names, name)
			}
		}
		return names
	}
	if len(s.Splits) == 0 && len(broken(hdf5io.GroupSplit)) == 0 {
		fmt.Fprintf(w, "splits      none\n")
	}
	for _, name := range slices.Sorted(maps.Keys(s.Splits)) {
		fmt.Fprintf(w, "split       %-6s %d nodes (%.1f%%)\n", name, s.Splits[name], 100*float64(s.Splits[name])/float64(max(1, s.NumNodes)))
	}
	for _, name := range broken(hdf5io.GroupSplit) {
		fmt.Fprintf(w, "split       %-6s broken (see problems)\n", name)
	}
	if len(s.Partitions) == 0 && len(broken(hdf5io.GroupPartition)) == 0 {
		fmt.Fprintf(w, "partitions  none\n")
	}
	for _, name := range broken(hdf5io.GroupPartition) {
		fmt.Fprintf(w, "partition   %s: broken (see problems)\n", name)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Partitions)) {
		p := s.Partitions[name]
		var m []string
		for _, k := range slices.Sorted(maps.Keys(p.Metrics)) {
			m = append(m, fmt.Sprintf("%s %.4g", k, p.Metrics[k]))
		}
		fmt.Fprintf(w, "partition   %s: %d parts %s\n", name, p.NumParts, strings.Join(m, ", "))
	}
	for _, obj := range slices.Sorted(maps.Keys(s.Ignored)) {
		fmt.Fprintf(w, "ignored     %s: %s\n", obj, s.Ignored[obj])
	}
	fmt.Fprintf(w, "datasets\n")
	for _, d := range s.Datasets {
		c := "contiguous"
		if d.ChunkRows > 0 {
			c = fmt.Sprintf("chunks of %d rows", d.ChunkRows)
			if d.Deflate >= 0 {
				c += fmt.Sprintf(", deflate %d", d.Deflate)
			}
			if d.Shuffle {
				c += ", shuffle"
			}
		}
		fmt.Fprintf(w, "  %-26s %-8s %-14s %10s  %s\n", d.Name, d.Type, d.Shape(), bytesString(d.StorageBytes), c)
	}
	if quick {
		if len(s.Broken) > 0 {
			fmt.Fprintf(w, "problems    %d (values not read: --quick)\n", len(s.Broken))
			for _, obj := range slices.Sorted(maps.Keys(s.Broken)) {
				fmt.Fprintf(w, "  %v\n", s.Broken[obj])
			}
			return fmt.Errorf("%s: %s, listed above", path, plural(len(s.Broken), "problem"))
		}
		return nil
	}
	bar := progress.Bytes("checking", -1)
	problems := r.Check(bar.Report)
	bar.Done()
	if len(problems) == 0 {
		if s.HasLabel {
			// The classes every reader of the labels takes
			// (docs/FORMAT.md, "Labels").
			c, err := r.Classes()
			if err != nil {
				return err
			}
			how := "1 + the largest label"
			if s.NumClasses > 0 {
				how = "the num_classes attribute"
			}
			fmt.Fprintf(w, "classes     %d (%s)\n", c, how)
		}
		fmt.Fprintf(w, "check       every value read: no problems\n")
		return nil
	}
	fmt.Fprintf(w, "problems    %d (ReadGraph and train refuse these)\n", len(problems))
	for _, p := range problems {
		fmt.Fprintf(w, "  %v\n", p)
	}
	return fmt.Errorf("%s: %s, listed above", path, plural(len(problems), "problem"))
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func bytesString(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
