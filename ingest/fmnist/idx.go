package fmnist

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
)

// IDX is the file format of MNIST and Fashion-MNIST: a big-endian header
// of two zero bytes, a type byte (0x08 = unsigned byte), a dimension
// count, one uint32 per dimension, then the data in row-major order.
// Images are magic 2051 (0x00000803: ubyte, 3 dimensions: count, rows,
// cols) and labels 2049 (0x00000801: ubyte, 1 dimension: count).
const (
	idxMagicImages = 2051
	idxMagicLabels = 2049
	// idxMaxBytes bounds what a header may claim, so a corrupt header
	// cannot ask for an absurd allocation.
	idxMaxBytes = 1 << 34
)

// idxData is a decoded IDX file, possibly truncated to its first records.
type idxData struct {
	dims []int // dims[0] is the record count in the header
	data []byte
}

// decodeIDX reads an unsigned-byte IDX stream named name (for messages)
// whose magic must be want, and returns the header and the data of the
// first min(limit, count) records (all of them if limit <= 0). Errors name
// the file and say what is wrong: bad magic, short file, sizes too large.
// The data buffer grows as bytes arrive, so a header that claims more than
// the stream holds costs no large allocation.
func decodeIDX(r io.Reader, name string, want uint32) (*idxData, error) {
	return decodeIDXLimit(r, name, want, 0)
}

func decodeIDXLimit(r io.Reader, name string, want uint32, limit int) (*idxData, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("fmnist: idx %s: short file: header: %w", name, err)
	}
	magic := binary.BigEndian.Uint32(hdr[:])
	if magic != want {
		return nil, fmt.Errorf("fmnist: idx %s: bad magic %d (0x%08x), want %d", name, magic, magic, want)
	}
	nd := int(hdr[3])
	dimb := make([]byte, 4*nd)
	if _, err := io.ReadFull(r, dimb); err != nil {
		return nil, fmt.Errorf("fmnist: idx %s: short file: %d dimensions: %w", name, nd, err)
	}
	dims := make([]int, nd)
	rec := int64(1) // bytes per record
	for i := range dims {
		dims[i] = int(binary.BigEndian.Uint32(dimb[4*i:]))
		if i > 0 {
			if d := int64(dims[i]); d > 0 && rec > idxMaxBytes/d {
				return nil, fmt.Errorf("fmnist: idx %s: record size too large (dims %v)", name, dims[:i+1])
			}
			rec *= int64(dims[i])
		}
	}
	count := int64(0)
	if nd > 0 {
		count = int64(dims[0])
	}
	if limit > 0 {
		count = min(count, int64(limit))
	}
	if rec > 0 && count > idxMaxBytes/rec {
		return nil, fmt.Errorf("fmnist: idx %s: data too large (dims %v)", name, dims)
	}
	size := count * rec
	var buf bytes.Buffer
	buf.Grow(int(min(size, 1<<26)))
	got, err := buf.ReadFrom(io.LimitReader(r, size))
	if err != nil {
		return nil, fmt.Errorf("fmnist: idx %s: %w", name, err)
	}
	if got < size {
		return nil, fmt.Errorf("fmnist: idx %s: short file: %d of %d data bytes (dims %v)", name, got, size, dims)
	}
	return &idxData{dims: dims, data: buf.Bytes()}, nil
}

// openIDX opens an IDX file, gunzipping it when it starts with the gzip
// magic, and calls fn with the stream.
func openIDX(open func() (io.ReadCloser, error), name string, fn func(io.Reader) error) error {
	f, err := open()
	if err != nil {
		return fmt.Errorf("fmnist: idx: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	var r io.Reader = br
	if b, err := br.Peek(2); err == nil && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("fmnist: idx %s: %w", name, err)
		}
		defer zr.Close()
		r = zr
	}
	return fn(r)
}
