package engine

import (
	"fmt"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/internal/wire"
)

// Frames out: data frames go through write, under the peer's write lock,
// and the heartbeat writes on links that have been idle. (The goodbye is
// close's, the abort frames are vote.go's, the probes agree.go's.)

// write sends one frame to p.
func (p *peer) write(h *wire.Header, payload []byte) error {
	return p.writeNumbered(h, payload, nil)
}

// writeNumbered is write that, when seq is not nil, first takes the
// frame's h.Seq from *seq and advances it, under the write lock: frames
// numbered so go out in the order of their numbers.
func (p *peer) writeNumbered(h *wire.Header, payload []byte, seq *uint64) error {
	if f := p.ep.failure(); f != nil {
		// After a failure only abort frames, with their own deadline, go out.
		return f
	}
	p.wmu.Lock()
	if seq != nil {
		h.Seq = *seq
		*seq++
	}
	err := p.broken
	if err == nil {
		err = p.link.WriteFrame(h, payload)
		if err != nil {
			p.broken = err
		}
		p.wrote.Store(true)
	}
	p.wmu.Unlock()
	if err == nil {
		return nil
	}
	if f := p.ep.failure(); f != nil {
		return f
	}
	f := &driver.Failure{Kind: driver.ErrPeerLost, Culprit: p.rank, Origin: -1,
		Msg: fmt.Sprintf("sending to rank %d failed (its process died, or the network between us broke)", p.rank), Cause: err}
	p.ep.failWith(f)
	return p.ep.failure()
}

func (ep *endpoint) heartbeat() {
	defer ep.wg.Done()
	iv := ep.cfg.timeout / 8
	t := time.NewTicker(iv)
	defer t.Stop()
	h := wire.Header{Kind: wire.KindHeartbeat}
	for {
		select {
		case <-ep.stop:
			return
		case <-t.C:
		}
		// A failed endpoint beats on: its live links stay watched for the
		// survivors' agreement (recover.go).
		now := time.Now()
		ep.coarse.Store(now.UnixNano())
		for _, p := range ep.peers {
			if p == nil || p.wrote.Swap(false) || !p.wmu.TryLock() {
				continue
			}
			if p.broken == nil {
				p.link.SetWriteDeadline(now.Add(ep.cfg.timeout / 4))
				if err := p.link.WriteFrame(&h, nil); err != nil {
					p.broken = err
				}
				p.link.SetWriteDeadline(time.Time{})
			}
			p.wmu.Unlock()
		}
	}
}
