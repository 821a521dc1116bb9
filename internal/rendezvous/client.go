package rendezvous

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client puts and gets keys on a Server. Its methods may be called
// concurrently.
type Client struct {
	url   string // base URL without trailing slash
	token string
	err   error // a bad URL or token, reported by every call
}

// pollRound is how long one Get asks the server to hold its request when
// the key is missing; a Get is a sequence of such rounds.
const pollRound = 3 * time.Second

// Retry delays after a failed connection: doubling from backoffMin to
// backoffMax, with jitter so that many ranks do not retry in step.
const (
	backoffMin = 5 * time.Millisecond
	backoffMax = 500 * time.Millisecond
)

// transport is shared by all clients. It ignores HTTP_PROXY and friends:
// the server runs on a node of the job, which a site proxy cannot reach.
var transport = &http.Transport{
	Proxy: nil,
	DialContext: (&net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
	}).DialContext,
	MaxIdleConnsPerHost: 4,
	IdleConnTimeout:     90 * time.Second,
	DisableCompression:  true,
}

var httpClient = &http.Client{
	Transport: transport,
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse // a Weft server never redirects
	},
}

// NewClient returns a client of the server at serverURL ("http://host:port",
// as Server.URL gives) that presents token. A malformed URL or a token that
// cannot travel in an HTTP header makes every call fail at once.
func NewClient(serverURL, token string) *Client {
	c := &Client{url: strings.TrimRight(serverURL, "/"), token: token}
	u, err := url.Parse(c.url)
	switch {
	case err != nil:
		c.err = fmt.Errorf("rendezvous: bad server URL %q: %w", serverURL, err)
	case u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "":
		c.err = fmt.Errorf("rendezvous: bad server URL %q: want http://host:port", serverURL)
	}
	for i := 0; i < len(token); i++ {
		if b := token[i]; (b < ' ' && b != '\t') || b == 0x7f {
			c.err = errors.New("rendezvous: job token contains a control character")
		}
	}
	return c
}

// Put stores val under key. Keys are written once: a Put of a key that
// holds another value fails with an error wrapping ErrConflict, and one
// that holds the same value succeeds (a retry). It blocks until the server
// has stored it, retrying failed connections (the server may not be up
// yet) until ctx ends. It does not keep val.
func (c *Client) Put(ctx context.Context, key string, val []byte) error {
	if err := c.check(key); err != nil {
		return err
	}
	if err := checkValue(key, len(val)); err != nil {
		return err
	}
	_, err := c.send(ctx, "put", key, http.MethodPut, c.kvURL(key, 0), val, http.StatusNoContent, 0)
	return err
}

// Join admits this rank, m, to the world of the server and returns the
// session nonce, a random string the server made, which only the ranks
// that joined learn. Once every rank has joined, the Info of rank r is
// found with Get(ctx, RankKey(r)). Join fails with an error wrapping
// ErrConflict, naming the other process, when m's rank is taken or m's
// world size is not rank 0's; while the world is still forming such a
// conflict also fails every other rank's Get and Join. A Join repeated
// with the same Member succeeds. Like Put it retries failed connections
// until ctx ends.
func (c *Client) Join(ctx context.Context, m Member) (string, error) {
	what := fmt.Sprintf("rank %d", m.Rank)
	if c.err != nil {
		return "", c.err
	}
	if err := m.check(); err != nil {
		return "", c.opErr("join", what, err)
	}
	body, err := json.Marshal(&m)
	if err != nil {
		return "", c.opErr("join", what, err)
	}
	nonce, err := c.send(ctx, "join", what, http.MethodPost, c.url+joinPath, body, http.StatusOK, 256)
	return string(nonce), err
}

// send makes a request that changes the store, retrying failed
// connections until ctx ends, and returns the body of an answer with
// status want.
func (c *Client) send(ctx context.Context, op, key, method, url string, body []byte, want int, limit int64) ([]byte, error) {
	start := time.Now()
	var last error
	for b := newBackoff(); ; {
		req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
		if err != nil {
			return nil, c.opErr(op, key, err)
		}
		req.Header.Set(tokenHeader, c.token)
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := httpClient.Do(req)
		if err == nil {
			out, err := c.readResponse(resp, want, limit)
			if err != nil {
				return nil, c.opErr(op, key, err)
			}
			return out, nil
		}
		if ctx.Err() != nil {
			return nil, c.ctxErr(ctx, op, key, start, last)
		}
		last = err
		if !b.sleep(ctx) {
			return nil, c.ctxErr(ctx, op, key, start, last)
		}
	}
}

