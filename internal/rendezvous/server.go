package rendezvous

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config is what a Server is started with.
type Config struct {
	// Token is the job token every request must carry. An empty token is
	// accepted only by a server whose Token is empty: a job whose ranks
	// share no secret (docs/LAUNCH.md says which those are).
	Token string
	// Logf receives refused requests and the HTTP server's own errors; nil
	// discards them. It may be called from several goroutines at once.
	Logf func(format string, args ...any)
	// Size is the number of ranks that Join; 0 for a store without ranks
	// (every Join is refused).
	Size int
	// SizeVar and Who describe rank 0, the server's owner, in refusals:
	// where it learned Size ("WEFT_WORLD_SIZE") and which process it is
	// ("pid 4242 on node01").
	SizeVar, Who string
	// Limits bound what Put stores; zero fields take DefaultLimits'.
	Limits Limits
}

// Server is the key-value store rank 0 serves. Create it with Serve; it is
// safe for concurrent use.
type Server struct {
	ln      net.Listener
	cfg     Config
	nonce   string
	maxWait time.Duration
	handler http.Handler
	srv     *http.Server

	done      chan struct{} // closed by Close: wakes waiting Gets
	served    chan struct{} // closed when srv.Serve returns
	closeOnce sync.Once
	closeErr  error

	mu      sync.Mutex
	kv      map[string][]byte
	putKeys int // keys stored by Put
	putSize int // their bytes, keys and values
	waiters map[string]*waiters
	members map[int]*Member
	formed  bool   // every rank has joined
	failure string // why the world cannot form; "" while it can

	connMu sync.Mutex
	fresh  map[net.Conn]bool // connections that have not sent a request yet
}

// waiters are the Gets blocked on one missing key; ch is closed by the Put
// or Join that sets it, or when the world fails.
type waiters struct {
	ch chan struct{}
	n  int
}

// shutdownGrace is how long Close lets requests in progress finish before
// it closes their connections.
const shutdownGrace = 5 * time.Second

// failureLinger is how long Close keeps answering after the world failed
// to form, so that a rank between two requests (its join answered, its
// next Get not sent yet) learns why the job cannot start instead of
// finding the port closed and retrying until its timeout.
const failureLinger = time.Second

// newServer makes a server that is not listening yet.
func newServer(cfg Config) *Server {
	if cfg.Limits.MaxKeys <= 0 {
		cfg.Limits.MaxKeys = DefaultLimits.MaxKeys
	}
	if cfg.Limits.MaxBytes <= 0 {
		cfg.Limits.MaxBytes = DefaultLimits.MaxBytes
	}
	var b [16]byte
	rand.Read(b[:])
	s := &Server{
		cfg:     cfg,
		nonce:   hex.EncodeToString(b[:]),
		maxWait: maxWait,
		done:    make(chan struct{}),
		served:  make(chan struct{}),
		kv:      make(map[string][]byte),
		waiters: make(map[string]*waiters),
		members: make(map[int]*Member),
		fresh:   make(map[net.Conn]bool),
	}
	s.handler = s.authorize(http.HandlerFunc(s.route))
	return s
}

// Serve starts serving the store on ln in a new goroutine and returns at
// once; the Server owns ln from then on and Close closes it.
//
// Every request must carry cfg.Token in its Weft-Job-Token header. Others
// are refused with 403 Forbidden and reported through cfg.Logf, with the
// remote address and a fingerprint of the token presented, which tells a
// stray rank of another job from an attack. The token keeps jobs apart and
// strangers out; it travels in clear text and is not protection against
// a hostile network.
func Serve(ln net.Listener, cfg Config) *Server {
	s := newServer(cfg)
	s.ln = ln
	errorLog := log.New(io.Discard, "", 0)
	if cfg.Logf != nil {
		errorLog = log.New(logWriter(cfg.Logf), "rendezvous: ", 0)
	}
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		MaxHeaderBytes:    16 << 10,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          errorLog,
		ConnState:         s.trackConn,
	}
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log("rendezvous: serving on %s stopped: %v", ln.Addr(), err)
		}
	}()
	return s
}

// URL returns the address clients use, "http://host:port", built from the
// listener's address. A listener on an unspecified address (0.0.0.0 or
// [::]) gives a URL other hosts cannot use: build the URL from this host's
// routable name instead.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops serving: the listener closes, Gets the server is holding
// answer at once with an error that wraps ErrClosed at their clients,
// other requests in progress get shutdownGrace to finish, and then every
// connection is closed. A client Get caught between two polls finds the
// port closed and retries until its context ends, like a Put. After the
// world failed to form, Close first goes on answering for failureLinger,
// and every request, also one that arrives while it closes, gets the
// reason the job cannot start. When Close returns, no goroutine of the Server is left. Close may be called more
// than once; later calls return the first call's result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		failed := s.failure != ""
		s.mu.Unlock()
		if failed {
			time.Sleep(failureLinger)
		}
		close(s.done)
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		shut := make(chan error, 1)
		go func() { shut <- s.srv.Shutdown(ctx) }()
		// Shutdown closes the listener and idle connections, but waits
		// 5 s for a connection that has not sent a request yet (clients
		// dial spare connections). Close those: their clients retry and
		// find the port closed.
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			s.closeFresh()
			select {
			case err := <-shut:
				if err != nil {
					s.srv.Close()
					s.closeErr = fmt.Errorf("rendezvous: close server %s: %w", s.URL(), err)
				}
				<-s.served
				return
			case <-tick.C:
			}
		}
	})
	return s.closeErr
}

