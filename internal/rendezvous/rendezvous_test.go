package rendezvous

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	testToken = "job-42-secret"
	testSize  = 3 // ranks of startServer's world
)

// listen binds a loopback port; tests never leave 127.0.0.1.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func startServer(t *testing.T, logf func(string, ...any)) *Server {
	t.Helper()
	s := Serve(listen(t), Config{Token: testToken, Logf: logf, Size: testSize, SizeVar: "WEFT_WORLD_SIZE", Who: "pid 1 on h0"})
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// waiting returns how many Gets the server holds for key.
func (s *Server) waiting(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ws := s.waiters[key]; ws != nil {
		return ws.n
	}
	return 0
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// logRecorder collects what the server logs.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (l *logRecorder) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logRecorder) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func TestPutGetAcrossGoroutines(t *testing.T) {
	s := startServer(t, nil)
	const ranks = 8
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, ranks)
	for r := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := NewClient(s.URL(), testToken)
			// Put after a rank-dependent delay, so that some Gets wait.
			time.Sleep(time.Duration(r) * 5 * time.Millisecond)
			if err := c.Put(ctx, fmt.Sprintf("addr/%d", r), []byte(fmt.Sprintf("10.0.0.%d:%d", r, 5000+r))); err != nil {
				errs <- err
				return
			}
			for peer := range ranks {
				got, err := c.Get(ctx, fmt.Sprintf("addr/%d", peer))
				if err != nil {
					errs <- err
					return
				}
				if want := fmt.Sprintf("10.0.0.%d:%d", peer, 5000+peer); string(got) != want {
					errs <- fmt.Errorf("rank %d got %q for peer %d, want %q", r, got, peer, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestGetBlocksUntilPut(t *testing.T) {
	s := startServer(t, nil)
	c := NewClient(s.URL(), testToken)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type result struct {
		val []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := c.Get(ctx, "late key")
		done <- result{v, err}
	}()
	waitFor(t, "the Get to block on the server", func() bool { return s.waiting("late key") == 1 })
	select {
	case r := <-done:
		t.Fatalf("Get returned before the Put: %q, %v", r.val, r.err)
	default:
	}
	if err := c.Put(ctx, "late key", []byte("here")); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || string(r.val) != "here" {
		t.Fatalf("Get = %q, %v; want \"here\"", r.val, r.err)
	}
	if n := s.waiting("late key"); n != 0 {
		t.Errorf("%d waiters left after the Put", n)
	}
}

func TestGetTimesOut(t *testing.T) {
	s := startServer(t, nil)
	c := NewClient(s.URL(), testToken)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Get(ctx, "never/set")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get error %v, want one wrapping context.DeadlineExceeded", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("Get took %v past a 300ms deadline", el)
	}
	re := regexp.MustCompile(`^rendezvous: get "never/set" from http://127\.0\.0\.1:\d+: ` +
		`key not set after waiting \d+ms: context deadline exceeded$`)
	if !re.MatchString(err.Error()) {
		t.Errorf("Get error %q does not match %s", err, re)
	}
	waitFor(t, "the server to drop the waiter", func() bool { return s.waiting("never/set") == 0 })
}

func TestCanceledGetKeepsCause(t *testing.T) {
	s := startServer(t, nil)
	c := NewClient(s.URL(), testToken)
	cause := errors.New("rank 3 failed")
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		time.Sleep(50 * time.Millisecond)
		cancel(cause)
	}()
	_, err := c.Get(ctx, "k")
	if !errors.Is(err, context.Canceled) || !errors.Is(err, cause) {
		t.Fatalf("Get error %v, want it to wrap context.Canceled and the cause", err)
	}
}

func TestWrongTokenRefusedAndLogged(t *testing.T) {
	var logs logRecorder
	s := startServer(t, logs.logf)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	start := time.Now()
	err := NewClient(s.URL(), "another-job").Put(ctx, "k", []byte("v"))
	if err == nil {
		t.Fatal("Put with a wrong token succeeded")
	}
	if time.Since(start) > 5*time.Second || ctx.Err() != nil {
		t.Errorf("a refused Put should fail at once, took %v", time.Since(start))
	}
	for _, want := range []string{`rendezvous: put "k" to ` + s.URL(), "403 Forbidden", "wrong job token"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Put error %q lacks %q", err, want)
		}
	}
	if _, err := NewClient(s.URL(), "another-job").Get(ctx, "k"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("Get with a wrong token: %v, want a 403 error", err)
	}

	// No token at all.
	resp, err := http.Get(s.URL() + "/v1/kv?key=k&wait=0s")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("request without a token: status %d, want 403", resp.StatusCode)
	}

	log := logs.all()
	re := regexp.MustCompile(`rendezvous: refused PUT /v1/kv from 127\.0\.0\.1:\d+: wrong job token \(fingerprint ` +
		Fingerprint("another-job") + `, want ` + Fingerprint(testToken) + `\)`)
	if !re.MatchString(log) {
		t.Errorf("log %q does not match %s", log, re)
	}
	if !strings.Contains(log, "refused GET /v1/kv from 127.0.0.1:") || !strings.Contains(log, "no Weft-Job-Token header") {
		t.Errorf("log %q lacks the refused GET without token", log)
	}
	if strings.Contains(log, "another-job") || strings.Contains(log, testToken) {
		t.Errorf("log %q reveals a token", log)
	}

	// Nothing was stored by the refused Put.
	short, cancel2 := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel2()
	if v, err := NewClient(s.URL(), testToken).Get(short, "k"); err == nil {
		t.Errorf("refused Put stored %q", v)
	}
}

