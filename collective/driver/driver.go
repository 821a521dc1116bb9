// Package driver is the interface between Weft's communication front end
// (package collective) and the backends that move the bytes, in the way
// database/sql/driver sits under database/sql. Programs use package
// collective; this package is for backends.
//
// The front end checks every argument, orders operations, owns requests,
// contexts, failure and errors; a backend (a Conn) only runs operations
// that arrive described once, already checked (a Call), and reports how
// they ended. Backends in this module: collective/engine (Weft's own
// transports: in-process, shared memory, TCP; backends "tcp" and "local")
// and collective/mpi (the system MPI; backend "mpi", build tag mpi).
//
// # What a backend must do
//
// A Conn is one rank's part of one communicator. The front end calls Run
// for collectives one at a time per Conn, in the order the program issued
// them (the same order on every rank), and for point-to-point calls at any
// time, concurrently with each other and with collectives. Start posts a
// point-to-point call without waiting for it; calls on one (peer, tag)
// match in the order they were started or run. Split makes the Conn of a
// sub-communicator whose members the front end has already agreed on (by
// running a Call of kind Split).
//
// Run must not return while the backend may still read or write the
// call's buffers, unless it returns an error and the communicator is then
// failed for good (the buffers are the caller's again only in the sense
// that the backend will never deliver into them a result the caller can
// trust). A backend that cannot interrupt a call in progress (MPI) says so
// in its documentation: ctx is then checked before the call only.
//
// Optional abilities are found by type assertion, as database/sql finds
// them: of a Conn, DeviceConn (collectives on device memory, NCCL),
// Limiter (limits on tags and counts tighter than the front end's),
// JobAborter (ending the whole job, MPI_Abort), Uninterruptible (calls that
// Abort cannot stop), HostMap or SharedSplitter (which ranks share a host),
// GroupCreator (a communicator made by its members only); of a Driver,
// Checker (can it start in this launch?).
// Each backend reads and checks its own settings (Config).
package driver

import (
	"context"
	"log/slog"
	"strconv"
	"time"
)

// Kind is the operation a Call describes. The numbering is part of Weft's
// wire format: do not reorder.
type Kind uint8

const (
	AllReduce Kind = iota + 1
	Broadcast
	Reduce
	AllGather
	AllGatherV
	ReduceScatter
	AllToAll
	AllToAllV
	Barrier
	// Split is the exchange that precedes a Split: an AllGather of each
	// rank's (color, key) as two int64 (Send, Count 2) into Recv. It is a
	// kind of its own so that a Split on one rank and an AllGather on
	// another are told apart.
	Split
	Send
	Recv
	Gather
	GatherV
	Scatter
	ScatterV
	// Scan leaves in Recv of rank r the reduction of Send over ranks 0..r,
	// in rank order; Exscan over ranks 0..r-1 (Recv of rank 0 is left as
	// it is).
	Scan
	Exscan
	// Probe names errors of Probe; no Call has it.
	Probe
	// ReduceScatterV is ReduceScatter with blocks of Counts[i] elements
	// (MPI_Reduce_scatter): Send holds their total, Recv block Rank().
	ReduceScatterV
)

