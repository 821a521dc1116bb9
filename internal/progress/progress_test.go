package progress

import (
	"bytes"
	"strings"
	"testing"
)

func TestBarDrawsAndFinishes(t *testing.T) {
	t.Setenv("WEFT_PROGRESS", "1")
	var buf bytes.Buffer
	b := start("reading edges.txt", 100, false, &buf)
	b.Report(50, 100)
	b.Report(100, 200) // a total learnt late
	b.Report(200, 200)
	b.Done()
	out := buf.String()
	if !strings.Contains(out, "reading edges.txt") || !strings.Contains(out, "200/200") {
		t.Fatalf("bar output %q lacks the description or the final count", out)
	}
}

func TestOffWhenNotATerminal(t *testing.T) {
	t.Setenv("WEFT_PROGRESS", "")
	// go test's stderr is a pipe or file, not a terminal.
	if Enabled() {
		t.Skip("stderr is a terminal here")
	}
	b := Count("x", 10)
	if b != nil {
		t.Fatal("a bar was made although stderr is not a terminal")
	}
	b.Report(1, 10) // a nil bar is a no-op
	b.Done()
	t.Setenv("WEFT_PROGRESS", "0")
	if Enabled() {
		t.Fatal("WEFT_PROGRESS=0 did not turn bars off")
	}
}