func TestPutBeforeServerUp(t *testing.T) {
	ln := listen(t)
	addr := ln.Addr().String()
	ln.Close() // the port is now refused until the server starts
	url := "http://" + addr
	c := NewClient(url, testToken)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	putDone := make(chan error, 1)
	getDone := make(chan error, 1)
	go func() { putDone <- c.Put(ctx, "early", []byte("bird")) }()
	go func() {
		v, err := c.Get(ctx, "early")
		if err == nil && string(v) != "bird" {
			err = fmt.Errorf("Get = %q, want \"bird\"", v)
		}
		getDone <- err
	}()
	time.Sleep(200 * time.Millisecond) // several refused attempts
	select {
	case err := <-putDone:
		t.Fatalf("Put returned before the server was up: %v", err)
	default:
	}

	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen again on %s: %v", addr, err)
	}
	s := Serve(ln2, Config{Token: testToken})
	defer s.Close()
	if s.URL() != url {
		t.Fatalf("URL %q, want %q", s.URL(), url)
	}
	if err := <-putDone; err != nil {
		t.Fatalf("Put: %v", err)
	}
	if err := <-getDone; err != nil {
		t.Fatalf("Get: %v", err)
	}
}

func TestPutGivesUpWhenNoServer(t *testing.T) {
	ln := listen(t)
	url := "http://" + ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := NewClient(url, testToken).Put(ctx, "k", []byte("v"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Put error %v, want one wrapping context.DeadlineExceeded", err)
	}
	for _, want := range []string{`rendezvous: put "k" to ` + url + `: not stored after trying for `, "connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Put error %q lacks %q", err, want)
		}
	}
}

func TestCloseWakesBlockedGets(t *testing.T) {
	base := runtime.NumGoroutine()
	s := Serve(listen(t), Config{Token: testToken})
	c := NewClient(s.URL(), testToken)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Put(ctx, "present", []byte("x")); err != nil {
		t.Fatal(err)
	}
	const getters = 3
	errs := make(chan error, getters)
	for range getters {
		go func() {
			_, err := c.Get(ctx, "absent")
			errs <- err
		}()
	}
	waitFor(t, "the Gets to block", func() bool { return s.waiting("absent") == getters })

	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for range getters {
		err := <-errs
		if !errors.Is(err, ErrClosed) {
			t.Errorf("blocked Get returned %v, want an error wrapping ErrClosed", err)
		} else if !strings.Contains(err.Error(), `rendezvous: get "absent" from `+s.URL()) {
			t.Errorf("Get error %q does not name the key and URL", err)
		}
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("Close and the woken Gets took %v", el)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	// After Close the port refuses connections: a Put retries until its
	// context ends.
	short, cancel2 := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel2()
	if err := c.Put(short, "k", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Put after Close: %v", err)
	}

	// No goroutine outlives the server (the shared client transport may
	// keep idle connections: drop them first).
	transport.CloseIdleConnections()
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= base })
}

