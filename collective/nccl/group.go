package nccl

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/weft-hpc/weft/cuda"
)

// group is the state of one Group call: NCCL's group is per OS thread, so
// the calls of fn, made on Group's locked thread, find it by thread id.
type group struct {
	comms   []*Comm
	pending []pendingReq
}

type pendingReq struct {
	r *Request
	s *cuda.Stream
}

var (
	groupsMu sync.Mutex
	groups   = map[int]*group{}
)

func currentGroup() *group {
	groupsMu.Lock()
	defer groupsMu.Unlock()
	return groups[gettid()]
}

func (g *group) add(c *Comm, r *Request, s *cuda.Stream) {
	found := false
	for _, x := range g.comms {
		found = found || x == c
	}
	if !found {
		g.comms = append(g.comms, c)
	}
	g.pending = append(g.pending, pendingReq{r, s})
}

// Group runs fn between ncclGroupStart and ncclGroupEnd, so that the
// operations fn queues are launched together: Send/Recv pairs that must
// progress concurrently, or collectives of several communicators driven by
// one goroutine (one per device). fn must queue them from its own
// goroutine (the group belongs to Group's OS thread). The Requests fn got
// complete as usual once Group has returned; an error of Group is also
// theirs. Groups nest, as in NCCL.
func Group(fn func() error) error { return groupWith(std, fn) }

func groupWith(l *library, fn func() error) error {
	api, err := l.load()
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := gettid()
	groupsMu.Lock()
	outer := groups[tid]
	g := outer
	if g == nil {
		g = &group{}
		groups[tid] = g
	}
	groupsMu.Unlock()
	if r := api.groupStart(); r != Success {
		return resultErr(api, 0, "ncclGroupStart", r)
	}
	ferr := fn()
	r := api.groupEnd()
	if outer != nil { // nested: the outermost Group finishes the requests
		return errors.Join(ferr, resultErr(api, 0, "ncclGroupEnd", okInProgress(r)))
	}
	groupsMu.Lock()
	delete(groups, tid)
	groupsMu.Unlock()
	err = errors.Join(ferr, resultErr(api, 0, "ncclGroupEnd", okInProgress(r)))
	if err == nil {
		for _, c := range g.comms {
			if e := cuda.OnDevice(c.dev, func() error {
				return settle(context.Background(), c.api, c.h, c.timeout, "group did not finish queueing")
			}); e != nil {
				c.Abort()
				err = errors.Join(err, fmt.Errorf("rank %d: %w", c.rank, e))
			}
		}
	}
	for _, p := range g.pending {
		e := err
		if e == nil {
			e = cuda.OnDevice(p.r.c.dev, func() error { return p.r.record(p.s) })
		}
		if e != nil {
			p.r.mu.Lock()
			p.r.finish(opError(p.r.op, p.r.c.rank, e))
			p.r.mu.Unlock()
		}
	}
	return err
}

func okInProgress(r Result) Result {
	if r == InProgress {
		return Success
	}
	return r
}
