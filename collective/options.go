package collective

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
)

// Option configures Open and NewLocal. Options override the environment.
type Option func(*options)

type options struct {
	rank, size int // -1: from the launcher
	localRank  int
	backend    string
	nic        float64 // emulated network card, Gbit/s; 0: none
	timeout    *time.Duration
	settings   map[string]string // the backends' settings the options set (driver.Config.Settings)
	hosts      []int             // NewLocal: pretend ranks sit on these hosts (tests of the hierarchical algorithms)
	logger     *slog.Logger
}

// set records a backend setting for driver.Config.Settings.
func (o *options) set(name, v string) {
	if o.settings == nil {
		o.settings = map[string]string{}
	}
	o.settings[name] = v
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
func WithEmulatedLink(gbps float64) Option { return func(o *options) { o.nic = gbps } }

// The options of Weft's own transports (backends "tcp" and "local").

// WithMaster sets the host:port where rank 0 serves the rendezvous store
// (WEFT_MASTER_ADDR and WEFT_MASTER_PORT).
func WithMaster(hostport string) Option { return func(o *options) { o.set("master", hostport) } }

// WithRendezvous sets a shared-file rendezvous, "file:///path" (WEFT_RENDEZVOUS).
func WithRendezvous(uri string) Option { return func(o *options) { o.set("WEFT_RENDEZVOUS", uri) } }

// WithJobToken sets the job identity every connection must present
// (WEFT_JOB_TOKEN).
func WithJobToken(t string) Option { return func(o *options) { o.set("WEFT_JOB_TOKEN", t) } }

// WithListenAddr sets the local IP address to listen on and advertise
// (WEFT_IFADDR).
func WithListenAddr(ip string) Option { return func(o *options) { o.set("WEFT_IFADDR", ip) } }

// WithAlgorithm forces algorithms, as WEFT_ALGO does: "ring", or
// "allreduce=rd,broadcast=chain".
func WithAlgorithm(s string) Option { return func(o *options) { o.set("WEFT_ALGO", s) } }

// WithChunkBytes sets the pipeline chunk, which is also the largest frame
// (WEFT_CHUNK_BYTES).
func WithChunkBytes(n int) Option {
	return func(o *options) { o.set("WEFT_CHUNK_BYTES", strconv.Itoa(n)) }
}

// WithSocketBuffer sets the TCP send and receive buffer sizes (default
// 4M); 0 keeps the kernel's autotuning (WEFT_SOCKET_BUFFER).
func WithSocketBuffer(n int) Option {
	return func(o *options) { o.set("WEFT_SOCKET_BUFFER", strconv.Itoa(n)) }
}

// WithSpin sets how long an operation waiting for a message polls its
// link before it sleeps (WEFT_SPIN): "auto" (the default: 50us when this
// host runs no more ranks than it has CPUs; else 200us, giving the CPU
// away between polls), or a duration ("0" to never poll, "1ms").
func WithSpin(s string) Option { return func(o *options) { o.set("WEFT_SPIN", s) } }

// WithTCPCongestion names the congestion control of Weft's TCP
// connections (WEFT_TCP_CONGESTION): "reno" by default, "cubic", or
// "system" to keep the system's. Pacing congestion controls such as BBR
// cost throughput on the short, fast links collectives run over.
func WithTCPCongestion(cc string) Option {
	return func(o *options) { o.set("WEFT_TCP_CONGESTION", cc) }
}

// resolve applies opts over the environment's knobs of the front end; the
// backends read theirs (driver.Config.Settings).
func resolve(opts []Option) (*options, error) {
	o := &options{rank: -1, size: -1, localRank: -1}
	for _, f := range opts {
		f(o)
	}
	if o.backend == "" {
		b, err := paramBackend.get()
		if err != nil {
			return nil, err
		}
		o.backend = b
	}
	if o.timeout == nil {
		t, err := paramTimeout.get()
		if err != nil {
			return nil, err
		}
		o.timeout = &t
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
func (o *options) config(l *driver.Launch) *driver.Config {
	return &driver.Config{Launch: l, Timeout: *o.timeout, Logger: o.logger, Settings: o.settings, Hosts: o.hosts}
}
