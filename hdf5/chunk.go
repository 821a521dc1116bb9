package hdf5

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"runtime"
	"sync"
	"unsafe"
)

// Compressed datasets are written chunk by chunk: Go shuffles and
// deflates the chunks on all cores (compress/flate's fast levels are
// several times quicker than zlib's, and libhdf5 would use one core), then
// hands each finished chunk to H5Dwrite_chunk. The bytes are what libhdf5's
// own shuffle + deflate filters produce, so any HDF5 reader decodes them.

// WriteChunks is WriteRows for a dataset that CreateDataset made with
// ChunkRows and Deflate: Go shuffles and deflates the chunks on all cores
// and stores each with H5Dwrite_chunk. The rows [start, start+count)
// (count is len(src)/cols) must begin on a chunk boundary and end on one
// or at the dataset's last row; any other transfer, a dataset stored
// with other filters than shuffle + deflate, and a big-endian host go
// through WriteRows (libhdf5's filters, one core), so the result is the
// same. It blocks until the rows are written; src stays the caller's.
func WriteChunks[T Elem](f *File, name string, start int64, src []T) error {
	info, err := f.Stat(name)
	if err != nil {
		return WriteRows(f, name, start, src)
	}
	w, c := info.Width(), info.ChunkRows
	end := start + int64(len(src))/w
	if !littleEndian || info.Type != TypeOf[T]() || c <= 0 || info.Deflate <= 0 || !info.Shuffle || info.filters != 2 ||
		int64(len(src))%w != 0 || start < 0 || start%c != 0 || end > info.Rows || (end%c != 0 && end != info.Rows) {
		return WriteRows(f, name, start, src)
	}
	return writeChunks(f, name, start, src, w, c, info.Deflate)
}

// littleEndian: the direct path writes memory bytes as the file's
// little-endian types.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// shuffle is HDF5's shuffle filter: byte j of element i goes to
// j*n + i, for n elements of size bytes each.
func shuffle(dst, src []byte, size int) {
	n := len(src) / size
	for j := 0; j < size; j++ {
		out := dst[j*n : (j+1)*n]
		for i := range out {
			out[i] = src[i*size+j]
		}
	}
}

// encodeChunk returns the stored form of one chunk: raw, padded to a
// whole chunk, shuffled, deflated.
func encodeChunk(raw []byte, chunkBytes, size, level int) ([]byte, error) {
	full := raw
	if len(raw) < chunkBytes {
		full = make([]byte, chunkBytes)
		copy(full, raw)
	}
	sh := make([]byte, chunkBytes)
	shuffle(sh, full, size)
	var out bytes.Buffer
	out.Grow(chunkBytes/2 + 64)
	w, err := zlib.NewWriterLevel(&out, level)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(sh); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// writeChunks writes rows [r0, r0+len(data)/width) of a chunked,
// compressed dataset; r0 is a multiple of chunkRows.
func writeChunks[T Elem](f *File, name string, r0 int64, data []T, width, chunkRows int64, level int) error {
	size := int(TypeOf[T]().Size())
	var raw []byte
	if len(data) > 0 {
		raw = unsafe.Slice((*byte)(unsafe.Pointer(&data[0])), len(data)*size)
	}
	rowBytes := int(width) * size
	chunkBytes := int(chunkRows) * rowBytes
	nchunks := (len(raw) + chunkBytes - 1) / chunkBytes
	enc := make([][]byte, nchunks)
	errs := make([]error, nchunks)
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), nchunks) {
		wg.Go(func() {
			for c := range next {
				end := min((c+1)*chunkBytes, len(raw))
				enc[c], errs[c] = encodeChunk(raw[c*chunkBytes:end], chunkBytes, size, level)
			}
		})
	}
	for c := range nchunks {
		next <- c
	}
	close(next)
	wg.Wait()
	for c := range nchunks {
		if errs[c] != nil {
			return &Error{Op: "write", File: f.Path(), Object: name, Err: errs[c]}
		}
		if err := f.writeChunk(name, r0+int64(c)*chunkRows, enc[c]); err != nil {
			return err
		}
	}
	return nil
}
