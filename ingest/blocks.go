package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// The parallel line parser. One goroutine (the caller's) reads big
// blocks, cuts each after its last newline and hands the whole lines to
// a pool of workers; each worker parses its block into its own result and
// counts the newlines it passed, so that an error found at line k of
// block b is reported at line 1 + (newlines in blocks before b) + k-1 of
// the file. Results are kept in file order and the first error in file
// order wins, whatever order the workers finish in.

const (
	defaultBlockSize = 4 << 20
	defaultMaxLine   = 1 << 20
)

// block is one block's result; T is what the format produces.
type block[T any] struct {
	val     T
	lines   int64 // newlines in the block
	errLine int64 // 1-based line within the block of err
	err     error
}

type blockConfig struct {
	name      string
	blockSize int // bytes read per block (a block may hold one more partial line)
	maxLine   int // longest line accepted, in bytes
	workers   int
}

// newBlockConfig fills in the defaults; size is the input size when
// known (-1 otherwise), so that small inputs get small buffers.
func newBlockConfig(name string, blockSize, maxLine, workers int, size int64) blockConfig {
	c := blockConfig{name: name, blockSize: blockSize, maxLine: maxLine, workers: workers}
	if c.blockSize <= 0 {
		c.blockSize = defaultBlockSize
	}
	if size >= 0 && int64(c.blockSize) > size {
		c.blockSize = max(int(size), 1)
	}
	if c.maxLine <= 0 {
		c.maxLine = defaultMaxLine
	}
	if c.workers <= 0 {
		c.workers = runtime.GOMAXPROCS(0)
	}
	return c
}

// prologueFunc sees the first whole-line blocks in order, on the reading
// goroutine, before any block is parsed: it may consume leading lines
// (comments, headers) and set up the parse. It returns the bytes it
// consumed (whole lines), the newlines among them, and done once it needs
// no more; on error, errLine is the 1-based line within data.
type prologueFunc func(data []byte, atEOF bool) (n int, lines int64, done bool, errLine int64, err error)

type blockJob[T any] struct {
	data []byte
	buf  []byte
	out  *block[T]
}

// parseBlocks reads r to the end (or to the first parse error) and
// returns the blocks in file order. parse must fill out from data, which
// holds whole lines (the last one may lack its newline at EOF) and must
// not be retained. Errors are *Error naming cfg.name and the line.
func parseBlocks[T any](r io.Reader, cfg blockConfig, pro prologueFunc, parse func(data []byte, out *block[T])) ([]*block[T], error) {
	maxBufs := 2*cfg.workers + 1
	jobs := make(chan blockJob[T])
	free := make(chan []byte, maxBufs)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				parse(j.data, j.out)
				if j.out.err != nil {
					stop.Store(true)
				}
				free <- j.buf // never blocks: at most maxBufs buffers exist
			}
		}()
	}
	allocated := 0
	getBuf := func() []byte {
		select {
		case b := <-free:
			return b[:0]
		default:
		}
		if allocated < maxBufs {
			allocated++
			return make([]byte, 0, cfg.blockSize)
		}
		return (<-free)[:0]
	}
	putBuf := func(b []byte) { free <- b }

	var (
		blocks  []*block[T]
		pending []byte // a partial line carried to the next block
		readErr error
		eof     bool
		proDone = pro == nil
	)
	for !eof && !stop.Load() {
		buf := append(getBuf(), pending...)
		cut := -1
		for {
			if cap(buf)-len(buf) < cfg.blockSize/2+1 {
				buf = slices.Grow(buf, cfg.blockSize)
			}
			start := len(buf)
			for len(buf) < cap(buf) {
				n, err := r.Read(buf[len(buf):cap(buf)])
				buf = buf[:len(buf)+n]
				if err == io.EOF {
					eof = true
					break
				}
				if err != nil {
					readErr = err
					break
				}
			}
			if eof || readErr != nil {
				break
			}
			if k := bytes.LastIndexByte(buf[start:], '\n'); k >= 0 {
				cut = start + k + 1
				break
			}
			if len(buf) > cfg.maxLine {
				break
			}
		}
		if readErr != nil { // what was read may end anywhere: parse none of it
			putBuf(buf)
			break
		}
		data := buf
		pending = pending[:0]
		if !eof {
			if cut < 0 { // one line longer than maxLine
				blocks = append(blocks, &block[T]{errLine: 1, err: fmt.Errorf("line longer than %d bytes", cfg.maxLine)})
				putBuf(buf)
				break
			}
			data = buf[:cut]
			pending = append(pending, buf[cut:]...)
		}
		if !proDone {
			n, lines, done, errLine, err := pro(data, eof)
			blocks = append(blocks, &block[T]{lines: lines, errLine: errLine, err: err})
			if err != nil {
				putBuf(buf)
				break
			}
			data = data[n:]
			proDone = done
		}
		if len(data) == 0 {
			putBuf(buf)
			continue
		}
		out := new(block[T])
		blocks = append(blocks, out)
		jobs <- blockJob[T]{data: data, buf: buf, out: out}
	}
	close(jobs)
	wg.Wait()

	line := int64(1)
	for _, b := range blocks {
		if b.err != nil {
			return nil, &Error{File: cfg.name, Line: line + b.errLine - 1, Err: b.err}
		}
		line += b.lines
	}
	if readErr != nil {
		if errors.Is(readErr, io.ErrUnexpectedEOF) {
			readErr = fmt.Errorf("truncated input: %w", readErr)
		}
		return nil, &Error{File: cfg.name, Err: readErr}
	}
	return blocks, nil
}

// skipLine returns the index just past the newline that ends the line
// containing data[i], or len(data).
func skipLine(data []byte, i int) int {
	if k := bytes.IndexByte(data[i:], '\n'); k >= 0 {
		return i + k + 1
	}
	return len(data)
}

// lineAt returns the line that starts at data[i], without its newline.
func lineAt(data []byte, i int) []byte {
	if k := bytes.IndexByte(data[i:], '\n'); k >= 0 {
		return data[i : i+k]
	}
	return data[i:]
}
