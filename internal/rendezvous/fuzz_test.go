package rendezvous

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
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
		p, err := parseFile(data)
		if err != nil {
			return
		}
		if p.url == "" || p.fingerprint == "" {
			t.Fatalf("accepted a file without url or fingerprint: %q", data)
		}
		if p.token != "" && Fingerprint(p.token) != p.fingerprint {
			t.Fatalf("accepted a token that does not match its fingerprint: %q", data)
		}
		if strings.ContainsAny(p.url+p.fingerprint+p.token, "\n") {
			t.Fatalf("a value spans lines: %+v", p)
		}
	})
}

// FuzzRequest feeds arbitrary bytes to the store as an HTTP request, as a
// stranger on the network could send them: the request parser, the token
// check, the key, wait and member decoders and the limits. Nothing may
// panic; a request without the token may change nothing; what is stored
// stays within the limits; every answer is one the client knows.
func FuzzRequest(f *testing.F) {
	join, _ := json.Marshal(member(1, 4, 7))
	for _, req := range []string{
		"PUT /v1/kv?key=k HTTP/1.1\r\nHost: x\r\nWeft-Job-Token: " + testToken + "\r\nContent-Length: 1\r\n\r\nv",
		"GET /v1/kv?key=rank%2F1&wait=1ms HTTP/1.1\r\nHost: x\r\nWeft-Job-Token: " + testToken + "\r\n\r\n",
		"POST /v1/join HTTP/1.1\r\nHost: x\r\nWeft-Job-Token: " + testToken + "\r\nContent-Length: " + fmt.Sprint(len(join)) + "\r\n\r\n" + string(join),
		"POST /v1/join HTTP/1.1\r\nHost: x\r\nWeft-Job-Token: \r\nContent-Length: 2\r\n\r\n{}",
		"PUT /v1/kv?key=rank/0 HTTP/1.1\r\nHost: x\r\nWeft-Job-Token: " + testToken + "\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
	} {
		f.Add([]byte(req))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := newServer(Config{Token: testToken, Size: 4, Limits: Limits{MaxKeys: 8, MaxBytes: 1 << 10}})
		s.maxWait = 0 // no Get waits: each input runs at once
		// Rank 0 and 2 have joined: joins and Gets meet a world being formed.
		for _, r := range []int{0, 2} {
			m := member(r, 4, 1)
			s.join(&m)
		}
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			return
		}
		authorized := len(req.Header[tokenHeader]) == 1 && req.Header.Get(tokenHeader) == testToken
		rec := httptest.NewRecorder()
		s.handler.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusNoContent, http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound,
			http.StatusMethodNotAllowed, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusInsufficientStorage:
		default:
			t.Fatalf("status %d for %q", rec.Code, data)
		}
		if rec.Header().Get(serverHeader) != serverMark {
			t.Fatalf("answer without %s", serverHeader)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if !authorized && (len(s.kv) != 2 || len(s.members) != 2 || s.failure != "") {
			t.Fatalf("a request without the token changed the store: %q", data)
		}
		if s.putKeys > 8 || s.putSize > 1<<10 || len(s.members) > 4 {
			t.Fatalf("the store holds %d keys of %d bytes and %d members", s.putKeys, s.putSize, len(s.members))
		}
		for r, m := range s.members {
			if r != m.Rank || m.Size != 4 || len(m.Info) > MaxInfoLen {
				t.Fatalf("admitted member %+v as rank %d", m, r)
			}
		}
	})
}
