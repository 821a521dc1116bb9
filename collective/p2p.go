package collective

import (
	"context"
	"errors"
	"sync"

	"github.com/weft-hpc/weft/collective/driver"
)

// Wildcards and the null peer, as in MPI (MPI_ANY_SOURCE, MPI_ANY_TAG,
// MPI_PROC_NULL).
const (
	// AnySource as the source of a receive or a probe matches a message
	// from any rank; the Status says which.
	AnySource = driver.AnySource
	// AnyTag as the tag of a receive or a probe matches any tag.
	AnyTag = driver.AnyTag
	// ProcNull as a peer makes a send or receive that does nothing and
	// completes at once, so that the ranks at the edge of a grid need no
	// branch (Cart.Shift gives it past a non-periodic edge). A receive
	// from ProcNull reports Source ProcNull, Tag AnyTag, no bytes.
	ProcNull = driver.ProcNull
)

// Status describes a received or probed message: its source (a rank of the
// communicator), its tag and its size; Count(dt) gives its elements.
type Status = driver.Status

// p2p checks a point-to-point call's arguments and describes it in a; it
// reports false for a call with ProcNull, which does nothing. A call on
// device memory is staged through host memory: finish, when not nil, must
// run once the call has completed well.
func (c *Comm) p2p(a *driver.Call, k driver.Kind, buf Buffer, peer, tag int) (ok bool, finish func() error, err error) {
	typed(&buf, &buf)
	if !buf.dt.Valid() {
		return false, nil, c.invalid(k, "buffer has invalid type %d", buf.dt)
	}
	wild := k == driver.Recv
	switch {
	case peer == ProcNull:
	case peer == AnySource && wild:
	case peer < 0 || peer >= c.size:
		what := "a rank"
		if wild {
			what += ", AnySource"
		}
		return false, nil, c.invalid(k, "peer %d is not %s or ProcNull of a communicator of %d", peer, what, c.size)
	}
	if (tag < 0 || tag > c.maxTag) && !(wild && tag == AnyTag) {
		return false, nil, c.invalid(k, "tag %d outside [0, %d]", tag, c.maxTag)
	}
	var vec *driver.Vector
	if buf.vec != nil {
		if bad := buf.checkVector(); bad != "" {
			return false, nil, c.invalid(k, "%s", bad)
		}
		vec = &buf.vec.v // never changed after Vector made it
		if err := c.checkCount(k, len(buf.b)/buf.dt.Size()); err != nil {
			return false, nil, err
		}
	}
	n := buf.Len()
	if err := c.checkCount(k, n); err != nil {
		return false, nil, err
	}
	if err := c.usable(k); err != nil {
		return false, nil, err
	}
	if peer == ProcNull {
		return false, nil, nil
	}
	// a is zero (getCall, newRequest): its fields are set in place, as
	// in blocking.
	a.Kind, a.DType, a.Count, a.Peer, a.Tag, a.Vector = k, buf.dt, n, peer, tag, vec
	if buf.mem != nil {
		finish, err := c.stageP2P(k, a, buf)
		return err == nil, finish, err
	}
	if k == driver.Send {
		a.Send = buf.b
	} else {
		a.Recv = buf.b
	}
	return true, nil, nil
}

// nullStatus is a receive from ProcNull.
var nullStatus = Status{Source: ProcNull, Tag: AnyTag}

// Send sends buf to rank dest with a tag (>= 0) and returns when buf may
// be reused. On Weft's transports it never waits for the matching receive;
// with the mpi backend a large message may (MPI's standard mode). A
// program that must not deadlock whatever the backend exchanges with
// Sendrecv, or posts IRecv before Send. dest may be ProcNull, or this
// rank: a send to oneself never waits for its receive, on every backend
// (the message is buffered until this rank receives it), as does an
// ISend's Wait, so Send to self then Recv works whatever the size.
func (c *Comm) Send(ctx context.Context, buf Buffer, dest, tag int) error {
	a := getCall()
	if ok, _, err := c.p2p(a, driver.Send, buf, dest, tag); !ok {
		putCall(a)
		return err
	}
	err := c.conn.Run(ctx, a)
	if err == nil {
		putCall(a)
	}
	return c.result(driver.Send, err)
}

