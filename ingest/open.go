package ingest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// decompress returns a reader of the decompressed bytes of r: gzip and
// zstd are recognised by their magic bytes, anything else passes through.
// The returned close function releases the decoder (not r). size is the
// size of r or -1; plain is the size of the output when known, else -1.
func decompress(r io.Reader, size int64) (out io.Reader, done func(), plain int64, err error) {
	bsize := 256 << 10
	if size >= 0 && size < int64(bsize) {
		bsize = int(size) // bufio makes it at least 16
	}
	br := bufio.NewReaderSize(r, bsize)
	magic, _ := br.Peek(4) // a short or failing peek leaves the error to the first Read
	switch {
	case bytes.HasPrefix(magic, gzipMagic):
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, -1, fmt.Errorf("gzip: %w", err)
		}
		return z, func() { z.Close() }, -1, nil
	case bytes.HasPrefix(magic, zstdMagic):
		z, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, nil, -1, fmt.Errorf("zstd: %w", err)
		}
		return z, z.Close, -1, nil
	}
	return br, func() {}, size, nil
}

// sizeOf returns the size of r when it is a regular file or knows its
// size (bytes.Reader, strings.Reader), else -1.
func sizeOf(r io.Reader) int64 {
	switch v := r.(type) {
	case *os.File:
		if st, err := v.Stat(); err == nil && st.Mode().IsRegular() {
			return st.Size()
		}
	case interface{ Size() int64 }:
		return v.Size()
	}
	return -1
}

// progressReader counts the bytes read from r and reports them at most
// once per MiB, and once more at EOF.
type progressReader struct {
	r         io.Reader
	total     int64
	read      int64
	last      int64
	fn        func(read, total int64)
	reportEOF bool
}

func withProgress(r io.Reader, total int64, fn func(read, total int64)) io.Reader {
	if fn == nil {
		return r
	}
	return &progressReader{r: r, total: total, fn: fn}
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.read += int64(n)
	if p.read-p.last >= 1<<20 || (err == io.EOF && !p.reportEOF) {
		p.last = p.read
		p.reportEOF = err == io.EOF
		p.fn(p.read, p.total)
	}
	return n, err
}
