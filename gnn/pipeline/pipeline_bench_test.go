package pipeline_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/weft-hpc/weft/cuda/cudatest"
	"github.com/weft-hpc/weft/gnn/internal/gnntest"
	"github.com/weft-hpc/weft/gnn/pipeline"
	"github.com/weft-hpc/weft/gnn/shard"
)

// BenchmarkDeviceCache runs epochs of BGL's pipeline on one rank with
// the input rows handed to the device (Options.Device) and the features
// in host memory: an SBM graph of 50,000 nodes in communities of 100
// (97% of the edges inside), rows of 64 float32, half the nodes
// training, batches of 256 in the proximity order, fanouts 10,5 (a
// batch's input is about 6,000 rows, under the cache's 10,000); a device
// cache of none and of 20% of the rows. Train waits for each batch's rows to land (the compute a model
// would queue is not there). Per epoch it reports the bytes moved host to
// device (h2dB/epoch; their ratio between the two runs is the cache's
// saving), the device cache's hit ratio and each stage's busy share
// (EpochStats.BusyShare). Over the fake (the default) the times are the
// host's; under WEFT_GPU_TESTS=1 on a GPU:
//
//	go test -run '^$' -bench DeviceCache -benchtime 3x ./gnn/pipeline
func BenchmarkDeviceCache(b *testing.B) {
	cudatest.Devices(b, 1)
	const nodes, dim = 50000, 64
	g := gnntest.Graph(b, gnntest.Options{Nodes: nodes, Blocks: nodes / 100, DegIn: 8, DegOut: 0.25, FeatDim: dim, Seed: 1})
	sh, err := shard.FromGraph(g, "", 0, shard.LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, share := range []float64{0, 0.2} {
		b.Run(fmt.Sprintf("cache=%g", share), func(b *testing.B) {
			p, err := pipeline.New(ctx, sh, nil, pipeline.Options{BatchSize: 256, Fanouts: []int{10, 5}, Seed: 1,
				Order: pipeline.OrderProximity, ProfileBatches: -1,
				Device: &pipeline.DeviceOptions{Budget: int64(share*nodes) * dim * 4}})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			train := func(*pipeline.Batch) error { return p.Device().Stream().Synchronize(ctx) }
			var up, lookups, hits int64
			var busy [pipeline.NumStages]float64
			b.ResetTimer()
			for i := range b.N {
				st, err := p.RunEpoch(ctx, i, train)
				if err != nil {
					b.Fatal(err)
				}
				up += st.Device.Uploaded()
				lookups, hits = lookups+st.Device.Lookups, hits+st.Device.Hits
				for s := range busy {
					busy[s] += st.BusyShare(pipeline.Stage(s))
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(up)/n, "h2dB/epoch")
			b.ReportMetric(100*float64(hits)/float64(max(1, lookups)), "hit%")
			for s := range busy {
				b.ReportMetric(100*busy[s]/n, pipeline.Stage(s).String()+"-busy%")
			}
		})
	}
}
