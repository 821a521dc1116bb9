package psmode

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/weft-hpc/weft/collective"
)

// Worker is a worker rank's client of the servers: non-blocking Push and
// Pull of keys, and Step, a synchronous iteration over every key.
//
// Push and Pull may be called from several goroutines; at most one Pull of
// a key may be pending at a time. Step, Init and Close must not run
// concurrently with each other or with Push and Pull.
type Worker struct {
	c, wc  *collective.Comm // world, workers
	cfg    *Config
	layout *Layout
	table  Table
	step   int64

	sendMu []sync.Mutex // per server: a header and its payload go out together
	mu     sync.Mutex
	pulls  map[int]*Op
	failed error
	recv   sync.WaitGroup
	closed bool

	sched *scheduler // worker 0 only
	last  time.Time
}

// Op is a Push or Pull in flight.
type Op struct {
	done chan struct{}
	err  error
	dst  []float32
	key  int
}

func newOp() *Op { return &Op{done: make(chan struct{})} }

func (o *Op) finish(err error) {
	o.err = err
	close(o.done)
}

// Wait blocks until the operation is complete and returns its error. When
// ctx ends first it returns ctx's error; the operation stays in flight.
func (o *Op) Wait(ctx context.Context) error {
	select {
	case <-o.done:
		return o.err
	case <-ctx.Done():
		return fmt.Errorf("psmode: %w", ctx.Err())
	}
}

// Test reports whether the operation is complete, and its error if it is.
func (o *Op) Test() (bool, error) {
	select {
	case <-o.done:
		return true, o.err
	default:
		return false, nil
	}
}

func newWorker(c, wc *collective.Comm, cfg *Config, layout *Layout) *Worker {
	w := &Worker{c: c, wc: wc, cfg: cfg, layout: layout, table: UniformTable(layout, cfg.Servers),
		sendMu: make([]sync.Mutex, cfg.serverRanks()), pulls: map[int]*Op{}}
	if c.Rank() == 0 {
		w.sched = newScheduler(cfg, layout, w.table)
	}
	for s := 0; s < cfg.serverRanks(); s++ {
		w.recv.Add(1)
		go w.receive(s)
	}
	return w
}

// Rank is this worker's rank (worker ranks are world ranks [0, Workers)).
func (w *Worker) Rank() int { return w.c.Rank() }

// Comm is the communicator of the workers alone, for the workers' own
// collectives (evaluation, data exchange).
func (w *Worker) Comm() *collective.Comm { return w.wc }

// Layout is the keys of the job.
func (w *Worker) Layout() *Layout { return w.layout }

// Table is the shard table this worker uses now.
func (w *Worker) Table() Table { return w.table.Clone() }

// StepCount is the number of Steps done.
func (w *Worker) StepCount() int64 { return w.step }

// Scheduler returns the scheduler's record on worker 0, nil elsewhere.
func (w *Worker) Scheduler() *Record {
	if w.sched == nil {
		return nil
	}
	return &w.sched.rec
}

func (w *Worker) serverRank(s int) int { return w.cfg.Workers + s }

// fail makes every pending and later operation return err.
func (w *Worker) fail(err error) {
	w.mu.Lock()
	if w.failed == nil {
		w.failed = err
	}
	ps := w.pulls
	w.pulls = map[int]*Op{}
	w.mu.Unlock()
	for _, o := range ps {
		o.finish(err)
	}
}

// receive reads the responses of server s in order.
func (w *Worker) receive(s int) {
	defer w.recv.Done()
	ctx := context.Background()
	r := w.serverRank(s)
	wrap := func(err error) error { return w.serverError(s, err) }
	for {
		var h header
		if _, err := w.c.Recv(ctx, h.buf(), r, tagResp); err != nil {
			w.fail(wrap(err))
			return
		}
		switch h[hOp] {
		case respBye:
			return
		case respAck:
			if w.sched != nil {
				w.sched.ack(s, int(h[hKey]), time.Duration(h[hA]))
			}
		case respPull:
			k := int(h[hKey])
			w.mu.Lock()
			o := w.pulls[k]
			delete(w.pulls, k)
			w.mu.Unlock()
			if o == nil || len(o.dst) != int(h[hN]) {
				w.fail(wrap(fmt.Errorf("unexpected value of key %d", k)))
				return
			}
			if _, err := w.c.Recv(ctx, collective.Buf(o.dst), r, tagRespData); err != nil {
				err = wrap(err)
				o.finish(err)
				w.fail(err)
				return
			}
			if w.sched != nil {
				w.sched.observe(s, k, &h)
			}
			o.finish(nil)
		default:
			w.fail(wrap(fmt.Errorf("unknown response %d", h[hOp])))
			return
		}
	}
}

