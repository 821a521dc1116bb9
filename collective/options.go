package collective

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/internal/units"
)

// Option configures Open and NewLocal. Options override the environment.
type Option func(*options)

type options struct {
	rank, size int // -1: from the launcher
	localRank  int
	backend    string
	link       float64 // emulated link, Gbit/s; 0: none
	timeout    *time.Duration
	token      *string
	algo       *string
	sockBuf    *int
	chunk      int
	master     string
	rendezvous string
	ifAddr     string
	spin       string
	congestion string
	hosts      []int // NewLocal: pretend ranks sit on these hosts (tests of the hierarchical algorithms)
	logger     *slog.Logger
}

// WithBackend chooses Open's backend, as WEFT_BACKEND does: "auto", "tcp",
// "mpi" or "local".
func WithBackend(name string) Option { return func(o *options) { o.backend = name } }

// WithRank sets this process's rank and the world size, overriding the
// launcher's variables.
func WithRank(rank, size int) Option { return func(o *options) { o.rank, o.size = rank, size } }

// WithLocalRank sets the rank among the processes on this host.
func WithLocalRank(r int) Option { return func(o *options) { o.localRank = r } }

// WithTimeout sets how long a silent peer may keep an operation waiting
// before every rank fails with an error naming it (WEFT_TIMEOUT). Zero
// disables the limit: a silent peer then blocks until a context ends.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = &d } }

// WithLogger sets where warnings go (refused connections, failures). The
// default writes to stderr at the level WEFT_LOG names.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithEmulatedLink makes AllReduce, Broadcast, AllToAll and AllToAllV (and
// their I-forms) take as long as they would over a network card of gbps
// gigabits per second, to make communication the bottleneck on one
// machine. The data still moves at the backend's speed; an operation
// completes no earlier than the emulated link would have carried the bytes
// this rank sends in the bandwidth-optimal algorithm: 2(n-1)/n of the
// buffer for an allreduce, the buffer for a broadcast, for an all-to-all
// the larger of what the rank sends to and receives from the others (a
// full-duplex card). The link is one FIFO resource per rank, shared by the
// communicators split from this one; an operation occupies it from when it
// is issued or the one before leaves it, whichever is later. The wait is a
// sleep, on the caller's goroutine, in the blocking call or in Wait: it
// costs no CPU. gbps <= 0 emulates nothing.
func WithEmulatedLink(gbps float64) Option { return func(o *options) { o.link = gbps } }

// The options of Weft's own transports (backends "tcp" and "local").

// WithMaster sets the host:port where rank 0 serves the rendezvous store
// (WEFT_MASTER_ADDR and WEFT_MASTER_PORT).
func WithMaster(hostport string) Option { return func(o *options) { o.master = hostport } }

// WithRendezvous sets a shared-file rendezvous, "file:///path" (WEFT_RENDEZVOUS).
func WithRendezvous(uri string) Option { return func(o *options) { o.rendezvous = uri } }

// WithJobToken sets the job identity every connection must present
// (WEFT_JOB_TOKEN).
func WithJobToken(t string) Option { return func(o *options) { o.token = &t } }

// WithListenAddr sets the local IP address to listen on and advertise
// (WEFT_IFADDR).
func WithListenAddr(ip string) Option { return func(o *options) { o.ifAddr = ip } }

// WithAlgorithm forces algorithms, as WEFT_ALGO does: "ring", or
// "allreduce=rd,broadcast=chain".
func WithAlgorithm(s string) Option { return func(o *options) { o.algo = &s } }

// WithChunkBytes sets the pipeline chunk, which is also the largest frame
// (WEFT_CHUNK_BYTES).
func WithChunkBytes(n int) Option { return func(o *options) { o.chunk = n } }

// WithSocketBuffer sets the TCP send and receive buffer sizes (default
// 4M); 0 keeps the kernel's autotuning (WEFT_SOCKET_BUFFER).
func WithSocketBuffer(n int) Option { return func(o *options) { o.sockBuf = &n } }

// WithSpin sets how long an operation waiting for a message polls its
// link before it sleeps (WEFT_SPIN): "auto" (the default: 50us when this
// host runs no more ranks than it has CPUs; else 200us, giving the CPU
// away between polls), or a duration ("0" to never poll, "1ms").
func WithSpin(s string) Option { return func(o *options) { o.spin = s } }

// WithTCPCongestion names the congestion control of Weft's TCP
// connections (WEFT_TCP_CONGESTION): "reno" by default, "cubic", or
// "system" to keep the system's. Pacing congestion controls such as BBR
// cost throughput on the short, fast links collectives run over.
func WithTCPCongestion(cc string) Option { return func(o *options) { o.congestion = cc } }

// resolve applies opts over the environment's knobs.
func resolve(opts []Option) (*options, error) {
	o := &options{rank: -1, size: -1, localRank: -1}
	for _, f := range opts {
		f(o)
	}
	var err error
	set := func(dst *string, p *param[string]) {
		if *dst == "" && err == nil {
			*dst, err = p.get()
		}
	}
	set(&o.backend, paramBackend)
	set(&o.rendezvous, paramRendezvous)
	set(&o.ifAddr, paramIfAddr)
	set(&o.congestion, paramCongestion)
	set(&o.spin, paramSpin)
	if err != nil {
		return nil, err
	}
	if o.timeout == nil {
		t, err := paramTimeout.get()
		if err != nil {
			return nil, err
		}
		o.timeout = &t
	}
	if o.token == nil {
		t, err := paramJobToken.get()
		if err != nil {
			return nil, err
		}
		o.token = &t
	}
	if o.algo == nil {
		a, err := paramAlgo.get()
		if err != nil {
			return nil, err
		}
		o.algo = &a
	}
	if o.chunk == 0 {
		c, err := paramChunk.get()
		if err != nil {
			return nil, err
		}
		o.chunk = int(c)
	}
	if o.chunk < 4<<10 || o.chunk > 64<<20 {
		return nil, fmt.Errorf("collective: chunk of %d bytes is outside [4K, 64M]", o.chunk)
	}
	if o.sockBuf == nil {
		b, err := paramSockBuf.get()
		if err != nil {
			return nil, err
		}
		n := int(b)
		o.sockBuf = &n
	}
	if o.spin != "auto" {
		if _, err := units.ParseDuration(o.spin); err != nil {
			return nil, fmt.Errorf("collective: WEFT_SPIN=%q: %w", o.spin, err)
		}
	}
	if o.logger == nil {
		lv, err := paramLog.get()
		if err != nil {
			return nil, err
		}
		var level slog.Level
		if err := level.UnmarshalText([]byte(strings.ToUpper(lv))); err != nil {
			return nil, fmt.Errorf("collective: WEFT_LOG=%q: want error, warn, info or debug", lv)
		}
		o.logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	}
	return o, nil
}

// config is what a backend opens with.
func (o *options) config(l *driver.Launch) (*driver.Config, error) {
	shmMode, err := paramShm.get()
	if err != nil {
		return nil, err
	}
	ring, err := paramShmRing.get()
	if err != nil {
		return nil, err
	}
	cc := o.congestion
	if cc == "system" {
		cc = ""
	}
	return &driver.Config{Launch: l, Timeout: *o.timeout, Logger: o.logger,
		Master: o.master, Rendezvous: o.rendezvous, Token: *o.token, ListenAddr: o.ifAddr,
		Algorithm: *o.algo, ChunkBytes: o.chunk, SocketBuffer: *o.sockBuf, Spin: o.spin, Congestion: cc,
		SharedMemory: shmMode != "off", SharedRing: int(ring), Hosts: o.hosts}, nil
}
