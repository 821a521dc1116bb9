package hdf5io

import (
	"fmt"
	"os"

	"github.com/weft-hpc/weft/hdf5"
)

// WriteOptions tunes WriteGraph. The zero value writes compressed
// (shuffle + deflate level 1) 1 MiB chunks and reports no progress.
type WriteOptions struct {
	// Level is the deflate level of the chunked datasets: 0 means the
	// default, 1 (fastest; ids and features shrink 2-4x), -1 turns
	// compression off, 2..9 trade write speed for size.
	Level int
	// ChunkBytes is the uncompressed size of a chunk; 0 means 1 MiB.
	// Chunks hold whole rows; a reader of a row range reads the chunks it
	// touches.
	ChunkBytes int
	// Progress, if non-nil, is called after each slab with the bytes
	// written so far and the total, from the goroutine that called
	// WriteGraph. Long conversions use it for a progress bar.
	Progress func(done, total int64)
}

func (o WriteOptions) level() int {
	switch {
	case o.Level < 0:
		return 0
	case o.Level == 0:
		return 1
	}
	return min(o.Level, 9)
}

func (o WriteOptions) dataset(t hdf5.Type, width int64) hdf5.DatasetOptions {
	cb := int64(o.ChunkBytes)
	if cb <= 0 {
		cb = 1 << 20
	}
	rows := max(cb/(width*int64(t.Size())), 1)
	return hdf5.DatasetOptions{ChunkRows: rows, Deflate: o.level()}
}

// slabBytes is how much WriteGraph hands libhdf5 per call (progress and
// lock granularity).
const slabBytes = 16 << 20

type writer struct {
	f           *hdf5.File
	opt         WriteOptions
	done, total int64
}

func writeData[T hdf5.Elem](w *writer, name string, data []T, width int64) error {
	t := hdf5.TypeOf[T]()
	rows := int64(len(data)) / width
	cols := int64(0)
	if name == DatasetFeat {
		cols = width
	}
	dopt := w.opt.dataset(t, width)
	if err := w.f.CreateDataset(name, t, rows, cols, dopt); err != nil {
		return err
	}
	// Whole chunks per slab, so no chunk is compressed twice.
	step := max(slabBytes/(width*int64(t.Size()))/dopt.ChunkRows, 1) * dopt.ChunkRows
	for r := int64(0); r < rows; r += step {
		end := min(r+step, rows)
		var err error
		if dopt.Deflate > 0 {
			err = hdf5.WriteChunks(w.f, name, r, data[r*width:end*width])
		} else {
			err = hdf5.WriteRows(w.f, name, r, data[r*width:end*width])
		}
		if err != nil {
			return err
		}
		w.done += (end - r) * width * int64(t.Size())
		if w.opt.Progress != nil {
			w.opt.Progress(w.done, w.total)
		}
	}
	return nil
}

