package rendezvous

import (
	"strings"
	"testing"
)

// FuzzParseFile feeds arbitrary bytes to the rendezvous file decoder, which
// reads what another process (or a stale job) left on a shared filesystem.
func FuzzParseFile(f *testing.F) {
	f.Add([]byte(fileMagic + "\n" + fileURLKey + "http://127.0.0.1:1234\n" + fileTokenKey + Fingerprint("t") + "\n"))
	f.Add([]byte(fileMagic + "\n"))
	f.Add([]byte("garbage\x00\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		u, fp, err := parseFile(data)
		if err != nil {
			return
		}
		if u == "" || fp == "" {
			t.Fatalf("accepted a file without url or fingerprint: %q", data)
		}
		if strings.ContainsAny(u+fp, "\n") {
			t.Fatalf("a value spans lines: %q %q", u, fp)
		}
	})
}
