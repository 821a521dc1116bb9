//go:build linux

package shm

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzHello feeds arbitrary bytes to the decoder of the segment name a
// peer sends over the network.
func FuzzHello(f *testing.F) {
	var b bytes.Buffer
	writeHello(&b, "weft-123-0011223344556677")
	f.Add(b.Bytes())
	f.Add([]byte("WSHM\x05../..x"))
	f.Add([]byte("GET / HTTP/1.1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		name, err := readHello(bytes.NewReader(data))
		if err != nil {
			return
		}
		if strings.ContainsAny(name, "/\x00") || !strings.HasPrefix(name, "weft-") || len(name) > maxName {
			t.Fatalf("accepted segment name %q", name)
		}
	})
}
