package feature

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/cuda/cudatest"
)

func TestKernelsProgram(t *testing.T) { cudatest.CheckProgram(t, Kernels) }

// tableRow is node v's row in the tests' feature table: v*dim+f.
func tableRow(v int64, dim int, dst []float32) {
	for f := range dim {
		dst[f] = float32(v*int64(dim) + int64(f))
	}
}

// tableFill is a Gather fill from the feature table.
func tableFill(dim int) func(miss []int64, rows []float32) error {
	return func(miss []int64, rows []float32) error {
		for k, v := range miss {
			tableRow(v, dim, rows[k*dim:(k+1)*dim])
		}
		return nil
	}
}

// download copies rows from the device on the cache's stream (queued like
// a consumer's work) into a new pinned buffer, and returns it with the
// rows' view; the caller synchronizes the stream before reading.
func download(t *testing.T, c *DeviceFIFO, r DeviceRows) (*cuda.Host, []float32) {
	t.Helper()
	h, err := cuda.AllocHost(4 * r.Rows * r.Dim)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Free() })
	if err := cuda.CopyToHost(c.Stream(), h, 0, r.Ptr, 4*r.Rows*r.Dim); err != nil {
		t.Fatal(err)
	}
	if r.Rows == 0 {
		return h, nil
	}
	return h, unsafe.Slice((*float32)(unsafe.Pointer(&h.Bytes()[0])), r.Rows*r.Dim)
}

// cpuBatch runs one batch through the CPU FIFO as gnn/shard's Store does
// (lookup, and insert after a miss) and returns its misses.
func cpuBatch(f *FIFO, ids []int64, dim int) int {
	row := make([]float32, dim)
	misses := 0
	for _, v := range ids {
		if !f.Lookup(v, row) {
			misses++
			tableRow(v, dim, row)
			f.Insert(v, row)
		}
	}
	return misses
}

// TestDeviceFIFO: over the fake (or a GPU under WEFT_GPU_TESTS=1), a
// sequence of overlapping batches gathered without waiting in between
// (each batch's download queued behind it as a consumer's work would be,
// then the rows released), with 1 to 3 buffer sets, gives every id's row, and hits, inserts and evictions are the CPU
// FIFO's for the same sequence; the upload counters equal their analytic
// count. Capacities from none to the whole graph, rows of widths that take
// the kernels' vector and scalar paths, a batch with repeated ids (hits on
// rows inserted by the same batch), batches with more misses than the
// cache holds (the ring wraps within the batch), and empty batches.
func TestDeviceFIFO(t *testing.T) {
	cudatest.Devices(t, 1)
	const nodes = 300
	for _, dim := range []int{8, 3} {
		for _, capacity := range []int{0, 1, 7, 60, nodes} {
			c, err := NewDeviceFIFO(0, dim, capacity, 1+capacity%3, nodes)
			if err != nil {
				t.Fatal(err)
			}
			f, _ := NewFIFO(dim, capacity, nodes)
			r := rand.New(rand.NewPCG(uint64(dim), uint64(capacity)))
			var batches [][]int64
			var got []([]float32)
			var wantRow, wantIdx int64
			for b := range 12 {
				var ids []int64
				switch b {
				case 3: // empty
				case 5: // repeats: the second copy hits the row its first inserted
					ids = []int64{11, 12, 11, 13, 12, 11}
				default: // a window that slides, so batches overlap
					lo := int64(b * 20)
					for _, v := range r.Perm(80)[:10+r.IntN(60)] {
						ids = append(ids, (lo+int64(v))%nodes)
					}
					slices.Sort(ids)
					ids = slices.Compact(ids)
					r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
				}
				m := cpuBatch(f, ids, dim)
				wantRow += int64(4 * m * dim)
				wantIdx += int64(4 * len(ids))
				rows, err := c.Gather(context.Background(), ids, tableFill(dim))
				if err != nil {
					t.Fatal(err)
				}
				if rows.Rows != len(ids) || rows.Dim != dim {
					t.Fatalf("batch %d: %d x %d rows for %d ids", b, rows.Rows, rows.Dim, len(ids))
				}
				_, v := download(t, c, rows)
				if err := c.Release(rows); err != nil {
					t.Fatal(err)
				}
				batches, got = append(batches, ids), append(got, v)
			}
			if err := c.Stream().Synchronize(context.Background()); err != nil {
				t.Fatal(err)
			}
			want := make([]float32, dim)
			for b, ids := range batches {
				for j, v := range ids {
					tableRow(v, dim, want)
					if g := got[b][j*dim : (j+1)*dim]; !slices.Equal(g, want) {
						t.Fatalf("dim %d capacity %d batch %d: row %d (node %d) = %v, want %v", dim, capacity, b, j, v, g, want)
					}
				}
			}
			st, cs := c.Stats(), f.Stats()
			if st.Stats != cs || st.Batches != 12 || st.RowUpload != wantRow || st.IndexUpload != wantIdx || st.Misses() != cs.Lookups-cs.Hits {
				t.Errorf("dim %d capacity %d: device %+v, cpu %+v; want row upload %d, index upload %d", dim, capacity, st, cs, wantRow, wantIdx)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestDeviceFIFOFillError: a fill error is returned, empties the cache,
// and the next Gather starts over with correct rows; releasing rows
// twice is an error; with every buffer set held Gather waits for a
// release until its context ends; a closed cache refuses to gather.
func TestDeviceFIFOFillError(t *testing.T) {
	cudatest.Devices(t, 1)
	const dim = 4
	c, err := NewDeviceFIFO(0, dim, 10, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := c.Gather(ctx, []int64{1, 2, 3}, tableFill(dim))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Release(first); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("peer lost")
	if _, err := c.Gather(ctx, []int64{3, 4}, func([]int64, []float32) error { return boom }); !errors.Is(err, boom) || !strings.Contains(err.Error(), "1 missed rows") {
		t.Fatalf("fill error: %v", err)
	}
	rows, err := c.Gather(ctx, []int64{1, 4}, tableFill(dim))
	if err != nil {
		t.Fatal(err)
	}
	_, got := download(t, c, rows)
	if err := c.Stream().Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, 2*dim)
	tableRow(1, dim, want)
	tableRow(4, dim, want[dim:])
	if st := c.Stats(); !slices.Equal(got, want) || st.Lookups != 5 || st.Hits != 0 {
		t.Errorf("after the error: rows %v (want %v), stats %+v (the cache was emptied: no hit)", got, want, st)
	}
	if err := c.Release(rows); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(rows); err == nil || c.Release(DeviceRows{}) == nil {
		t.Errorf("rows released twice, or never gathered: %v", err)
	}
	// Both sets held: the third Gather waits for a release, until ctx ends.
	for range 2 {
		if _, err := c.Gather(ctx, []int64{5}, tableFill(dim)); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := c.Gather(short, []int64{6}, tableFill(dim)); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "released") {
		t.Errorf("gather with every buffer set held: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Gather(ctx, []int64{1}, tableFill(dim)); err == nil {
		t.Error("a closed cache gathered")
	}
	if _, err := NewDeviceFIFO(0, 0, 10, 2, 0); err == nil {
		t.Error("rows of width 0 accepted")
	}
	if _, err := NewDeviceFIFO(0, 4, 10, 0, 0); err == nil {
		t.Error("no buffer set accepted")
	}
}