func TestInvalidKeys(t *testing.T) {
	s := startServer(t, nil)
	c := NewClient(s.URL(), testToken)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	long := strings.Repeat("k", MaxKeyLen+1)
	for _, tt := range []struct{ key, want string }{
		{"", `rendezvous: invalid key "": empty`},
		{long, `rendezvous: invalid key "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"...: 257 bytes, more than 256`},
		{"a\x00b", `rendezvous: invalid key "a\x00b": contains control character U+0000`},
		{"line\n", `rendezvous: invalid key "line\n": contains control character U+000A`},
		{"del\x7f", `rendezvous: invalid key "del\x7f": contains control character U+007F`},
		{"c1\u0085", `rendezvous: invalid key "c1\u0085": contains control character U+0085`},
		{"bad\xff", `rendezvous: invalid key "bad\xff": not valid UTF-8`},
	} {
		if err := c.Put(ctx, tt.key, []byte("v")); err == nil || err.Error() != tt.want {
			t.Errorf("Put(%q) error\n got %v\nwant %s", tt.key, err, tt.want)
		}
		if _, err := c.Get(ctx, tt.key); err == nil || err.Error() != tt.want {
			t.Errorf("Get(%q) error\n got %v\nwant %s", tt.key, err, tt.want)
		}
	}
	// Keys that look odd but are valid travel intact.
	for _, key := range []string{"a/b c", "../x", "?key=y&wait=1h", "ключ", "%2F", strings.Repeat("é", MaxKeyLen/2)} {
		if err := c.Put(ctx, key, []byte(key)); err != nil {
			t.Errorf("Put(%q): %v", key, err)
			continue
		}
		if v, err := c.Get(ctx, key); err != nil || string(v) != key {
			t.Errorf("Get(%q) = %q, %v", key, v, err)
		}
	}
	// The server checks keys too.
	req, _ := http.NewRequest(http.MethodPut, s.URL()+"/v1/kv?key=a%00b", strings.NewReader("v"))
	req.Header.Set(tokenHeader, testToken)
	if code := do(t, req); code != http.StatusBadRequest {
		t.Errorf("server accepted a key with NUL: status %d", code)
	}
}

func TestValueSizes(t *testing.T) {
	s := startServer(t, nil)
	c := NewClient(s.URL(), testToken)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	big := bytes.Repeat([]byte{0xab}, MaxValueLen+1)
	err := c.Put(ctx, "big", big)
	if want := `rendezvous: value for key "big" is 65537 bytes, more than the 65536-byte limit`; err == nil || err.Error() != want {
		t.Errorf("oversize Put error\n got %v\nwant %s", err, want)
	}
	if err := c.Put(ctx, "max", big[:MaxValueLen]); err != nil {
		t.Fatalf("Put of exactly MaxValueLen: %v", err)
	}
	if v, err := c.Get(ctx, "max"); err != nil || !bytes.Equal(v, big[:MaxValueLen]) {
		t.Errorf("Get of the largest value: %d bytes, %v", len(v), err)
	}
	if err := c.Put(ctx, "empty", nil); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, "empty"); err != nil || len(v) != 0 {
		t.Errorf("Get of an empty value = %q, %v", v, err)
	}

	// The server refuses oversize bodies, announced or not.
	for _, chunked := range []bool{false, true} {
		var body io.Reader = bytes.NewReader(big) // the request announces its length
		if chunked {
			body = io.NopCloser(body) // hides the length: sent chunked
		}
		req, _ := http.NewRequest(http.MethodPut, s.URL()+"/v1/kv?key=big", body)
		req.Header.Set(tokenHeader, testToken)
		if code := do(t, req); code != http.StatusRequestEntityTooLarge {
			t.Errorf("oversize PUT (chunked %v): status %d, want 413", chunked, code)
		}
	}
}

