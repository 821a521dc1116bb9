package collective

import (
	"context"

	"github.com/weft-hpc/weft/collective/driver"
)

// Message is a message a matched probe took (MPI_Message, from MPI_Mprobe
// or MPI_Improbe): no receive matches it any more, so that a receiver can
// size its buffer from the probe and then receive that very message, even
// while other goroutines receive with the same source and tag (with Probe
// then Recv, another receive may take the message in between). Receive it
// once, with Recv or IRecv; a Message never received stays with the
// communicator until it closes.
type Message struct {
	c    *Comm
	st   Status
	m    driver.Matched // nil for a probe of ProcNull (MPI_MESSAGE_NO_PROC)
	used bool
}

// Mprobe waits for a message that Recv(source, tag) would receive and
// takes it (MPI_Mprobe): m.Status() reports it, m.Recv receives it. If ctx
// ends first, Mprobe returns an error wrapping ErrAborted and the
// communicator is failed, as for Probe. A probe of ProcNull returns at
// once a Message whose receive completes with nothing.
func (c *Comm) Mprobe(ctx context.Context, source, tag int) (*Message, error) {
	m, _, err := c.mprobe(ctx, source, tag, true)
	return m, err
}

// Improbe is Mprobe without waiting (MPI_Improbe): it reports whether a
// message was there, and takes it if so.
func (c *Comm) Improbe(source, tag int) (*Message, bool, error) {
	return c.mprobe(context.Background(), source, tag, false)
}

func (c *Comm) mprobe(ctx context.Context, source, tag int, wait bool) (*Message, bool, error) {
	const k = driver.Probe
	var a driver.Call
	if _, _, err := c.p2p(&a, driver.Recv, Buf([]byte(nil)), source, tag); err != nil {
		return nil, false, err
	}
	if source == ProcNull {
		return &Message{c: c, st: nullStatus}, true, nil
	}
	pr, ok := c.conn.(driver.Prober)
	if !ok {
		return nil, false, c.invalid(k, "backend %s has no matched probe", c.backend)
	}
	h, st, found, err := pr.Mprobe(ctx, source, tag, wait)
	if err != nil {
		return nil, false, c.result(k, err)
	}
	if !found {
		return nil, false, nil
	}
	return &Message{c: c, st: st, m: h}, true, nil
}

// Status reports the message: its source, tag and size (Count gives its
// elements), as the probe found it.
func (m *Message) Status() Status { return m.st }

// Recv receives the message into buf (MPI_Mrecv), as Recv would: buf may
// be longer than the message, and a shorter one is an error that fails the
// communicator. A Message is received once: a second Recv or IRecv
// returns an error wrapping ErrInvalid.
func (m *Message) Recv(ctx context.Context, buf Buffer) (Status, error) {
	r := m.IRecv(buf)
	if err := r.Wait(ctx); err != nil {
		return Status{}, err
	}
	return r.Status(), nil
}

// IRecv is Recv without waiting (MPI_Imrecv).
func (m *Message) IRecv(buf Buffer) *Request {
	c := m.c
	r := &Request{c: c}
	if m.used {
		r.finish(c.invalid(driver.Recv, "the message (source %d, tag %d) was received already", m.st.Source, m.st.Tag))
		return r
	}
	if m.m == nil { // ProcNull
		if err := c.post(r, driver.Recv, buf, ProcNull, AnyTag, nil); err == nil {
			m.used = true
		}
		return r
	}
	if c.post(r, driver.Recv, buf, m.st.Source, m.st.Tag, m.m.Start) == nil {
		m.used = true
	}
	return r
}
