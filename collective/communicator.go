package collective

import "context"

// Communicator is a group of ranks that run collectives together.
//
// Collective calls must be made in the same order on every rank of the
// communicator, with matching arguments (as in MPI and NCCL); a rank that
// calls something else gets an error wrapping ErrMismatch, and so do its
// peers. Results are identical on every rank, bit for bit.
//
// Blocking calls take a context. When it ends before the operation
// completes the communicator is aborted (the operation cannot be withdrawn
// from peers that wait for it) and the call returns an error wrapping both
// ErrAborted and the context's error. Non-blocking calls (the I-forms)
// return at once with a Request; the caller must not touch the buffers
// until the request completes. Buffers passed to blocking calls may be
// reused when the call returns.
//
// Methods may be called from several goroutines. Collectives issued
// concurrently are ordered by the moment they are issued, and every rank
// must issue them in the same order, so concurrent issue is only safe when
// the program orders it the same way everywhere. Send and Recv are not
// ordered with collectives; messages between a pair with the same tag
// arrive in the order they were sent.
//
// When anything fails (a peer dies, stops answering, mismatches, or a
// context ends) every pending and later operation on the communicator, and
// on every communicator split from the same world, returns an error that
// names the rank to blame (see OpError and PeerOf). Such a communicator
// cannot be repaired: Close it and create a new one.
type Communicator interface {
	// Rank is this process's rank in the communicator, in [0, Size()).
	Rank() int
	// Size is the number of ranks.
	Size() int

	// AllReduce combines send from every rank with op and leaves the
	// result in recv on every rank. send and recv have the same length
	// and type; they may be the same Buffer (in place).
	AllReduce(ctx context.Context, send, recv Buffer, op Op) error
	// Broadcast copies buf of rank root into buf of every rank.
	Broadcast(ctx context.Context, buf Buffer, root int) error
	// Reduce combines send from every rank with op into recv of rank root.
	// recv is ignored on the other ranks (pass the zero Buffer).
	Reduce(ctx context.Context, send, recv Buffer, op Op, root int) error
	// AllGather concatenates send of every rank, in rank order, into recv:
	// recv.Len() == Size() * send.Len().
	AllGather(ctx context.Context, send, recv Buffer) error
	// AllGatherV is AllGather with counts[i] elements from rank i, packed
	// in rank order in recv. send.Len() == counts[Rank()].
	AllGatherV(ctx context.Context, send, recv Buffer, counts []int) error
	// ReduceScatter combines send from every rank with op and leaves block
	// Rank() of the result in recv: send.Len() == Size() * recv.Len().
	ReduceScatter(ctx context.Context, send, recv Buffer, op Op) error
	// AllToAll sends block j of send to rank j, and receives rank j's
	// block into block j of recv; blocks are send.Len()/Size() elements.
	AllToAll(ctx context.Context, send, recv Buffer) error
	// AllToAllV is AllToAll with sendCounts[j] elements to rank j and
	// recvCounts[j] from rank j, blocks packed in rank order.
	AllToAllV(ctx context.Context, send Buffer, sendCounts []int, recv Buffer, recvCounts []int) error
	// Barrier returns when every rank has entered it.
	Barrier(ctx context.Context) error
	// Send sends buf to rank peer with a tag (>= 0). It returns when buf
	// may be reused; it does not wait for the matching Recv.
	Send(ctx context.Context, buf Buffer, peer, tag int) error
	// Recv receives the next message from peer with tag into buf; the
	// message must have buf's type and length. It waits as long as ctx
	// allows while the peer is alive.
	Recv(ctx context.Context, buf Buffer, peer, tag int) error

	IAllReduce(send, recv Buffer, op Op) Request
	IBroadcast(buf Buffer, root int) Request
	IReduce(send, recv Buffer, op Op, root int) Request
	IAllGather(send, recv Buffer) Request
	IAllGatherV(send, recv Buffer, counts []int) Request
	IReduceScatter(send, recv Buffer, op Op) Request
	IAllToAll(send, recv Buffer) Request
	IAllToAllV(send Buffer, sendCounts []int, recv Buffer, recvCounts []int) Request
	IBarrier() Request
	ISend(buf Buffer, peer, tag int) Request
	IRecv(buf Buffer, peer, tag int) Request

	// Split partitions the communicator: ranks that pass the same color
	// form a new communicator, ordered by key (ties by rank). A rank that
	// passes Undefined takes part but gets nil. Split is collective.
	Split(ctx context.Context, color, key int) (Communicator, error)
	// Abort fails every pending and later operation, here and on every
	// peer, and closes the communicator. It may be called from any
	// goroutine at any time.
	Abort()
	// Close waits for issued operations to finish, tells the peers, and
	// releases the connections. It is not collective.
	Close() error
}

// Undefined is the color that leaves a rank out of Split's result.
const Undefined = -1

// Request is a non-blocking operation in flight.
type Request interface {
	// Wait blocks until the operation completes and returns its error.
	// If ctx ends first, the communicator is aborted (see Communicator).
	Wait(ctx context.Context) error
	// Test reports whether the operation has completed, and its error if
	// it has. It never blocks.
	Test() (done bool, err error)
}