// callPool holds the driver calls of the blocking Send and Recv, so that a
// message costs no allocation of its own in the front end. A call goes back
// only after success: after an error a backend may still hold it (an MPI
// call left inside the library).
var callPool = sync.Pool{New: func() any { return new(driver.Call) }}

// getCall returns a zero Call (putCall zeroes what it takes back).
func getCall() *driver.Call { return callPool.Get().(*driver.Call) }

func putCall(a *driver.Call) {
	*a = driver.Call{}
	callPool.Put(a)
}

// Recv receives into buf the next message from rank source (or AnySource)
// with tag (or AnyTag) and reports its source, tag and size. The message
// may be shorter than buf; a longer one is an error wrapping ErrMismatch,
// as is one of another element type on Weft's transports. Messages from
// one sender that a receive could match arrive in the order they were
// sent. Recv waits as long as ctx allows while the peers are alive, on
// every backend: when ctx ends first it returns at once, with ErrAborted
// and the context's error, and the communicator is failed (see Comm).
func (c *Comm) Recv(ctx context.Context, buf Buffer, source, tag int) (Status, error) {
	a := getCall()
	ok, finish, err := c.p2p(a, driver.Recv, buf, source, tag)
	if !ok {
		putCall(a)
		if err == nil {
			return nullStatus, nil
		}
		return Status{}, err
	}
	if err := c.result(driver.Recv, c.conn.Run(ctx, a)); err != nil {
		return Status{}, err
	}
	if finish != nil { // it reads the status
		if err := finish(); err != nil {
			return Status{}, c.result(driver.Recv, c.deviceFailure(driver.Recv, err))
		}
	}
	st := a.Status
	putCall(a)
	return st, nil
}

// ISend is Send without waiting: buf must not change until the request
// completes.
func (c *Comm) ISend(buf Buffer, dest, tag int) *Request {
	r := &Request{c: c}
	c.post(r, driver.Send, buf, dest, tag, c.conn.Start)
	return r
}

// IRecv is Recv without waiting; the request's Status reports the message
// once it completes. Receives are matched in the order they were posted.
// A receive no message has matched yet can be withdrawn (Request.Cancel).
func (c *Comm) IRecv(buf Buffer, source, tag int) *Request {
	r := &Request{c: c}
	c.post(r, driver.Recv, buf, source, tag, c.conn.Start)
	return r
}

// SendInit makes a persistent send (MPI_Send_init): a Request that sends
// buf to dest with tag, as ISend does, each time Start starts it, until the
// communicator closes. Wait or Test completes one send and leaves the
// request inactive, to be started again; buf must not change while it is
// active. Wait and Test of an inactive request return at once with no
// error, and WaitAll, WaitAny, WaitSome and their Test forms take it as
// nil. The arguments are checked here (an error wrapping ErrInvalid, and
// no request) and again at each Start.
func (c *Comm) SendInit(buf Buffer, dest, tag int) (*Request, error) {
	return c.initP2P(driver.Send, buf, dest, tag)
}

// RecvInit makes a persistent receive (MPI_Recv_init): a Request that
// receives into buf from source with tag, as IRecv does, each time Start
// starts it; Status reports the last message. See SendInit.
func (c *Comm) RecvInit(buf Buffer, source, tag int) (*Request, error) {
	return c.initP2P(driver.Recv, buf, source, tag)
}

func (c *Comm) initP2P(k driver.Kind, buf Buffer, peer, tag int) (*Request, error) {
	var a driver.Call
	if buf.mem == nil { // a device send would copy its message now: Start checks it
		if _, _, err := c.p2p(&a, k, buf, peer, tag); err != nil {
			return nil, err
		}
	}
	return &Request{c: c, kind: k, persist: &persistent{kind: k, buf: buf, peer: peer, tag: tag}}, nil
}