var kindNames = [...]string{"", "allreduce", "broadcast", "reduce", "allgather", "allgatherv",
	"reducescatter", "alltoall", "alltoallv", "barrier", "split", "send", "recv",
	"gather", "gatherv", "scatter", "scatterv", "scan", "exscan", "probe", "reducescatterv"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && k > 0 {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Collective reports whether k is a collective (ordered by the front end),
// as opposed to Send and Recv.
func (k Kind) Collective() bool { return k != 0 && k != Send && k != Recv && k != Probe }

// Wildcards and the null peer of point-to-point calls, as in MPI.
const (
	// AnySource as a Recv's peer matches a message from any rank.
	AnySource = -1
	// AnyTag as a Recv's tag matches a message with any tag.
	AnyTag = -1
	// ProcNull as a peer makes a Send or Recv that does nothing and
	// completes at once (the front end handles it; backends never see it).
	ProcNull = -2
)

// Status describes a message a Recv received or a Probe found.
type Status struct {
	Source int // the sender's rank in the communicator (ProcNull for a receive from ProcNull)
	Tag    int
	Bytes  int // the message's size
}

// Count is the number of elements of type dt the message holds, as
// MPI_Get_count gives it: -1 when Bytes is not a whole number of them.
func (s Status) Count(dt DType) int {
	if n := dt.Size(); n > 0 && s.Bytes%n == 0 {
		return s.Bytes / n
	}
	return -1
}

// Call is one operation, described once and checked by the front end.
//
// Counts are in elements. Count is the whole buffer for AllReduce, Reduce,
// Broadcast, Scan and Exscan; one rank's block for AllGather,
// ReduceScatter, Split, Gather and Scatter; one peer's block for AllToAll;
// the total of Counts for AllGatherV and ReduceScatterV; 0 for GatherV and ScatterV, whose
// Counts only the root has (elsewhere nil: a rank's block is its buffer);
// the message for Send, and the receive buffer's capacity for Recv. Send and Recv hold
// exactly the bytes the operation reads and writes (Recv is empty on the
// ranks of a Reduce or Gather other than the root, Send on the ranks of a
// Scatter other than the root); for Broadcast both are the one buffer.
// They may be the same memory, or overlap, where the front end's
// documentation allows it (in place). Fields that do not apply to the
// kind are zero.
type Call struct {
	Kind  Kind
	DType DType
	Op    Op // AllReduce, Reduce, ReduceScatter(V), Scan, Exscan
	Send  []byte
	Recv  []byte
	Count int
	// Counts is the block of each rank of AllGatherV, ReduceScatterV,
	// GatherV and ScatterV (the latter two at the root only), and AllToAllV's count
	// sent to each rank; RecvCounts is AllToAllV's count received from
	// each.
	Counts, RecvCounts []int
	Root               int // Broadcast, Reduce, Gather(V), Scatter(V)
	// Send, Recv: the other rank of this communicator (a Recv's may be
	// AnySource; a Send to this rank is a message to itself), and the tag
	// (a Recv's may be AnyTag).
	Peer, Tag int
	// Vector, when not nil, lays a Send's or Recv's message over its
	// buffer in strided blocks (p2p.go); Count is then the message's
	// elements.
	Vector *Vector
	// Status is where a Recv reports the message it received; a message
	// longer than the receive buffer fails it with ErrMismatch.
	Status Status

	// OnDevice says that the buffers are device memory of the CUDA device
	// Device, described by SendDev and RecvDev instead of Send and Recv
	// (which are then nil). Only a DeviceConn gets such calls; the front
	// end stages them through host memory for every other Conn.
	OnDevice         bool
	Device           int
	SendDev, RecvDev DeviceMem
}

// DeviceMem is a range of device memory: a device address and its length
// in bytes.
type DeviceMem struct {
	Ptr   uintptr
	Bytes int
}

// Pending is a point-to-point call posted by Start.
type Pending interface {
	// Wait blocks until the call completes, or ctx ends, and returns its
	// error. When ctx ends first it returns an error wrapping ErrAborted
	// and the context's error, and the communicator is failed.
	Wait(ctx context.Context) error
	// Test reports whether the call has completed, and its error if so.
	// It never blocks.
	Test() (done bool, err error)
}

// Conn is one rank's part of a communicator of a backend.
type Conn interface {
	// Rank and Size place this rank in the communicator.
	Rank() int
	Size() int
	// Name is the backend as errors and tools show it ("tcp+shm",
	// "inproc", "mpi").
	Name() string
	// Run runs c on the caller's goroutine and returns when it is
	// complete or failed.
	Run(ctx context.Context, c *Call) error
	// Start posts a Send or Recv and returns at once. A Recv's Status is
	// filled when the Pending completes.
	Start(c *Call) (Pending, error)
	// Probe looks for a message that a Recv with peer and tag (wildcards
	// allowed) would receive, without receiving it. With wait it blocks
	// until there is one or ctx ends; without, it reports whether there
	// is.
	Probe(ctx context.Context, peer, tag int, wait bool) (Status, bool, error)
	// Split returns the Conn of the sub-communicator made of members (ranks
	// of this Conn, in the new communicator's rank order; they include this
	// rank), or nil when members is nil: this rank called Split with
	// Undefined. color is the color every member passed. Split is
	// collective over this Conn (every rank calls it, members or not),
	// right after the front end ran the Split exchange on it.
	Split(ctx context.Context, color int, members []int) (Conn, error)
	// Abort fails every pending and later operation of this communicator
	// and of every communicator of its world with f, here and, where the
	// backend can tell them, on the peers. It may be called at any time
	// from any goroutine, more than once.
	Abort(f *Failure)
	// Close releases the communicator. Closing a world's Conn releases the
	// world; closing a sub-communicator's releases only it.
	Close() error
}

// DeviceConn is implemented by a Conn that runs collectives on device
// memory itself, as NCCL does: Run takes Calls with OnDevice set whose
// Device is the Conn's and that DeviceCall accepts. The front end
// stages every other call on device memory (point-to-point calls
// included) through pinned host memory and the world's host backend.
type DeviceConn interface {
	Conn
	// Device is the CUDA device the Conn's calls run on.
	Device() int
	// DeviceCall reports whether Run takes call a (its kind, type and
	// reduction) on device memory.
	DeviceCall(a *Call) bool
}

// Limiter is implemented by backends whose tags or counts stop below the
// front end's limits (tags in [0, 2^31), counts that fit an int).
type Limiter interface {
	// MaxTag is the largest tag Send and Recv accept.
	MaxTag() int
	// MaxCount is the largest element count (and displacement) of one
	// call.
	MaxCount() int
}

// JobAborter is implemented by backends that can end the whole job at
// once (MPI_Abort); the front end's AbortJob uses it when present.
type JobAborter interface {
	AbortJob(code int)
}

// Uninterruptible is implemented by backends that cannot stop a call in
// progress, not even by Abort (MPI: a call inside the library runs until
// the library returns it). When a context ends during a Wait, or Close
// gives up waiting, the front end fails the communicator and returns at
// once, leaving the call to finish in the background with the caller's
// buffers.
type Uninterruptible interface {
	Uninterruptible()
}

// HostMap is implemented by a Conn that knows which of its ranks share a
// host (the same host name and boot id: ranks that can share memory), as
// Weft's engine learns at its bootstrap. Host(r) is a number >= 0 that
// the ranks on rank r's host share and no other rank has. It is local: no
// rank is asked.
type HostMap interface {
	Host(r int) int
}

// SharedSplitter is implemented by a Conn that splits by host itself
// (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED). SplitShared returns the
// Conn of the ranks that share this rank's host, ordered by key (ties by
// rank), and their ranks in this Conn in that order. It is collective
// over this Conn, right after the front end ran a Split exchange on it.
type SharedSplitter interface {
	SplitShared(ctx context.Context, key int) (Conn, []int, error)
}

// GroupCreator is implemented by a Conn that makes the Conn of some of its
// ranks with only those ranks taking part (MPI_Comm_create_group).
// members are ranks of this Conn, in the new Conn's rank order, and
// include this rank; tag tells apart creations over the same members that
// run at the same time. Only the members call it, and they call it in the
// same order for the same members; it is not ordered with the collectives
// of this Conn.
type GroupCreator interface {
	CreateGroup(ctx context.Context, members []int, tag int) (Conn, error)
}

// Shrinker is implemented by a Conn whose surviving ranks can agree,
// after ranks failed, on who failed and go on without them (ULFM's
// MPI_Comm_agree and MPI_Comm_shrink). Ranks are this Conn's. Agree and
// Shrink are collective over the survivors and count as one sequence:
// every survivor makes the same calls in the same order.
type Shrinker interface {
	// Agree returns the bitwise AND of flag over the survivors and the
	// ranks they agree have failed, in increasing order.
	Agree(ctx context.Context, flag uint64) (uint64, []int, error)
	// Shrink is Agree followed by the Conn of the survivors, ranked in
	// this Conn's order; failed is the agreed set.
	Shrink(ctx context.Context) (c Conn, failed []int, err error)
	// Failed is the ranks this rank knows to have failed, in order.
	Failed() []int
}

// Launch describes how a world was started. The front end fills what the
// launcher's variables say; the backend adds what it learns while it
// connects (the fields marked so).
type Launch struct {
	Launcher   string // "openmpi", "mpich", "slurm", "torchrun", "weft", "single"
	Rank, Size int
	LocalRank  int    // -1 if unknown
	LocalSize  int    // -1 if unknown
	NumNodes   int    // -1 if unknown
	JobID      string // the launcher's identity for the job; "" if none
	Host       string // this host's name
	MasterAddr string // host of the rendezvous store, when the launcher names one
	MasterPort int    // its port, 0 when not given
	PMI        string // what the launcher serves an MPI library: "pmix", "pmi" (PMI-1/PMI-2) or "" (package internal/launch)

	// Filled by the backend.
	Backend        string   // the Conn's Name
	Rendezvous     string   // how ranks met: "tcp://host:port", "file:///path", "mpi", "none"
	AdvertisedAddr string   // the address other ranks reach this one at ("" where the backend does not say)
	LocalRanks     int      // ranks found on this host (same host name and boot id); 0 if unknown
	PeerTransports []string // how this rank reaches each rank: "self", "shm", "tcp"; nil if unknown
	HostCPUs       int      // CPUs online on this host
}

// Config is what a backend opens a world with: what the front end
// resolved (the launch, the timeout, the logger), and the values the
// program set through options for the backend's own settings. A backend
// reads, checks and documents its settings itself: Settings[name], when
// present, takes the place of the environment variable name for this
// world (collective.WithChunkBytes puts "WEFT_CHUNK_BYTES" there, for
// instance); a backend ignores names it does not know.
type Config struct {
	Launch   *Launch       // how the world was started; the backend fills its part
	Timeout  time.Duration // silence from a peer that fails an operation; 0: none
	Logger   *slog.Logger
	Settings map[string]string
	Hosts    []int // local worlds: pretend ranks sit on these hosts
}

// Driver opens the world communicator of a backend for this process.
type Driver interface {
	Open(ctx context.Context, cfg *Config) (Conn, error)
}

// OpenFunc is a Driver made of its Open function.
type OpenFunc func(ctx context.Context, cfg *Config) (Conn, error)

// Open calls f.
func (f OpenFunc) Open(ctx context.Context, cfg *Config) (Conn, error) { return f(ctx, cfg) }

// Checker is implemented by a Driver that can tell, before Open, whether
// it can start in a launch (the mpi backend: can the linked MPI library
// start under this launcher?); backend "auto" asks it before choosing the
// driver.
type Checker interface {
	Check(l *Launch) error
}
