package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/hdf5io"
)

// fileInfo prints the summary of a graph dataset file: sizes, degree
// statistics, node data, splits, partitions and the datasets themselves.
func fileInfo(w io.Writer, path string) error {
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
		node = append(node, "labels")
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
	if len(s.Splits) == 0 {
		fmt.Fprintf(w, "splits      none\n")
	}
	for _, name := range slices.Sorted(maps.Keys(s.Splits)) {
		fmt.Fprintf(w, "split       %-6s %d nodes (%.1f%%)\n", name, s.Splits[name], 100*float64(s.Splits[name])/float64(max(1, s.NumNodes)))
	}
	if len(s.Partitions) == 0 {
		fmt.Fprintf(w, "partitions  none\n")
	}
	for _, name := range slices.Sorted(maps.Keys(s.Partitions)) {
		p := s.Partitions[name]
		var m []string
		for _, k := range slices.Sorted(maps.Keys(p.Metrics)) {
			m = append(m, fmt.Sprintf("%s %.4g", k, p.Metrics[k]))
		}
		fmt.Fprintf(w, "partition   %s: %d parts %s\n", name, p.NumParts, strings.Join(m, ", "))
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
	return nil
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