// trackConn keeps the set of connections that have not sent a request.
func (s *Server) trackConn(c net.Conn, state http.ConnState) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if state == http.StateNew {
		s.fresh[c] = true
	} else {
		delete(s.fresh, c)
	}
}

func (s *Server) closeFresh() {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	for c := range s.fresh {
		c.Close()
		delete(s.fresh, c)
	}
}

func (s *Server) log(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

// authorize marks every response as coming from a Weft server and refuses
// requests without the job token.
func (s *Server) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(serverHeader, serverMark)
		got, ok := r.Header[tokenHeader]
		if !ok || len(got) != 1 || subtle.ConstantTimeCompare([]byte(got[0]), []byte(s.cfg.Token)) != 1 {
			why := "no " + tokenHeader + " header"
			if ok {
				why = "wrong job token (fingerprint " + Fingerprint(got[0]) + ", want " + Fingerprint(s.cfg.Token) + ")"
			}
			s.log("rendezvous: refused %s %s from %s: %s", r.Method, r.URL.Path, r.RemoteAddr, why)
			http.Error(w, "refused: "+why, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// route sends a request to its handler by its exact path.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case kvPath:
		s.handleKV(w, r)
	case joinPath:
		s.handleJoin(w, r)
	default:
		http.NotFound(w, r)
	}
}

// closed answers and reports true when the server is closing: 409 with
// the reason when the world failed to form (that, not the closing, is
// what the rank must learn), else 503.
func (s *Server) closed(w http.ResponseWriter) bool {
	select {
	case <-s.done:
		s.mu.Lock()
		failure := s.failure
		s.mu.Unlock()
		if failure != "" {
			http.Error(w, failure, http.StatusConflict)
		} else {
			http.Error(w, ErrClosed.Error(), http.StatusServiceUnavailable)
		}
		return true
	default:
		return false
	}
}

func (s *Server) handleKV(w http.ResponseWriter, r *http.Request) {
	if s.closed(w) {
		return
	}
	q := r.URL.Query()
	key := q.Get("key")
	if err := CheckKey(key); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch r.Method {
	case http.MethodPut:
		s.put(w, r, key)
	case http.MethodGet:
		wait, err := time.ParseDuration(q.Get("wait"))
		if err != nil || wait < 0 {
			http.Error(w, fmt.Sprintf("rendezvous: bad wait %q", q.Get("wait")), http.StatusBadRequest)
			return
		}
		s.get(w, r, key, min(wait, s.maxWait))
	default:
		w.Header().Set("Allow", "GET, PUT")
		http.Error(w, "rendezvous: method not allowed", http.StatusMethodNotAllowed)
	}
}

// readBody reads at most limit bytes of r's body; on failure it has
// answered, with 413 when the body is larger.
func readBody(w http.ResponseWriter, r *http.Request, limit int, tooBig func() error) ([]byte, bool) {
	if r.ContentLength > int64(limit) {
		http.Error(w, tooBig().Error(), http.StatusRequestEntityTooLarge)
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(limit)))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			http.Error(w, tooBig().Error(), http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "rendezvous: reading the request body: "+err.Error(), http.StatusBadRequest)
		}
		return nil, false
	}
	return body, true
}

func (s *Server) put(w http.ResponseWriter, r *http.Request, key string) {
	if strings.HasPrefix(key, RankKeyPrefix) {
		http.Error(w, fmt.Sprintf("rendezvous: key %q is a rank's: only its join sets it", key), http.StatusForbidden)
		return
	}
	val, ok := readBody(w, r, MaxValueLen, func() error { return checkValue(key, MaxValueLen+1) })
	if !ok {
		return
	}
	code, msg := s.store(key, val)
	if code != http.StatusNoContent {
		http.Error(w, msg, code)
		return
	}
	w.WriteHeader(code)
}

// store keeps val under key for Put and says how to answer.
func (s *Server) store(key string, val []byte) (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failure != "" {
		return http.StatusConflict, s.failure
	}
	if old, ok := s.kv[key]; ok {
		if bytes.Equal(old, val) {
			return http.StatusNoContent, "" // a retried Put
		}
		return http.StatusConflict, fmt.Sprintf("rendezvous: key %q already holds another value (keys are written once)", key)
	}
	lim := s.cfg.Limits
	if s.putKeys+1 > lim.MaxKeys {
		return http.StatusInsufficientStorage, fmt.Sprintf("rendezvous: store full: it holds %d keys, the limit", s.putKeys)
	}
	if n := s.putSize + len(key) + len(val); n > lim.MaxBytes {
		return http.StatusInsufficientStorage, fmt.Sprintf("rendezvous: store full: key %q and its value would make %d bytes, more than the %d-byte limit",
			key, n, lim.MaxBytes)
	}
	s.putKeys++
	s.putSize += len(key) + len(val)
	s.setLocked(key, val)
	return http.StatusNoContent, ""
}