func TestClientRefusesOtherServers(t *testing.T) {
	other := httptest.NewServer(http.NotFoundHandler()) // listens on 127.0.0.1
	defer other.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := NewClient(other.URL, testToken)
	if _, err := c.Get(ctx, "k"); err == nil || !strings.Contains(err.Error(), "not a Weft rendezvous server") {
		t.Errorf("Get from a foreign server: %v", err)
	}
	if err := c.Put(ctx, "k", nil); err == nil || !strings.Contains(err.Error(), "not a Weft rendezvous server") {
		t.Errorf("Put to a foreign server: %v", err)
	}
	if ctx.Err() != nil {
		t.Error("the calls waited for their context instead of failing at once")
	}
}

func TestNewClientChecksURLAndToken(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct{ url, token, want string }{
		{"127.0.0.1:1234", "t", `bad server URL "127.0.0.1:1234"`},
		{"https://127.0.0.1:1234", "t", "want http://host:port"},
		{"http://127.0.0.1:1234/sub", "t", "want http://host:port"},
		{"", "t", "want http://host:port"},
		{"http://127.0.0.1:1234", "bad\ntoken", "control character"},
	} {
		err := NewClient(tt.url, tt.token).Put(ctx, "k", nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewClient(%q, %q).Put: %v, want an error with %q", tt.url, tt.token, err, tt.want)
		}
	}
	if c := NewClient("http://127.0.0.1:1/", "t"); c.err != nil || c.url != "http://127.0.0.1:1" {
		t.Errorf("trailing slash: url %q, err %v", c.url, c.err)
	}
}

func TestServerRejectsBadRequests(t *testing.T) {
	s := startServer(t, nil)
	for _, tt := range []struct {
		method, path string
		want         int
	}{
		{http.MethodPost, "/v1/kv?key=k", http.StatusMethodNotAllowed},
		{http.MethodGet, "/v1/kv?key=k&wait=forever", http.StatusBadRequest},
		{http.MethodGet, "/v1/kv?key=k&wait=-1s", http.StatusBadRequest},
		{http.MethodGet, "/v1/kv?key=k&wait=0s", http.StatusNotFound},
		{http.MethodGet, "/v1/other", http.StatusNotFound},
	} {
		req, _ := http.NewRequest(tt.method, s.URL()+tt.path, nil)
		req.Header.Set(tokenHeader, testToken)
		if code := do(t, req); code != tt.want {
			t.Errorf("%s %s: status %d, want %d", tt.method, tt.path, code, tt.want)
		}
	}
}

// do sends req with a plain client and returns the status.
func do(t *testing.T, req *http.Request) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get(serverHeader) != serverMark {
		t.Errorf("%s %s: response lacks the %s header", req.Method, req.URL, serverHeader)
	}
	return resp.StatusCode
}

func TestCloseDoesNotWaitForUnusedConnections(t *testing.T) {
	s := Serve(listen(t), Config{Token: testToken})
	// A client may dial a spare connection and never send a request on it.
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := NewClient(s.URL(), testToken).Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("Close took %v with an unused connection open", el)
	}
}

// TestStrangersDoNotDelay opens connections that never speak, that send
// garbage, and that send a request header a byte at a time (net/http
// reports such a connection as StateNew until the header is whole), and checks
// that a real client's Put and Get, and Close, are not held up by them.
func TestStrangersDoNotDelay(t *testing.T) {
	logs := &logRecorder{}
	s := Serve(listen(t), Config{Token: testToken, Logf: logs.logf})
	addr := strings.TrimPrefix(s.URL(), "http://")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		return c
	}
	for range 100 {
		dial() // silent
	}
	for i := range 20 {
		fmt.Fprintf(dial(), "\x16\x03\x01garbage %d\r\n\r\n", i) // a TLS hello, say
	}
	slow := dial()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // a request line that never ends, bounded by stop
		defer wg.Done()
		for i := 0; i < 1000; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := slow.Write([]byte("G")); err != nil {
				return
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := NewClient(s.URL(), testToken)
	start := time.Now()
	if err := c.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx, "k")
	if err != nil || string(got) != "v" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("Put and Get took %v among strangers", el)
	}
	start = time.Now()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("Close took %v among strangers", el)
	}
}
