package psmode

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/weft-hpc/weft/collective"
)

// server is one server rank: a loop that owns the shards of its keys and
// handles one request at a time, fed by one receiving goroutine per worker
// (each takes a worker's header and payload as a pair).
type server struct {
	c      *collective.Comm
	cfg    *Config
	layout *Layout
	idx    int // server index
	opt    Optimizer

	events   chan *event
	shards   map[int]*shard
	pending  map[int][]*event // requests for keys not (yet) here
	byes     int
	inbound  int   // migrations in flight to this server
	lastStep int64 // step of the last push (for the straggler's onset)
	slow     *Slowdown
	pool     bufPool

	statMu sync.Mutex
	stats  map[int]*keyStat
	sends  sync.WaitGroup // responses and migrations in flight
	done   chan struct{}  // closed when serve returns
}

// post hands an event to the loop, or drops it once the loop is gone.
func (s *server) post(e *event) {
	select {
	case s.events <- e:
	case <-s.done:
	}
}

type shard struct {
	w, acc  []float32
	opt     *KeyOptimizer // nn's optimizer and its state
	count   int           // pushes aggregated for the current step (sync)
	version int64         // updates applied
	waiting []*event
}

type keyStat struct {
	pushQ, pushS, pullQ, pullS time.Duration
	pushes                     int64
}

const (
	evRequest = iota
	evInstalled
	evFailed
)

type event struct {
	kind    int
	from    int // world rank
	h       header
	data    []float32
	arrived time.Time
	err     error
	// evInstalled
	sh    *shard
	begun time.Time
}

// bufPool keeps float32 buffers by length: memory is touched once and
// reused (first touch of a 4 KiB page costs 1 to 11 us on the project's
// VMs, 5 to 50 times a write to touched memory: docs/BENCHMARKS.md, "The
// machine").
type bufPool struct {
	mu   sync.Mutex
	free map[int][][]float32
}

func (p *bufPool) get(n int) []float32 {
	p.mu.Lock()
	if l := p.free[n]; len(l) > 0 {
		b := l[len(l)-1]
		p.free[n] = l[:len(l)-1]
		p.mu.Unlock()
		return b
	}
	p.mu.Unlock()
	return make([]float32, n)
}

func (p *bufPool) put(b []float32) {
	if b == nil {
		return
	}
	p.mu.Lock()
	if p.free == nil {
		p.free = map[int][][]float32{}
	}
	p.free[len(b)] = append(p.free[len(b)], b)
	p.mu.Unlock()
}

func newServer(c *collective.Comm, cfg *Config, layout *Layout, idx int) *server {
	s := &server{c: c, cfg: cfg, layout: layout, idx: idx, opt: cfg.Optimizer,
		events: make(chan *event, 4*cfg.Workers+16), shards: map[int]*shard{},
		pending: map[int][]*event{}, stats: map[int]*keyStat{}, done: make(chan struct{})}
	for i := range cfg.Slowdown {
		if cfg.Slowdown[i].Server == idx && cfg.Slowdown[i].Factor > 1 {
			s.slow = &cfg.Slowdown[i]
		}
	}
	return s
}

// serve runs until every worker said goodbye, or a peer fails.
func (s *server) serve(ctx context.Context) error {
	defer close(s.done)
	for w := 0; w < s.cfg.Workers; w++ {
		go s.receive(w)
	}
	for s.byes < s.cfg.Workers || s.inbound > 0 {
		var e *event
		select {
		case e = <-s.events:
		case <-ctx.Done():
			return fmt.Errorf("psmode: server %d: %w", s.idx, ctx.Err())
		}
		if err := s.handle(e); err != nil {
			return fmt.Errorf("psmode: server %d (rank %d): %w", s.idx, s.c.Rank(), err)
		}
	}
	// Let responses and outgoing migrations finish before the goodbyes:
	// a peer still receiving them would see this rank leave.
	waited := make(chan struct{})
	go func() { s.sends.Wait(); close(waited) }()
	for wait := true; wait; {
		select {
		case <-waited:
			wait = false
		case e := <-s.events:
			if e.kind == evFailed {
				return fmt.Errorf("psmode: server %d (rank %d): %w", s.idx, s.c.Rank(), e.err)
			}
		}
	}
	for k, es := range s.pending {
		if len(es) > 0 {
			return fmt.Errorf("psmode: server %d: %d requests for key %d it never owned", s.idx, len(es), k)
		}
	}
	for w := 0; w < s.cfg.Workers; w++ {
		h := header{hOp: respBye}
		if err := s.c.Send(ctx, h.buf(), w, tagResp); err != nil {
			return fmt.Errorf("psmode: server %d: goodbye to worker %d: %w", s.idx, w, err)
		}
	}
	return nil
}

