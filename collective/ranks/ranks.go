// Package ranks runs a function on every rank of a world: n goroutine
// ranks of this process (collective.NewLocal), or this process's rank of
// the world a launcher started (collective.Open). It is the one rank
// harness of Weft's trainers and benchmarks (weft train, weft train gnn,
// weft bench, weft ps, package psmode/psbench and the tests of sapipe and
// psmode), so that they all fail the same way.
//
// # Error policy
//
// The first rank whose function returns an error decides the outcome: Run
// returns that error wrapped in an *Error that names the rank, and cancels
// the others. Cancelling means two things: the context every rank's
// function got is cancelled, and the failing rank's communicator is
// aborted (collective.Comm.Abort), which fails every pending and later
// operation of the world's other ranks, in this process and, on Weft's
// own transports, in the other processes of a launch, so that no rank
// waits for a peer that has given up. The errors the other ranks return
// after that follow from the first and are dropped. Run returns nil only
// when every rank's function returned nil.
//
// Run closes each rank's communicator when its function returns.
//
// # Concurrency
//
// With n > 0, fn runs on n goroutines at once, one per rank, each with its
// own communicator; what fn shares across ranks it must guard itself.
// Run blocks until every rank's function has returned.
package ranks

import (
	"context"
	"fmt"
	"sync"

	"github.com/weft-hpc/weft/collective"
)

// Error is the failure of one rank: the first of a world's (see the
// package's error policy).
type Error struct {
	Rank int
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("rank %d: %v", e.Rank, e.Err) }

func (e *Error) Unwrap() error { return e.Err }

// Run calls fn on every rank of a world and returns the first rank's
// failure (see the package doc). With n > 0 the world is n goroutine ranks
// of this process, communicators from collective.NewLocal(n, opts...);
// with n == 0 it is this process's rank of the launched world,
// collective.Open(ctx, opts...). Errors of NewLocal and Open are returned
// as they are. A negative n is an error.
func Run(ctx context.Context, n int, fn func(ctx context.Context, c *collective.Comm) error, opts ...collective.Option) error {
	switch {
	case n < 0:
		return fmt.Errorf("ranks: %d ranks: want 0 (the launched world) or more", n)
	case n == 0:
		c, err := collective.Open(ctx, opts...)
		if err != nil {
			return err
		}
		defer c.Close()
		if err := fn(ctx, c); err != nil {
			c.Abort()
			return &Error{Rank: c.Rank(), Err: err}
		}
		return nil
	}
	cs, err := collective.NewLocal(n, opts...)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		once  sync.Once
		first error
		wg    sync.WaitGroup
	)
	for r, c := range cs {
		wg.Go(func() {
			defer c.Close()
			if err := fn(ctx, c); err != nil {
				once.Do(func() {
					first = &Error{Rank: r, Err: err}
					cancel()
					c.Abort()
				})
			}
		})
	}
	wg.Wait()
	return first
}