// setLocked stores val and wakes the Gets waiting for key.
func (s *Server) setLocked(key string, val []byte) {
	s.kv[key] = val
	if ws := s.waiters[key]; ws != nil {
		close(ws.ch)
		delete(s.waiters, key)
	}
}

// get answers with the value of key, waiting up to wait for it to be set.
func (s *Server) get(w http.ResponseWriter, r *http.Request, key string, wait time.Duration) {
	s.mu.Lock()
	if s.failure != "" {
		s.mu.Unlock()
		http.Error(w, s.failure, http.StatusConflict)
		return
	}
	val, ok := s.kv[key]
	var ws *waiters
	if !ok && wait > 0 {
		ws = s.waiters[key]
		if ws == nil {
			if len(s.waiters) >= s.cfg.Limits.MaxKeys+s.cfg.Size {
				s.mu.Unlock()
				http.Error(w, fmt.Sprintf("rendezvous: store full: Gets wait for %d keys, the limit", len(s.waiters)),
					http.StatusInsufficientStorage)
				return
			}
			ws = &waiters{ch: make(chan struct{})}
			s.waiters[key] = ws
		}
		ws.n++
	}
	s.mu.Unlock()

	if ws != nil {
		timer := time.NewTimer(wait)
		closed := false
		select {
		case <-ws.ch:
		case <-timer.C:
		case <-r.Context().Done():
		case <-s.done:
			closed = true
		}
		timer.Stop()
		s.mu.Lock()
		if ws.n--; ws.n == 0 && s.waiters[key] == ws {
			delete(s.waiters, key)
		}
		val, ok = s.kv[key]
		failure := s.failure
		s.mu.Unlock()
		switch {
		case failure != "":
			http.Error(w, failure, http.StatusConflict)
			return
		case closed && !ok:
			http.Error(w, ErrClosed.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	if !ok {
		http.Error(w, "rendezvous: key not set", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(val)))
	w.Write(val)
}

func (s *Server) handleJoin(w http.ResponseWriter, r *http.Request) {
	if s.closed(w) {
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "rendezvous: method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, ok := readBody(w, r, maxMemberLen, func() error {
		return fmt.Errorf("rendezvous: join of more than %d bytes", maxMemberLen)
	})
	if !ok {
		return
	}
	m, err := decodeMember(body)
	if err != nil {
		http.Error(w, "rendezvous: join: "+err.Error(), http.StatusBadRequest)
		return
	}
	if code, msg := s.join(m); code != http.StatusOK {
		s.log("rendezvous: refused the join of rank %d from %s: %s", m.Rank, r.RemoteAddr, strings.TrimPrefix(msg, "rendezvous: "))
		http.Error(w, msg, code)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	io.WriteString(w, s.nonce)
}

// join admits m to the world and says how to answer. A contradiction
// while the world forms fails it: every rank learns at once why it cannot
// start. Once every rank has joined, a contradiction is the latecomer's
// alone.
func (s *Server) join(m *Member) (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failure != "" {
		return http.StatusConflict, s.failure
	}
	if s.cfg.Size == 0 {
		return http.StatusConflict, "rendezvous: this store serves no world to join"
	}
	var why string
	if m.Size != s.cfg.Size {
		why = fmt.Sprintf("ranks disagree on the world size: %s=%d at rank %d (%s), %s=%d at rank 0 (%s)",
			m.SizeVar, m.Size, m.Rank, m.Who, s.cfg.SizeVar, s.cfg.Size, s.cfg.Who)
	} else if old := s.members[m.Rank]; old != nil {
		if old.same(m) {
			return http.StatusOK, "" // a retried join
		}
		why = fmt.Sprintf("%s=%d is taken: %s joined as rank %d first, then %s claimed it too",
			m.RankVar, m.Rank, old.Who, m.Rank, m.Who)
	}
	if why != "" {
		if s.formed {
			return http.StatusConflict, fmt.Sprintf("rendezvous: %s (all %d ranks of the job have joined: it runs without this process)",
				why, s.cfg.Size)
		}
		s.failLocked("rendezvous: the job cannot start: " + why)
		return http.StatusConflict, s.failure
	}
	s.members[m.Rank] = m
	s.setLocked(RankKey(m.Rank), m.Info)
	s.formed = len(s.members) == s.cfg.Size
	return http.StatusOK, ""
}

// failLocked records why the world cannot form and wakes every waiting
// Get to say so.
func (s *Server) failLocked(why string) {
	s.failure = why
	for key, ws := range s.waiters {
		close(ws.ch)
		delete(s.waiters, key)
	}
}

// logWriter feeds the HTTP server's error log into logf.
type logWriter func(format string, args ...any)

func (f logWriter) Write(p []byte) (int, error) {
	n := len(p)
	if n > 0 && p[n-1] == '\n' {
		p = p[:n-1]
	}
	f("%s", p)
	return n, nil
}
