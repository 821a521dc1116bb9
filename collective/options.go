package collective

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/weft-hpc/weft/collective/transport/inproc"
	"github.com/weft-hpc/weft/internal/units"
)

// Option configures Init and NewLocal. Options override the environment.
type Option func(*options)

type options struct {
	rank, size int // -1: from the launcher
	localRank  int
	master     string // host:port of the rendezvous store
	rendezvous string
	timeout    *time.Duration
	token      *string
	ifAddr     string
	algo       *string
	chunk      int
	sockBuf    *int
	spin       string
	congestion string
	backend    string
	hosts      []int // NewLocal: pretend ranks sit on these hosts (tests of the hierarchical algorithms)
	logger     *slog.Logger
}

// WithRank sets this process's rank and the world size, overriding the
// launcher's variables.
func WithRank(rank, size int) Option { return func(o *options) { o.rank, o.size = rank, size } }

// WithLocalRank sets the rank among the processes on this host.
func WithLocalRank(r int) Option { return func(o *options) { o.localRank = r } }

// WithMaster sets the host:port where rank 0 serves the rendezvous store
// (WEFT_MASTER_ADDR and WEFT_MASTER_PORT).
func WithMaster(hostport string) Option { return func(o *options) { o.master = hostport } }

// WithRendezvous sets a shared-file rendezvous, "file:///path" (WEFT_RENDEZVOUS).
func WithRendezvous(uri string) Option { return func(o *options) { o.rendezvous = uri } }

// WithTimeout sets how long a silent peer may keep an operation waiting
// before every rank fails with an error naming it (WEFT_TIMEOUT). Zero
// disables the limit: a silent peer then blocks until a context ends.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = &d } }

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
// socket before it sleeps (WEFT_SPIN): "auto" (the default: 50us when this
// host runs no more ranks than it has CPUs; else 200us, giving the CPU
// away between polls), or a duration ("0" to never poll, "1ms").
func WithSpin(s string) Option { return func(o *options) { o.spin = s } }

// WithTCPCongestion names the congestion control of Weft's TCP
// connections (WEFT_TCP_CONGESTION): "reno" by default, "cubic", or
// "system" to keep the system's. Pacing congestion controls such as BBR
// cost throughput on the short, fast links collectives run over.
func WithTCPCongestion(cc string) Option { return func(o *options) { o.congestion = cc } }

// WithBackend chooses Open's backend, as WEFT_BACKEND does: "auto", "tcp",
// "mpi" or "local".
func WithBackend(name string) Option { return func(o *options) { o.backend = name } }

// WithLogger sets where warnings go (refused connections, failures). The
// default writes to stderr at the level WEFT_LOG names.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

func buildOptions(opts []Option) (*options, error) {
	o := &options{rank: -1, size: -1, localRank: -1}
	for _, f := range opts {
		f(o)
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
	if o.ifAddr == "" {
		a, err := paramIfAddr.get()
		if err != nil {
			return nil, err
		}
		o.ifAddr = a
	}
	if o.rendezvous == "" {
		r, err := paramRendezvous.get()
		if err != nil {
			return nil, err
		}
		o.rendezvous = r
	}
	if o.backend == "" {
		b, err := paramBackend.get()
		if err != nil {
			return nil, err
		}
		o.backend = b
	}
	if o.congestion == "" {
		cc, err := paramCongestion.get()
		if err != nil {
			return nil, err
		}
		o.congestion = cc
	}
	if o.spin == "" {
		sp, err := paramSpin.get()
		if err != nil {
			return nil, err
		}
		o.spin = sp
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

func (o *options) config() (config, error) {
	algo, err := parseAlgo(*o.algo)
	if err != nil {
		return config{}, fmt.Errorf("collective: WEFT_ALGO=%q: %w", *o.algo, err)
	}
	return config{timeout: *o.timeout, chunk: o.chunk, algo: algo, log: o.logger}, nil
}

// spinFor resolves the spin setting for a rank that shares its host with
// localRanks ranks (itself included): polling pays only when every rank has
// a CPU to poll on.
func (o *options) spinFor(localRanks int) (time.Duration, bool) {
	oversub := localRanks > hostCPUs()
	if o.spin == "auto" {
		if !oversub {
			return 50 * time.Microsecond, false
		}
		return 200 * time.Microsecond, true
	}
	d, _ := units.ParseDuration(o.spin)
	return d, oversub
}

// NewLocal returns n communicators over the in-process transport, one per
// rank, for goroutines of one process: the embedded default for tests and
// for single-process users. Each must be used from its own goroutine(s),
// as separate processes would use theirs.
func NewLocal(n int, opts ...Option) ([]*Comm, error) {
	if n < 1 {
		return nil, fmt.Errorf("collective: NewLocal(%d): need at least one rank", n)
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	cfg, err := o.config()
	if err != nil {
		return nil, err
	}
	if o.hosts != nil && len(o.hosts) != n {
		return nil, fmt.Errorf("collective: NewLocal(%d) with a host map of %d ranks", n, len(o.hosts))
	}
	out := make([]*Comm, n)
	for i, tr := range inproc.New(n) {
		ep := newEndpoint(tr, cfg)
		ep.hosts = o.hosts
		out[i] = newWorld(ep)
	}
	return out, nil
}
