package rendezvous

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Server is the key-value store rank 0 serves. Create it with Serve; it is
// safe for concurrent use.
type Server struct {
	ln    net.Listener
	token string
	logf  func(format string, args ...any)
	srv   *http.Server

	done      chan struct{} // closed by Close: wakes waiting Gets
	served    chan struct{} // closed when srv.Serve returns
	closeOnce sync.Once
	closeErr  error

	mu      sync.Mutex
	kv      map[string][]byte
	waiters map[string]*waiters

	connMu sync.Mutex
	fresh  map[net.Conn]bool // connections that have not sent a request yet
}

// waiters are the Gets blocked on one missing key; ch is closed by the Put
// that sets it.
type waiters struct {
	ch chan struct{}
	n  int
}

// shutdownGrace is how long Close lets requests in progress finish before
// it closes their connections.
const shutdownGrace = 5 * time.Second

// Serve starts serving the store on ln in a new goroutine and returns at
// once; the Server owns ln from then on and Close closes it.
//
// Every request must carry token in its Weft-Job-Token header. Others are
// refused with 403 Forbidden and reported through logf (nil for silence),
// with the remote address and a fingerprint of the token presented, which
// tells a stray rank of another job from an attack. logf also receives the
// HTTP server's own errors. It may be called from several goroutines at
// once. The token keeps jobs that share hosts and ports apart; it travels
// in clear text and is not protection against a hostile network.
func Serve(ln net.Listener, token string, logf func(format string, args ...any)) *Server {
	s := &Server{
		ln:      ln,
		token:   token,
		logf:    logf,
		done:    make(chan struct{}),
		served:  make(chan struct{}),
		kv:      make(map[string][]byte),
		waiters: make(map[string]*waiters),
		fresh:   make(map[net.Conn]bool),
	}
	errorLog := log.New(io.Discard, "", 0)
	if logf != nil {
		errorLog = log.New(logWriter(logf), "rendezvous: ", 0)
	}
	mux := http.NewServeMux()
	mux.HandleFunc(kvPath, s.handleKV)
	s.srv = &http.Server{
		Handler:           s.authorize(mux),
		ReadHeaderTimeout: 10 * time.Second,
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
// port closed and retries until its context ends, like a Put. When Close
// returns, no goroutine of the Server is left. Close may be called more
// than once; later calls return the first call's result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
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
	if s.logf != nil {
		s.logf(format, args...)
	}
}

// authorize marks every response as coming from a Weft server and refuses
// requests without the job token.
func (s *Server) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(serverHeader, serverMark)
		got, ok := r.Header[tokenHeader]
		if !ok || len(got) != 1 || subtle.ConstantTimeCompare([]byte(got[0]), []byte(s.token)) != 1 {
			why := "no " + tokenHeader + " header"
			if ok {
				why = "wrong job token (fingerprint " + Fingerprint(got[0]) + ", want " + Fingerprint(s.token) + ")"
			}
			s.log("rendezvous: refused %s %s from %s: %s", r.Method, r.URL.Path, r.RemoteAddr, why)
			http.Error(w, "refused: "+why, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) handleKV(w http.ResponseWriter, r *http.Request) {
	select {
	case <-s.done:
		http.Error(w, ErrClosed.Error(), http.StatusServiceUnavailable)
		return
	default:
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
		s.get(w, r, key, min(wait, maxWait))
	default:
		w.Header().Set("Allow", "GET, PUT")
		http.Error(w, "rendezvous: method not allowed", http.StatusMethodNotAllowed)
	}
}

func (s *Server) put(w http.ResponseWriter, r *http.Request, key string) {
	if r.ContentLength > MaxValueLen {
		http.Error(w, checkValue(key, int(min(r.ContentLength, 1<<40))).Error(), http.StatusRequestEntityTooLarge)
		return
	}
	val, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxValueLen))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, checkValue(key, MaxValueLen+1).Error(), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "rendezvous: reading value: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.kv[key] = val
	if ws := s.waiters[key]; ws != nil {
		close(ws.ch)
		delete(s.waiters, key)
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// get answers with the value of key, waiting up to wait for it to be put.
func (s *Server) get(w http.ResponseWriter, r *http.Request, key string, wait time.Duration) {
	s.mu.Lock()
	val, ok := s.kv[key]
	var ws *waiters
	if !ok && wait > 0 {
		ws = s.waiters[key]
		if ws == nil {
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
		s.mu.Unlock()
		if closed && !ok {
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