// WriteGraph validates g (see Validate) and writes it to path in the
// layout of docs/FORMAT.md, creating or truncating the file. It blocks
// until the file is closed. On failure it removes the file it was writing.
//
// WriteGraph writes to path itself. To replace a file atomically, write to
// a temporary name in the same directory and os.Rename it afterwards.
func WriteGraph(path string, g *Graph, opt WriteOptions) (err error) {
	if g == nil {
		return &hdf5.Error{Op: "write", File: path, Err: bad(ErrInvalid, "nil graph")}
	}
	if err := g.Validate(); err != nil {
		return &hdf5.Error{Op: "write", File: path, Err: err}
	}
	f, err := hdf5.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	w := &writer{f: f, opt: opt}
	w.total = 8*int64(len(g.Indptr)) + 4*int64(len(g.Indices32)) + 8*int64(len(g.Indices64)) +
		4*int64(len(g.Feat)) + 8*int64(len(g.Label)) + 8*int64(len(g.OrigID)) + 8*int64(len(g.GraphID))
	for _, s := range g.Splits {
		w.total += 8 * int64(len(s))
	}
	for _, p := range g.Partitions {
		w.total += 4 * int64(len(p.Assign))
	}
	directed := int64(0)
	if g.Directed {
		directed = 1
	}
	for _, a := range []struct {
		name string
		v    int64
	}{{AttrFormatVersion, FormatVersion}, {AttrNumNodes, g.NumNodes}, {AttrNumEdges, g.NumEdges()}, {AttrDirected, directed}} {
		if err := f.SetAttr("/", a.name, a.v); err != nil {
			return err
		}
	}
	if err := writeData(w, DatasetIndptr, g.Indptr, 1); err != nil {
		return err
	}
	if g.Indices32 != nil {
		err = writeData(w, DatasetIndices, g.Indices32, 1)
	} else {
		err = writeData(w, DatasetIndices, g.Indices64, 1)
	}
	if err != nil {
		return err
	}
	if g.Feat != nil {
		if err := writeData(w, DatasetFeat, g.Feat, int64(g.FeatDim)); err != nil {
			return err
		}
	}
	if g.Label != nil {
		if err := writeData(w, DatasetLabel, g.Label, 1); err != nil {
			return err
		}
		if g.NumClasses > 0 {
			if err := f.SetAttr(DatasetLabel, AttrNumClasses, int64(g.NumClasses)); err != nil {
				return err
			}
		}
	}
	if g.OrigID != nil {
		if err := writeData(w, DatasetOrigID, g.OrigID, 1); err != nil {
			return err
		}
	}
	if g.GraphID != nil {
		if err := writeData(w, DatasetGraphID, g.GraphID, 1); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(g.Splits) {
		if err := writeData(w, GroupSplit+"/"+name, g.Splits[name], 1); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(g.Partitions) {
		if err := writePartition(w, name, g.Partitions[name]); err != nil {
			return err
		}
	}
	if w.opt.Progress != nil && w.done != w.total {
		w.opt.Progress(w.total, w.total)
	}
	return nil
}

func writePartition(w *writer, name string, p Partition) error {
	grp := GroupPartition + "/" + name
	if err := writeData(w, grp+"/assign", p.Assign, 1); err != nil {
		return err
	}
	if err := w.f.SetAttr(grp, AttrNumParts, int64(p.NumParts)); err != nil {
		return err
	}
	for _, k := range sortedKeys(p.Metrics) {
		if err := w.f.SetAttr(grp, k, p.Metrics[k]); err != nil {
			return err
		}
	}
	return nil
}

// WritePartition adds the partition name to the graph file at path, or
// replaces the one of that name, through Update: the file is never left
// half-written. It checks p against the file's num_nodes first.
func WritePartition(path, name string, p Partition) error {
	return WritePartitions(path, map[string]Partition{name: p})
}

// WritePartitions adds or replaces several partitions in one Update: all
// of them are in the file afterwards, or none.
func WritePartitions(path string, parts map[string]Partition) error {
	return writePartitions(path, parts, true)
}

// AddPartitions is WritePartitions without replacing: when the file has
// an object of one of the names under /partition (a partition, a broken
// one, or anything else), nothing is written and the error wraps
// ErrExist. The file is checked under Update's lock, so a partition
// that another writer added since the caller looked is not lost.
func AddPartitions(path string, parts map[string]Partition) error {
	return writePartitions(path, parts, false)
}

func writePartitions(path string, parts map[string]Partition, replace bool) error {
	sum, err := Stat(path)
	if err != nil {
		return err
	}
	for _, name := range sortedKeys(parts) {
		if err := parts[name].check(ErrInvalid, name, sum.NumNodes); err != nil {
			return &hdf5.Error{Op: "write partition", File: path, Object: GroupPartition + "/" + name, Err: err}
		}
	}
	return Update(path, func(f *hdf5.File) error {
		// The file may have changed since Stat: check it again under
		// the lock.
		if v, err := f.Attr("/", AttrNumNodes); err != nil {
			return err
		} else if v != sum.NumNodes {
			return &hdf5.Error{Op: "write partition", File: path, Err: fmt.Errorf("%w: the file was replaced meanwhile: %s = %v, the partitions have %d nodes", ErrInvalid, AttrNumNodes, v, sum.NumNodes)}
		}
		w := &writer{f: f}
		for _, name := range sortedKeys(parts) {
			grp := GroupPartition + "/" + name
			ok, err := f.Exists(grp)
			if err != nil {
				return err
			}
			if ok && !replace {
				return &hdf5.Error{Op: "write partition", File: path, Object: grp, Err: fmt.Errorf("%w (written by another process since this one looked; WritePartitions replaces it)", ErrExist)}
			}
			if ok {
				if err := f.Delete(grp); err != nil {
					return err
				}
			}
			if err := writePartition(w, name, parts[name]); err != nil {
				return err
			}
		}
		return nil
	})
}