// receive reads the requests of one worker in order.
func (s *server) receive(w int) {
	ctx := context.Background()
	for {
		e := &event{kind: evRequest, from: w}
		if _, err := s.c.Recv(ctx, e.h.buf(), w, tagReq); err != nil {
			s.post(&event{kind: evFailed, from: w, err: err})
			return
		}
		if n := int(e.h[hN]); n > 0 {
			e.data = s.pool.get(n)
			if _, err := s.c.Recv(ctx, collective.Buf(e.data), w, tagReqData); err != nil {
				s.post(&event{kind: evFailed, from: w, err: err})
				return
			}
		}
		e.arrived = time.Now()
		s.post(e)
		if e.h[hOp] == opBye {
			return
		}
	}
}

// stat returns the statistics of key k; the caller holds statMu.
func (s *server) stat(k int) *keyStat {
	st := s.stats[k]
	if st == nil {
		st = &keyStat{}
		s.stats[k] = st
	}
	return st
}

// link waits as long as n float32 take on the emulated link.
func (s *server) link(n int) {
	if s.cfg.LinkRate > 0 {
		time.Sleep(time.Duration(float64(4*n) / s.cfg.LinkRate * 1e9))
	}
}

// straggle waits as a slowed-down server would: (factor-1) times d.
func (s *server) straggle(step int64, d time.Duration) {
	if s.slow == nil || step < s.slow.FromStep {
		return
	}
	extra := time.Duration(float64(d) * (s.slow.Factor - 1))
	if !s.slow.CPU {
		time.Sleep(extra)
		return
	}
	end := time.Now().Add(extra)
	x := uint64(1)
	for time.Now().Before(end) {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink = x
}

var sink uint64

func (s *server) handle(e *event) error {
	switch e.kind {
	case evFailed:
		return e.err
	case evInstalled:
		return s.install(e)
	}
	h := &e.h
	k := int(h[hKey])
	if h[hOp] != opBye && h[hOp] != opMigrateIn && (k < 0 || k >= len(s.layout.Keys)) {
		return fmt.Errorf("key %d out of range from rank %d", k, e.from)
	}
	switch h[hOp] {
	case opBye:
		s.byes++
		return nil
	case opInit:
		if s.shards[k] != nil {
			return fmt.Errorf("key %d initialised twice", k)
		}
		n := s.layout.Keys[k].Len
		if len(e.data) != n {
			return fmt.Errorf("init of key %d with %d elements, want %d", k, len(e.data), n)
		}
		sh := &shard{w: e.data, acc: s.pool.get(n), opt: s.opt.ForKey(n)}
		s.shards[k] = sh
		return s.replay(k)
	case opMigrateIn:
		s.inbound++
		go s.migrateIn(k, int(h[hA]), time.Now())
		return nil
	}
	sh := s.shards[k]
	if sh == nil {
		s.pending[k] = append(s.pending[k], e)
		return nil
	}
	switch h[hOp] {
	case opPush:
		return s.push(k, sh, e)
	case opPull:
		s.statMu.Lock()
		s.stat(k).pullQ += time.Since(e.arrived)
		s.statMu.Unlock()
		if sh.version >= h[hVersion] {
			return s.respond(k, sh, e.from)
		}
		sh.waiting = append(sh.waiting, e)
		return nil
	case opMigrateOut:
		return s.migrateOut(k, sh, int(h[hA]))
	}
	return fmt.Errorf("unknown op %d from rank %d", h[hOp], e.from)
}

func (s *server) push(k int, sh *shard, e *event) error {
	if len(e.data) != len(sh.w) {
		return fmt.Errorf("push of key %d with %d elements, want %d", k, len(e.data), len(sh.w))
	}
	start := time.Now()
	queued := start.Sub(e.arrived)
	s.lastStep = e.h[hStep]
	W := s.cfg.Workers
	if s.cfg.Async {
		sh.opt.Apply(sh.w, e.data, 1/float32(W), sh.version)
		sh.version++
	} else {
		if e.h[hStep] != sh.version {
			return fmt.Errorf("push of key %d for step %d from rank %d, key is at version %d", k, e.h[hStep], e.from, sh.version)
		}
		if sh.count == 0 {
			copy(sh.acc, e.data)
		} else {
			a := sh.acc[:len(e.data)]
			for i, g := range e.data {
				a[i] += g
			}
		}
		sh.count++
		if sh.count == W {
			sh.opt.Apply(sh.w, sh.acc, 1/float32(W), sh.version)
			sh.version++
			sh.count = 0
		}
	}
	s.pool.put(e.data)
	s.link(len(e.data))
	s.straggle(e.h[hStep], time.Since(start))
	s.statMu.Lock()
	st := s.stat(k)
	st.pushQ += queued
	st.pushS += time.Since(start)
	st.pushes++
	s.statMu.Unlock()
	return s.serveWaiting(k, sh)
}

func (s *server) serveWaiting(k int, sh *shard) error {
	keep := sh.waiting[:0]
	for _, p := range sh.waiting {
		if sh.version >= p.h[hVersion] {
			if err := s.respond(k, sh, p.from); err != nil {
				return err
			}
		} else {
			keep = append(keep, p)
		}
	}
	clear(sh.waiting[len(keep):])
	sh.waiting = keep
	return nil
}

// respond sends the key's value to a worker; the statistics of the key
// since the last report ride along to worker 0, the scheduler.
func (s *server) respond(k int, sh *shard, to int) error {
	h := &header{hOp: respPull, hKey: int64(k), hVersion: sh.version, hN: int64(len(sh.w))}
	if to == 0 {
		s.statMu.Lock()
		st := s.stat(k)
		h[hA], h[hB], h[hC], h[hD], h[hE] = int64(st.pushQ), int64(st.pushS), int64(st.pullQ), int64(st.pullS), st.pushes
		*st = keyStat{}
		s.statMu.Unlock()
	}
	payload := sh.w
	var snap []float32
	if s.cfg.Async {
		// Later pushes change w while the send is in flight.
		snap = s.pool.get(len(sh.w))
		copy(snap, sh.w)
		payload = snap
	}
	start := time.Now()
	if s.cfg.LinkRate > 0 {
		s.link(len(payload))
		s.straggle(s.lastStep, time.Since(start))
	}
	r1 := s.c.ISend(h.buf(), to, tagResp)
	r2 := s.c.ISend(collective.Buf(payload), to, tagRespData)
	s.sends.Add(1)
	go func() {
		defer s.sends.Done()
		err := r1.Wait(context.Background())
		if err2 := r2.Wait(context.Background()); err == nil {
			err = err2
		}
		s.statMu.Lock()
		s.stat(k).pullS += time.Since(start)
		s.statMu.Unlock()
		s.pool.put(snap)
		if err != nil {
			s.post(&event{kind: evFailed, from: to, err: err})
		}
	}()
	return nil
}

// migrateOut sends a quiescent key (all pushes of the finished step
// applied, no pull waiting) with its optimizer state to another server
// and forgets it.
func (s *server) migrateOut(k int, sh *shard, to int) error {
	if sh.count != 0 || len(sh.waiting) != 0 {
		return fmt.Errorf("key %d asked to move while busy (%d pushes, %d pulls waiting)", k, sh.count, len(sh.waiting))
	}
	delete(s.shards, k)
	h := &header{hKey: int64(k), hVersion: sh.version, hN: int64(len(sh.w))}
	rs := []*collective.Request{s.c.ISend(h.buf(), to, tagMigHdr(k)), s.c.ISend(collective.Buf(sh.w), to, tagMigData(k))}
	for _, st := range sh.opt.State() {
		rs = append(rs, s.c.ISend(collective.Buf(st), to, tagMigData(k)))
	}
	s.sends.Add(1)
	go func() {
		defer s.sends.Done()
		for _, r := range rs {
			if err := r.Wait(context.Background()); err != nil {
				s.post(&event{kind: evFailed, from: to, err: err})
				return
			}
		}
		s.pool.put(sh.w)
		s.pool.put(sh.acc)
	}()
	return nil
}

// migrateIn receives a key from another server, then hands it to the loop.
func (s *server) migrateIn(k, from int, begun time.Time) {
	ctx := context.Background()
	fail := func(err error) { s.post(&event{kind: evFailed, from: from, err: err}) }
	var h header
	if _, err := s.c.Recv(ctx, h.buf(), from, tagMigHdr(k)); err != nil {
		fail(err)
		return
	}
	n := int(h[hN])
	sh := &shard{w: s.pool.get(n), acc: s.pool.get(n), opt: s.opt.ForKey(n), version: h[hVersion]}
	if _, err := s.c.Recv(ctx, collective.Buf(sh.w), from, tagMigData(k)); err != nil {
		fail(err)
		return
	}
	for _, st := range sh.opt.State() {
		if _, err := s.c.Recv(ctx, collective.Buf(st), from, tagMigData(k)); err != nil {
			fail(err)
			return
		}
	}
	s.post(&event{kind: evInstalled, h: header{hKey: int64(k)}, sh: sh, begun: begun})
}

func (s *server) install(e *event) error {
	k := int(e.h[hKey])
	if s.shards[k] != nil {
		return fmt.Errorf("key %d migrated in twice", k)
	}
	s.shards[k] = e.sh
	s.inbound--
	pause := time.Since(e.begun)
	h := &header{hOp: respAck, hKey: int64(k), hVersion: e.sh.version, hA: int64(pause)}
	if err := s.c.Send(context.Background(), h.buf(), 0, tagResp); err != nil {
		return err
	}
	return s.replay(k)
}

// replay handles the requests that arrived before the key did.
func (s *server) replay(k int) error {
	es := s.pending[k]
	delete(s.pending, k)
	for _, e := range es {
		if err := s.handle(e); err != nil {
			return err
		}
	}
	return nil
}
