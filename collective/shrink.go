package collective

import (
	"context"
	"fmt"

	"github.com/weft-hpc/weft/collective/driver"
)

// Fault tolerance after a failure, as ULFM gives MPI (MPI_Comm_agree,
// MPI_Comm_shrink, MPIX_Comm_failure_get_acked) and NCCL 2.27 gives
// ncclCommShrink: on Weft's transports the ranks that survive a failure
// agree on who failed and go on in a smaller communicator. The algorithm
// and its limits are in collective/engine's recover.go and docs/MPI.md.

// shrinker is c's backend's fault tolerance, or the error saying it has none.
func (c *Comm) shrinker(op string) (driver.Shrinker, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, &OpError{Op: op, Backend: c.backend, Rank: c.me, Peer: -1, Err: ErrClosed}
	}
	s, ok := c.conn.(driver.Shrinker)
	if !ok {
		return nil, &OpError{Op: op, Backend: c.backend, Rank: c.me, Peer: -1, Err: &driver.Failure{Kind: ErrNotBuilt,
			Culprit: -1, Origin: c.me, Msg: fmt.Sprintf("the %s backend cannot agree after a failure (MPI needs ULFM's MPIX_Comm_agree and MPIX_Comm_shrink; Weft's own transports have them)", c.backend)}}
	}
	return s, nil
}

// Agree is a fault-tolerant agreement, as ULFM's MPI_Comm_agree: every
// rank of c that has not failed calls it (after a failure or not), and
// each gets the bitwise AND of the flags of the survivors and the ranks
// of c that the survivors agree have failed, in increasing order: the
// same on every survivor, even when ranks fail during the call (a rank
// that fails part-way is either counted failed or its flag counts). It
// works on a failed communicator: that is what it is for. The survivors
// make their Agree and Shrink calls on c in the same order. It returns
// when every survivor has called it, or with an error wrapping ErrAborted
// when ctx ends; a rank the others counted failed gets ErrPeerLost.
// Keep c open until the survivors have all returned from it (Shrink's
// communicator keeps it open while it is).
func (c *Comm) Agree(ctx context.Context, flag uint64) (and uint64, failed []int, err error) {
	s, err := c.shrinker("Agree")
	if err != nil {
		return 0, nil, err
	}
	and, failed, err = s.Agree(ctx, flag)
	if err != nil {
		return 0, nil, &OpError{Op: "Agree", Backend: c.backend, Rank: c.me, Peer: driver.Culprit(err), Err: err}
	}
	return and, failed, nil
}

// Shrink makes the communicator of the ranks of c that have not failed,
// as ULFM's MPI_Comm_shrink and NCCL's ncclCommShrink: the survivors
// agree on who failed (as Agree does) and the new communicator holds the
// others, ranked in c's order. It is a world of its own, with a fresh
// failure state: every call of a Comm works on it (Split included), its
// errors name its own ranks, and it can be shrunk again. It runs over c's
// connections: closing c leaves them open until the communicator shrunk
// from it is closed too.
func (c *Comm) Shrink(ctx context.Context) (*Comm, error) {
	s, err := c.shrinker("Shrink")
	if err != nil {
		return nil, err
	}
	sub, _, err := s.Shrink(ctx)
	if err != nil {
		return nil, &OpError{Op: "Shrink", Backend: c.backend, Rank: c.me, Peer: driver.Culprit(err), Err: err}
	}
	return newComm(sub, newDomain(sub, c.timeout, c.dom.logger), nil, c.launch, c.nic), nil
}

// FailedRanks is the ranks of c this rank knows have failed, in
// increasing order (ULFM's MPIX_Comm_failure_get_acked, without the
// acknowledgement): those whose connection broke, closed or fell silent,
// those an Agree or Shrink on c decided failed, and the rank the
// communicator's failure blames for dying or falling silent. It is local
// and may differ between ranks until they agree: Agree and Shrink give
// the set they agree on, and from then on it holds that set. The mpi
// backend knows of none.
func (c *Comm) FailedRanks() []int {
	if s, ok := c.conn.(driver.Shrinker); ok {
		return s.Failed()
	}
	return []int{}
}
