package collective

import (
	"context"
	"errors"
	"fmt"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/cuda"
)

// stager runs collectives on device memory through pinned host memory and
// a host backend (see device.go).
type stager struct {
	dev      int
	d2h, h2d *cuda.Stream
	host     *cuda.Host // pinned; grows to the largest call
	down, up [3]*cuda.Event
}

func newStager(dev int) (*stager, error) {
	s := &stager{dev: dev}
	var err error
	if s.d2h, err = cuda.NewStream(dev); err == nil {
		s.h2d, err = cuda.NewStream(dev)
	}
	for i := range s.down {
		if err == nil {
			s.down[i], err = cuda.NewEvent(dev, false)
		}
		if err == nil {
			s.up[i], err = cuda.NewEvent(dev, false)
		}
	}
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *stager) close() {
	for _, st := range []*cuda.Stream{s.d2h, s.h2d} {
		if st != nil {
			st.Synchronize(context.Background())
			st.Close()
		}
	}
	for i := range s.down {
		for _, e := range []*cuda.Event{s.down[i], s.up[i]} {
			if e != nil {
				e.Close()
			}
		}
	}
	if s.host != nil {
		s.host.Free()
	}
}

// pinned returns at least n bytes of pinned memory.
func (s *stager) pinned(n int) ([]byte, error) {
	if s.host != nil && s.host.Len() >= n {
		return s.host.Bytes()[:n], nil
	}
	if s.host != nil {
		s.host.Free() // the streams are idle between calls
		s.host = nil
	}
	h, err := cuda.AllocHost(max(n, 2*stageChunk))
	if err != nil {
		return nil, err
	}
	s.host = h
	return h.Bytes()[:n], nil
}

// elementwise reports whether a chunk of a call's elements is a call of
// its own: the pipelined kinds.
func elementwise(k driver.Kind) bool {
	switch k {
	case driver.AllReduce, driver.Reduce, driver.Broadcast, driver.Scan, driver.Exscan:
		return true
	}
	return false
}

// run runs a on conn through pinned memory.
func (s *stager) run(ctx context.Context, conn driver.Conn, a *driver.Call) error {
	if elementwise(a.Kind) && a.Count > 0 {
		return s.pipelined(ctx, conn, a)
	}
	return s.whole(ctx, conn, a)
}

// whole copies the send buffer to the host, runs the call there, and copies
// the result back.
func (s *stager) whole(ctx context.Context, conn driver.Conn, a *driver.Call) error {
	ns, nr := a.SendDev.Bytes, a.RecvDev.Bytes
	buf, err := s.pinned(ns + nr)
	if err != nil {
		return err
	}
	h := *a
	h.OnDevice, h.SendDev, h.RecvDev = false, driver.DeviceMem{}, driver.DeviceMem{}
	h.Send, h.Recv = buf[:ns:ns], buf[ns:ns+nr:ns+nr]
	if ns > 0 {
		if err := cuda.CopyToHost(s.d2h, s.host, 0, cuda.DevicePtr(a.SendDev.Ptr), ns); err != nil {
			return err
		}
		if err := s.d2h.Synchronize(ctx); err != nil {
			return err
		}
	}
	if err := conn.Run(ctx, &h); err != nil {
		return err
	}
	a.Status = h.Status
	if nr > 0 && !(a.Kind == driver.Exscan && conn.Rank() == 0) {
		if err := cuda.CopyToDevice(s.h2d, cuda.DevicePtr(a.RecvDev.Ptr), s.host, ns, nr); err != nil {
			return err
		}
		return s.h2d.Synchronize(ctx)
	}
	return nil
}

// pipelined runs an elementwise call chunk by chunk through three pinned
// slots of a send and a receive area each: chunk i+1 moves to the host
// while chunk i's host call runs and chunk i-1 moves back.
func (s *stager) pipelined(ctx context.Context, conn driver.Conn, a *driver.Call) error {
	es := a.DType.Size()
	per := max(1, stageChunk/es)
	chunks := (a.Count + per - 1) / per
	slot := per * es
	if _, err := s.pinned(6 * slot); err != nil {
		return err
	}
	rank := conn.Rank()
	sendsData := a.SendDev.Bytes > 0
	getsData := a.RecvDev.Bytes > 0 && !(a.Kind == driver.Exscan && rank == 0)
	if a.Kind == driver.Broadcast {
		sendsData = rank == a.Root
	}
	span := func(i int) (off, n int) { // chunk i's bytes in the device buffers
		off = i * per * es
		return off, min(per*es, a.Count*es-off)
	}
	sendArea := func(i int) int { return (i % 3) * 2 * slot }
	recvArea := func(i int) int { return sendArea(i) + slot }
	if a.Kind == driver.Broadcast {
		recvArea = sendArea // the one buffer
	}
	down := func(i int) error { // queue chunk i's copy to the host
		if i >= 3 {
			if err := s.up[i%3].Wait(ctx); err != nil { // the slot's last chunk has moved back
				return err
			}
		}
		off, n := span(i)
		if sendsData {
			if err := cuda.CopyToHost(s.d2h, s.host, sendArea(i), cuda.DevicePtr(a.SendDev.Ptr).Add(off), n); err != nil {
				return err
			}
		}
		return s.down[i%3].Record(s.d2h)
	}
	if err := down(0); err != nil {
		return err
	}
	for i := range chunks {
		if i+1 < chunks {
			if err := down(i + 1); err != nil {
				return err
			}
		}
		if err := s.down[i%3].Wait(ctx); err != nil {
			return err
		}
		off, n := span(i)
		h := *a
		h.OnDevice, h.SendDev, h.RecvDev = false, driver.DeviceMem{}, driver.DeviceMem{}
		h.Count = n / es
		hb := s.host.Bytes()
		h.Send = hb[sendArea(i) : sendArea(i)+n : sendArea(i)+n]
		h.Recv = hb[recvArea(i) : recvArea(i)+n : recvArea(i)+n]
		if a.RecvDev.Bytes == 0 {
			h.Recv = nil // a Reduce's non-root
		}
		if err := conn.Run(ctx, &h); err != nil {
			return err
		}
		if getsData {
			if err := cuda.CopyToDevice(s.h2d, cuda.DevicePtr(a.RecvDev.Ptr).Add(off), s.host, recvArea(i), n); err != nil {
				return err
			}
		}
		if err := s.up[i%3].Record(s.h2d); err != nil {
			return err
		}
	}
	if err := s.h2d.Synchronize(ctx); err != nil {
		return err
	}
	return s.d2h.Synchronize(ctx)
}

// stageP2P stages a point-to-point call on device memory through host
// memory, with blocking copies: a send copies its buffer to the host
// before it is issued; a receive gets a host buffer and, through finish,
// copies what arrived back once it completes.
func (c *Comm) stageP2P(k driver.Kind, a *driver.Call, buf Buffer) (finish func() error, err error) {
	host := make([]byte, buf.n)
	if k == driver.Send {
		if err := buf.mem.CopyTo(host, buf.off); err != nil {
			return nil, c.invalid(k, "copying the message from device memory: %v", err)
		}
		a.Send = host
		return nil, nil
	}
	a.Recv = host
	return func() error {
		n := a.Status.Bytes
		if n > len(host) {
			return errors.New("collective: a message longer than its receive buffer") // the backend failed it already
		}
		if err := buf.mem.CopyFrom(buf.off, host[:n]); err != nil {
			return fmt.Errorf("collective: copying the message to device memory: %w", err)
		}
		return nil
	}, nil
}
