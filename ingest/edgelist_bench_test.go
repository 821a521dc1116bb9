package ingest

import (
	"bufio"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/klauspost/compress/gzip"
)

var benchEdges = flag.Int("ingest.edges", 10_000_000, "edges in the generated BenchmarkParseEdgeList file")

var (
	benchOnce  sync.Once
	benchDir   string
	benchFiles map[string]string
)

// benchInput writes a SNAP-like edge list of *benchEdges random edges
// over 2.5M nodes, plain and gzip, once per test binary run.
func benchInput(b *testing.B) map[string]string {
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ingest-bench")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = dir
		benchFiles = map[string]string{"plain": filepath.Join(dir, "edges.txt"), "gzip": filepath.Join(dir, "edges.txt.gz")}
		pf, err := os.Create(benchFiles["plain"])
		if err != nil {
			b.Fatal(err)
		}
		gf, err := os.Create(benchFiles["gzip"])
		if err != nil {
			b.Fatal(err)
		}
		gz, _ := gzip.NewWriterLevel(gf, gzip.BestSpeed)
		pw := bufio.NewWriterSize(pf, 1<<20)
		gw := bufio.NewWriterSize(gz, 1<<20)
		rng := rand.New(rand.NewPCG(1, 2))
		pw.WriteString("# Directed graph: generated\n# FromNodeId\tToNodeId\n")
		var line []byte
		for range *benchEdges {
			line = strconv.AppendInt(line[:0], rng.Int64N(2_500_000), 10)
			line = append(line, '\t')
			line = strconv.AppendInt(line, rng.Int64N(2_500_000), 10)
			line = append(line, '\n')
			pw.Write(line)
			gw.Write(line)
		}
		for _, err := range []error{pw.Flush(), gw.Flush(), gz.Close(), pf.Close(), gf.Close()} {
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	if benchFiles == nil {
		b.Fatal("no benchmark input")
	}
	return benchFiles
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// BenchmarkParseEdgeList reads a generated file end to end with
// ReadEdgeList. MB/s counts the uncompressed text.
func BenchmarkParseEdgeList(b *testing.B) {
	files := benchInput(b)
	st, err := os.Stat(files["plain"])
	if err != nil {
		b.Fatal(err)
	}
	for _, kind := range []string{"plain", "gzip"} {
		b.Run(kind, func(b *testing.B) {
			b.SetBytes(st.Size())
			for b.Loop() {
				d, err := ReadEdgeList(files[kind], EdgeListOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if len(d.Edges.Src) != *benchEdges {
					b.Fatalf("%d edges, want %d", len(d.Edges.Src), *benchEdges)
				}
			}
			b.ReportMetric(float64(*benchEdges)*float64(b.N)/b.Elapsed().Seconds(), "edges/s")
		})
	}
	b.Run("relabel", func(b *testing.B) {
		b.SetBytes(st.Size())
		for b.Loop() {
			if _, err := ReadEdgeList(files["plain"], EdgeListOptions{Relabel: true}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(*benchEdges)*float64(b.N)/b.Elapsed().Seconds(), "edges/s")
	})
}
