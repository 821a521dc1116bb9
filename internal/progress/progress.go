// Package progress shows progress bars for the long steps of the CLI
// (reading, sorting, writing) on standard error, and nothing at all when
// standard error is not a terminal (batch jobs, pipes, CI), so logs stay
// clean. WEFT_PROGRESS=1 forces bars on, WEFT_PROGRESS=0 off.
//
// A thin wrapper over github.com/schollz/progressbar: callers get one small
// type whose Report method fits the Progress callbacks of graph, hdf5io
// and ingest.
package progress

import (
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Bar is one step's progress. The zero value and a nil *Bar do nothing.
type Bar struct {
	mu  sync.Mutex
	bar *progressbar.ProgressBar
}

// Enabled reports whether bars are drawn.
func Enabled() bool {
	switch os.Getenv("WEFT_PROGRESS") {
	case "1":
		return true
	case "0":
		return false
	}
	return term.IsTerminal(int(os.Stderr.Fd()))
}

// Bytes starts a bar that counts bytes up to total (-1: unknown).
func Bytes(desc string, total int64) *Bar { return start(desc, total, true, os.Stderr) }

// Count starts a bar that counts items (edges, nodes) up to total.
func Count(desc string, total int64) *Bar { return start(desc, total, false, os.Stderr) }

func start(desc string, total int64, bytes bool, w io.Writer) *Bar {
	if !Enabled() {
		return nil
	}
	return &Bar{bar: progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(bytes),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionOnCompletion(func() { io.WriteString(w, "\n") }),
	)}
}

// Report sets the bar to done of total; it may be called from any
// goroutine and with a total learnt late.
func (b *Bar) Report(done, total int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if total > 0 && total != b.bar.GetMax64() {
		b.bar.ChangeMax64(total)
	}
	b.bar.Set64(done)
}

// Done finishes the bar.
func (b *Bar) Done() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bar.Finish()
}