// Get returns the value of key, waiting until some client puts it or ctx
// ends. It polls the server in rounds of a few seconds and retries failed
// connections, so it survives a server that starts late. The caller owns
// the returned slice.
func (c *Client) Get(ctx context.Context, key string) ([]byte, error) {
	if err := c.check(key); err != nil {
		return nil, err
	}
	start := time.Now()
	var last error
	b := newBackoff()
	for {
		roundStart := time.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.kvURL(key, pollRound), nil)
		if err != nil {
			return nil, c.opErr("get", key, err)
		}
		req.Header.Set(tokenHeader, c.token)
		resp, err := httpClient.Do(req)
		var val []byte
		pending := false
		if err == nil {
			pending = resp.StatusCode == http.StatusNotFound && resp.Header.Get(serverHeader) == serverMark
			if !pending {
				val, err = c.readResponse(resp, http.StatusOK, MaxValueLen)
				var se *statusError
				if errors.As(err, &se) {
					return nil, c.opErr("get", key, err)
				}
				if err == nil {
					return val, nil
				}
			} else {
				io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
				resp.Body.Close()
			}
		}
		if ctx.Err() != nil {
			return nil, c.ctxErr(ctx, "get", key, start, last)
		}
		if pending {
			// The server held the request for a round: ask again at once,
			// unless it answered suspiciously fast.
			last = nil
			b = newBackoff()
			if time.Since(roundStart) >= pollRound/2 {
				continue
			}
		} else {
			last = err
		}
		if !b.sleep(ctx) {
			return nil, c.ctxErr(ctx, "get", key, start, last)
		}
	}
}

// statusError is an answer of the server that retrying will not change.
type statusError struct {
	code int
	msg  string
	err  error // ErrClosed for 503, ErrConflict for 409
}

func (e *statusError) Error() string { return e.msg }

func (e *statusError) Unwrap() error { return e.err }

// readResponse reads and closes resp. It returns the body when the status
// is want, a *statusError for an answer that retrying will not change, and
// another error when reading the body failed (worth a retry).
func (c *Client) readResponse(resp *http.Response, want int, limit int64) ([]byte, error) {
	defer resp.Body.Close()
	if resp.Header.Get(serverHeader) != serverMark {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, &statusError{code: resp.StatusCode,
			msg: fmt.Sprintf("not a Weft rendezvous server (it answered %s)", resp.Status)}
	}
	if resp.StatusCode != want {
		text, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		reason := strings.TrimSpace(string(text))
		se := &statusError{code: resp.StatusCode, msg: fmt.Sprintf("server answered %s: %s", resp.Status, reason)}
		switch resp.StatusCode {
		case http.StatusServiceUnavailable:
			se.msg, se.err = ErrClosed.Error(), ErrClosed
		case http.StatusForbidden:
			se.err = ErrRefused
		case http.StatusConflict:
			// The server's reason names the contradiction; it is the error.
			se.msg, se.err = strings.TrimPrefix(reason, "rendezvous: "), ErrConflict
		}
		return nil, se
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > limit {
		return nil, &statusError{code: resp.StatusCode,
			msg: fmt.Sprintf("server sent more than %d bytes", limit)}
	}
	return body, nil
}

func (c *Client) check(key string) error {
	if c.err != nil {
		return c.err
	}
	return CheckKey(key)
}

func (c *Client) kvURL(key string, wait time.Duration) string {
	q := url.Values{"key": {key}}
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	return c.url + kvPath + "?" + q.Encode()
}

func (c *Client) prep(op string) string {
	switch op {
	case "put":
		return "to"
	case "join":
		return "at"
	}
	return "from"
}

// opErr names the operation: put "key", get "key", join as rank N.
func (c *Client) opErr(op, key string, err error) error {
	return fmt.Errorf("rendezvous: %s %s %s: %w", c.what(op, key), c.prep(op), c.url, err)
}

func (c *Client) what(op, key string) string {
	if op == "join" {
		return "join as " + key
	}
	return fmt.Sprintf("%s %q", op, key)
}

// ctxErr reports that ctx ended a Put or Get begun at start; last is the
// last connection error, if the server could not be reached.
func (c *Client) ctxErr(ctx context.Context, op, key string, start time.Time, last error) error {
	waited := time.Since(start).Round(time.Millisecond)
	what := fmt.Sprintf("key not set after waiting %v", waited)
	switch op {
	case "put":
		what = fmt.Sprintf("not stored after trying for %v", waited)
	case "join":
		what = fmt.Sprintf("not admitted after trying for %v", waited)
	}
	if last != nil {
		what += fmt.Sprintf(" (last error: %v)", last)
	}
	if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
		return fmt.Errorf("rendezvous: %s %s %s: %s: %w: %w", c.what(op, key), c.prep(op), c.url, what, ctx.Err(), cause)
	}
	return fmt.Errorf("rendezvous: %s %s %s: %s: %w", c.what(op, key), c.prep(op), c.url, what, ctx.Err())
}

// backoff spaces out retries after failed connections.
type backoff struct{ next time.Duration }

func newBackoff() backoff { return backoff{next: backoffMin} }

// sleep waits for the next delay; false if ctx ended first.
func (b *backoff) sleep(ctx context.Context) bool {
	d := b.next/2 + rand.N(b.next/2+1) // between half and all of next
	b.next = min(2*b.next, backoffMax)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