// send sends a header (and payload) to server s and returns an Op that
// completes when the buffers may be reused.
func (w *Worker) send(s int, h *header, payload []float32) *Op {
	o := newOp()
	r := w.serverRank(s)
	w.sendMu[s].Lock()
	r1 := w.c.ISend(h.buf(), r, tagReq)
	var r2 *collective.Request
	if payload != nil {
		r2 = w.c.ISend(collective.Buf(payload), r, tagReqData)
	}
	w.sendMu[s].Unlock()
	go func() {
		err := r1.Wait(context.Background())
		if r2 != nil {
			if err2 := r2.Wait(context.Background()); err == nil {
				err = err2
			}
		}
		if err != nil {
			err = w.serverError(s, err)
		}
		o.finish(err)
	}()
	return o
}

// serverError wraps an error of an exchange with server s. When the
// communicator blames a rank, the error names that rank's role: the server
// that failed is rarely the one this worker happened to be waiting for.
func (w *Worker) serverError(s int, err error) error {
	if p := collective.PeerOf(err); p >= w.cfg.Workers && p < w.cfg.Workers+w.cfg.serverRanks() {
		return fmt.Errorf("psmode: server %d (rank %d) failed: %w", p-w.cfg.Workers, p, err)
	} else if p >= 0 && p < w.cfg.Workers {
		return fmt.Errorf("psmode: worker %d failed: %w", p, err)
	}
	return fmt.Errorf("psmode: exchange with server %d (rank %d): %w", s, w.serverRank(s), err)
}

func (w *Worker) checkKey(k int, buf []float32) {
	if k < 0 || k >= len(w.layout.Keys) {
		panic(fmt.Sprintf("psmode: key %d out of [0, %d)", k, len(w.layout.Keys)))
	}
	if n := w.layout.Keys[k].Len; len(buf) != n {
		panic(fmt.Sprintf("psmode: key %d has %d elements, buffer %d", k, n, len(buf)))
	}
}

// Push sends the gradient of key k for step (the key's version it was
// computed from) to the key's server. It does not block; grad must not be
// changed until the Op completes.
func (w *Worker) Push(k int, grad []float32, step int64) *Op {
	w.checkKey(k, grad)
	h := &header{hOp: opPush, hKey: int64(k), hStep: step, hTable: w.table.Version, hN: int64(len(grad))}
	return w.send(w.table.Owner[k], h, grad)
}

// Pull asks for key k at version minVersion or later (in synchronous mode
// version v is the value after v steps) into dst. It does not block; dst
// must not be read until the Op completes.
func (w *Worker) Pull(k int, dst []float32, minVersion int64) *Op {
	w.checkKey(k, dst)
	o := newOp()
	o.dst, o.key = dst, k
	w.mu.Lock()
	if w.failed != nil {
		err := w.failed
		w.mu.Unlock()
		o.finish(err)
		return o
	}
	if w.pulls[k] != nil {
		w.mu.Unlock()
		panic(fmt.Sprintf("psmode: a pull of key %d is already pending", k))
	}
	w.pulls[k] = o
	w.mu.Unlock()
	h := &header{hOp: opPull, hKey: int64(k), hVersion: minVersion, hTable: w.table.Version}
	if so := w.send(w.table.Owner[k], h, nil); so != nil {
		go func() {
			if err := so.Wait(context.Background()); err != nil {
				w.fail(err)
			}
		}()
	}
	return o
}

func waitAll(ctx context.Context, ops []*Op) error {
	var first error
	for _, o := range ops {
		if err := o.Wait(ctx); err != nil && first == nil {
			first = err
			if ctx.Err() != nil {
				break
			}
		}
	}
	return first
}

// Init gives the servers the initial parameters (worker 0's params) and
// copies them into params on every worker. It blocks; it is collective
// over the workers.
func (w *Worker) Init(ctx context.Context, params []float32) error {
	if len(params) != w.layout.Total {
		panic(fmt.Sprintf("psmode: %d parameters, layout has %d", len(params), w.layout.Total))
	}
	var ops []*Op
	if w.c.Rank() == 0 {
		for _, k := range w.layout.Keys {
			h := &header{hOp: opInit, hKey: int64(k.ID), hN: int64(k.Len)}
			ops = append(ops, w.send(w.table.Owner[k.ID], h, params[k.Off:k.Off+k.Len]))
		}
		if err := waitAll(ctx, ops); err != nil {
			return err
		}
		ops = ops[:0]
	}
	for _, k := range w.layout.Keys {
		ops = append(ops, w.Pull(k.ID, params[k.Off:k.Off+k.Len], 0))
	}
	if err := waitAll(ctx, ops); err != nil {
		return err
	}
	w.last = time.Now()
	return nil
}

