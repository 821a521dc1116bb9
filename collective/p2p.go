package collective

import (
	"context"

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
	buf, _ = typed(buf, buf)
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
	if err := c.checkCount(k, buf.Len()); err != nil {
		return false, nil, err
	}
	if err := c.usable(k); err != nil {
		return false, nil, err
	}
	if peer == ProcNull {
		return false, nil, nil
	}
	*a = driver.Call{Kind: k, DType: buf.dt, Count: buf.Len(), Peer: peer, Tag: tag}
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
	a := new(driver.Call)
	if ok, _, err := c.p2p(a, driver.Send, buf, dest, tag); !ok {
		return err
	}
	return c.result(driver.Send, c.conn.Run(ctx, a))
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
	a := new(driver.Call)
	ok, finish, err := c.p2p(a, driver.Recv, buf, source, tag)
	if !ok {
		if err == nil {
			return nullStatus, nil
		}
		return Status{}, err
	}
	if err := c.result(driver.Recv, c.conn.Run(ctx, a)); err != nil {
		return Status{}, err
	}
	if finish != nil {
		if err := finish(); err != nil {
			return Status{}, c.result(driver.Recv, c.deviceFailure(driver.Recv, err))
		}
	}
	return a.Status, nil
}

// ISend is Send without waiting: buf must not change until the request
// completes.
func (c *Comm) ISend(buf Buffer, dest, tag int) *Request { return c.start(driver.Send, buf, dest, tag) }

// IRecv is Recv without waiting; the request's Status reports the message
// once it completes. Receives are matched in the order they were posted.
func (c *Comm) IRecv(buf Buffer, source, tag int) *Request {
	return c.start(driver.Recv, buf, source, tag)
}

func (c *Comm) start(k driver.Kind, buf Buffer, peer, tag int) *Request {
	r := &Request{c: c}
	ok, finish, err := c.p2p(&r.call, k, buf, peer, tag)
	if !ok {
		r.finish(err)
		if err == nil {
			r.call.Kind, r.call.Status = k, nullStatus
		}
		return r
	}
	p, err := c.conn.Start(&r.call)
	if err != nil {
		r.finish(c.result(k, err))
		return r
	}
	r.pending, r.finishP2P = p, finish
	return r
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
	out := Buffer{b: append([]byte(nil), buf.b...), dt: buf.dt}
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
