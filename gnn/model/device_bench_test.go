package model

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkTransposeBlock is the host-side price of the deterministic
// scatter on a device: building a block's transpose each batch (a block
// of 10,240 destinations with 10 neighbours each among 60,000 sources,
// GraphSAGE's first layer at batch 1024 and fanouts 10,10), next to the
// CPU layer's own mean aggregation over it at 128 features, which the
// device takes off the host.
//
//	go test -run '^$' -bench TransposeBlock -benchtime 20x ./gnn/model
func BenchmarkTransposeBlock(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const nsrc, nd, fan = 60000, 10240, 10
	blk := Block{NumSrc: nsrc, NumDst: nd, Indptr: make([]int64, nd+1)}
	for d := range nd {
		for range fan {
			blk.Indices = append(blk.Indices, int32(r.IntN(nsrc)))
		}
		blk.Indptr[d+1] = int64(len(blk.Indices))
	}
	tptr, tidx := make([]int64, nsrc+1), make([]int32, len(blk.Indices)+nd)
	b.Run("transpose", func(b *testing.B) {
		for b.Loop() {
			transposeBlock(&blk, true, tptr, tidx)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(blk.Indices)), "ns/edge")
	})
	const dim = 128
	x, agg := make([]float32, nsrc*dim), make([]float32, nd*dim)
	b.Run("cpu-mean-128", func(b *testing.B) {
		for b.Loop() {
			meanRows(&blk, x, dim, true, agg)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(blk.Indices)), "ns/edge")
	})
}