// Step pushes grads (the whole flat gradient) for every key and pulls the
// updated parameters into params: in synchronous mode the value after this
// step on every server, in asynchronous mode the current one. At the step
// boundary the workers agree on the shard table (PSLD may change it). It
// blocks; it is collective over the workers.
func (w *Worker) Step(ctx context.Context, grads, params []float32) error {
	if len(grads) != w.layout.Total || len(params) != w.layout.Total {
		panic(fmt.Sprintf("psmode: step with %d gradients and %d parameters, layout has %d", len(grads), len(params), w.layout.Total))
	}
	ops := make([]*Op, 0, 2*len(w.layout.Keys))
	for _, k := range w.layout.Keys {
		ops = append(ops, w.Push(k.ID, grads[k.Off:k.Off+k.Len], w.step))
	}
	minV := w.step + 1
	if w.cfg.Async {
		minV = 0
	}
	for _, k := range w.layout.Keys {
		ops = append(ops, w.Pull(k.ID, params[k.Off:k.Off+k.Len], minV))
	}
	if err := waitAll(ctx, ops); err != nil {
		return err
	}
	return w.endStep(ctx)
}

// endStep counts a step whose pushes and pulls are done and, under PSLD,
// runs the step boundary.
func (w *Worker) endStep(ctx context.Context) error {
	w.step++
	if w.cfg.Balance == "psld" {
		return w.boundary(ctx)
	}
	return nil
}

// boundary is the end of a step under PSLD: the scheduler (worker 0)
// decides, every worker learns the table in one allreduce (which also
// proves that every worker's pulls of the step are done, so moving keys are
// quiescent), and the scheduler tells the servers to move the keys.
func (w *Worker) boundary(ctx context.Context) error {
	nk := len(w.layout.Keys)
	plan := make([]int64, 2+nk)
	var next Table
	changed := false
	if w.sched != nil {
		now := time.Now()
		next, changed = w.sched.decide(w.step, now.Sub(w.last))
		w.last = now
		if changed {
			plan[0], plan[1] = 1, next.Version
			for k, s := range next.Owner {
				plan[2+k] = int64(s)
			}
		}
	}
	if err := w.wc.AllReduce(ctx, collective.Buf(plan), collective.Buf(plan), collective.Sum); err != nil {
		return fmt.Errorf("psmode: table agreement: %w", err)
	}
	if plan[0] == 0 {
		return nil
	}
	old := w.table
	w.table = Table{Version: plan[1], Owner: make([]int, nk)}
	for k := range w.table.Owner {
		w.table.Owner[k] = int(plan[2+k])
	}
	if w.sched == nil {
		return nil
	}
	var ops []*Op
	for _, k := range moves(old, w.table) {
		from, to := old.Owner[k], w.table.Owner[k]
		ops = append(ops,
			w.send(from, &header{hOp: opMigrateOut, hKey: int64(k), hTable: w.table.Version, hA: int64(w.serverRank(to))}, nil),
			w.send(to, &header{hOp: opMigrateIn, hKey: int64(k), hTable: w.table.Version, hA: int64(w.serverRank(from))}, nil))
	}
	return waitAll(ctx, ops)
}

// Close tells every server this worker is done and waits for their
// goodbyes. It does not close the communicator.
func (w *Worker) Close(ctx context.Context) error {
	if w.closed {
		return nil
	}
	w.closed = true
	var ops []*Op
	w.mu.Lock()
	failed := w.failed
	w.mu.Unlock()
	if failed == nil {
		for s := 0; s < w.cfg.serverRanks(); s++ {
			ops = append(ops, w.send(s, &header{hOp: opBye}, nil))
		}
		if err := waitAll(ctx, ops); err != nil {
			return err
		}
	}
	done := make(chan struct{})
	go func() { w.recv.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("psmode: close: %w", ctx.Err())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed != nil && !errors.Is(w.failed, collective.ErrClosed) {
		return w.failed
	}
	return nil
}