// Start starts a persistent request (MPI_Start): its send or receive is
// posted, as ISend or IRecv posts it. A request that is not persistent, or
// one started and not yet completed by Wait or Test, gets an error wrapping
// ErrInvalid; an error of the call completes the request with it too.
func (r *Request) Start() error {
	p := r.persist
	if p == nil {
		return r.c.invalid(r.kind, "Start takes a request of SendInit or RecvInit")
	}
	if p.active {
		return r.c.invalid(p.kind, "the persistent request (peer %d, tag %d) was started and has not completed: Wait or Test it first", p.peer, p.tag)
	}
	*r = Request{c: r.c, persist: p}
	p.active = true
	return r.c.post(r, p.kind, p.buf, p.peer, p.tag, r.c.conn.Start)
}

// StartAll starts each persistent request (MPI_Startall), skipping nil
// ones, and returns the errors joined.
func StartAll(reqs ...*Request) error {
	var errs []error
	for _, r := range reqs {
		if r == nil {
			continue
		}
		if err := r.Start(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// post checks a point-to-point call, describes it in r and hands it to
// start (the backend's Start, or a matched message's); r then completes
// with the call, or has completed with its error. It returns the error of
// the checks or of start.
func (c *Comm) post(r *Request, k driver.Kind, buf Buffer, peer, tag int, start func(*driver.Call) (driver.Pending, error)) error {
	a := getCall()
	ok, finish, err := c.p2p(a, k, buf, peer, tag)
	if !ok {
		putCall(a)
		r.finish(err)
		if err == nil {
			r.kind, r.status = k, nullStatus
		}
		return err
	}
	r.kind = k
	p, err := start(a)
	if err != nil {
		err = c.result(k, err)
		r.finish(err)
		return err
	}
	r.call, r.pending, r.finishP2P = a, p, finish
	return nil
}

// Sendrecv sends send to dest and receives into recv from source, as one
// call that cannot deadlock with its peers' (MPI_Sendrecv): the portable
// way for two ranks to exchange. The buffers must not overlap.
func (c *Comm) Sendrecv(ctx context.Context, send Buffer, dest, sendTag int, recv Buffer, source, recvTag int) (Status, error) {
	r := c.ISend(send, dest, sendTag)
	st, err := c.Recv(ctx, recv, source, recvTag)
	if werr := r.Wait(ctx); err == nil {
		err = werr
	}
	return st, err
}

// SendrecvReplace is Sendrecv with one buffer: buf is sent to dest and
// replaced by the message from source (MPI_Sendrecv_replace); the message
// may be shorter than buf.
func (c *Comm) SendrecvReplace(ctx context.Context, buf Buffer, dest, sendTag, source, recvTag int) (Status, error) {
	out := Buffer{b: append([]byte(nil), buf.b...), dt: buf.dt, vec: buf.vec}
	if buf.mem != nil {
		out.b = make([]byte, buf.n)
		if err := buf.mem.CopyTo(out.b, buf.off); err != nil {
			return Status{}, c.invalid(driver.Send, "copying the message from device memory: %v", err)
		}
	}
	return c.Sendrecv(ctx, out, dest, sendTag, buf, source, recvTag)
}

// Probe waits for a message that Recv(source, tag) would receive and
// reports it without receiving it (MPI_Probe): a receiver of a message of
// unknown size sizes its buffer from Status.Count.
func (c *Comm) Probe(ctx context.Context, source, tag int) (Status, error) {
	st, _, err := c.probe(ctx, source, tag, true)
	return st, err
}

// IProbe is Probe without waiting: it reports whether such a message has
// arrived (MPI_Iprobe).
func (c *Comm) IProbe(source, tag int) (Status, bool, error) {
	return c.probe(context.Background(), source, tag, false)
}

func (c *Comm) probe(ctx context.Context, source, tag int, wait bool) (Status, bool, error) {
	const k = driver.Probe
	var a driver.Call
	if _, _, err := c.p2p(&a, driver.Recv, Buf([]byte(nil)), source, tag); err != nil {
		return Status{}, false, err
	}
	if source == ProcNull {
		return nullStatus, true, nil
	}
	st, ok, err := c.conn.Probe(ctx, source, tag, wait)
	if err != nil {
		return Status{}, false, c.result(k, err)
	}
	return st, ok, nil
}
