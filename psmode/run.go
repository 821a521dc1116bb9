package psmode

import (
	"context"
	"fmt"

	"github.com/weft-hpc/weft/collective"
)

// Config describes a parameter-server job. Every rank passes the same
// Config. The zero values of the optional fields mean the defaults and the
// environment (params.go).
type Config struct {
	// Workers are world ranks [0, Workers); worker 0 also runs the
	// scheduler (ps-lite's scheduler inside rank 0).
	Workers int
	// Servers are the active server ranks at the start, [Workers,
	// Workers+Servers); Standby more server ranks follow, idle until
	// scale-out gives them keys.
	Servers, Standby int
	// Sizes are the tensors' element counts (float32), cut into keys of
	// PartitionBytes (WEFT_PS_PARTITION_BYTES, default 4096000).
	Sizes          []int
	PartitionBytes int
	// Optimizer runs on the servers.
	Optimizer Optimizer
	// Async applies each push at once (no aggregation over workers), and
	// pulls return the current value (WEFT_PS_ASYNC=1).
	Async bool
	// Balance is "static" (the uniform table for the whole run) or "psld"
	// (WEFT_PS_BALANCE); PSLD tunes the balancer.
	Balance string
	PSLD    PSLDConfig
	// Slowdown injects stragglers; nil reads WEFT_PS_SLOWDOWN and
	// WEFT_PS_SLOWDOWN_MODE, an empty non-nil slice injects none.
	Slowdown []Slowdown
	// LinkRate, in bytes per second, emulates each server's network link
	// (WEFT_PS_LINK_RATE; 0: none): a server spends bytes/LinkRate on every
	// push it receives and every value it sends, one at a time. In-process
	// ranks move bytes with memcpy on shared cores, which no server owns;
	// the emulated link gives each server the bandwidth bottleneck a real
	// one has.
	LinkRate float64

	// plan, in tests, replaces the balancer's decision at each boundary.
	plan func(step int64, t Table) (Table, bool)
}

// MaxKeys bounds the keys of a job: every rank keeps a few words per key
// (the shard table, the balancer's statistics), and a million keys is
// already a 4-byte partition of a 4-million-parameter model.
const MaxKeys = 1 << 20

func (cfg *Config) check(size int) error {
	if err := envDefaults(cfg); err != nil {
		return err
	}
	if cfg.Workers < 1 || cfg.Servers < 1 || cfg.Standby < 0 {
		return fmt.Errorf("psmode: %d workers, %d servers, %d standby: want at least one worker and one server", cfg.Workers, cfg.Servers, cfg.Standby)
	}
	if n := cfg.Workers + cfg.Servers + cfg.Standby; n != size {
		return fmt.Errorf("psmode: %d workers + %d servers + %d standby = %d ranks, the communicator has %d", cfg.Workers, cfg.Servers, cfg.Standby, n, size)
	}
	if cfg.PartitionBytes < 4 {
		return fmt.Errorf("psmode: partition of %d bytes: want at least 4 (one float32)", cfg.PartitionBytes)
	}
	keys := 0
	for t, n := range cfg.Sizes {
		if n < 0 {
			return fmt.Errorf("psmode: tensor %d has %d elements", t, n)
		}
		keys += (n + cfg.PartitionBytes/4 - 1) / (cfg.PartitionBytes / 4)
	}
	if keys > MaxKeys {
		return fmt.Errorf("psmode: partitions of %d bytes cut the %d tensors into %d keys, more than %d: use larger partitions", cfg.PartitionBytes, len(cfg.Sizes), keys, MaxKeys)
	}
	var err error
	cfg.Optimizer, err = cfg.Optimizer.withDefaults()
	if err != nil {
		return err
	}
	cfg.PSLD = cfg.PSLD.withDefaults()
	return nil
}

// ServerRanks is the number of server ranks, active and standby.
func (cfg *Config) serverRanks() int { return cfg.Servers + cfg.Standby }

// IsWorker reports whether world rank r is a worker under cfg.
func (cfg *Config) IsWorker(r int) bool { return r < cfg.Workers }

// Run plays this rank's part in a parameter-server job on c, as BytePS and
// ps-lite start every role from one launch: a server rank serves until the
// workers are done; a worker rank calls train with its Worker and closes
// it afterwards. Run is collective over c (it splits the workers off).
// It returns the first error of the rank: a failed peer is named in it.
func Run(ctx context.Context, c *collective.Comm, cfg Config, train func(context.Context, *Worker) error) error {
	if err := cfg.check(c.Size()); err != nil {
		return err
	}
	color := collective.Undefined
	if cfg.IsWorker(c.Rank()) {
		color = 0
	}
	wc, err := c.Split(ctx, color, c.Rank())
	if err != nil {
		return fmt.Errorf("psmode: split: %w", err)
	}
	layout := NewLayout(cfg.Sizes, cfg.PartitionBytes)
	if !cfg.IsWorker(c.Rank()) {
		return newServer(c, &cfg, layout, c.Rank()-cfg.Workers).serve(ctx)
	}
	w := newWorker(c, wc, &cfg, layout)
	terr := train(ctx, w)
	cerr := w.Close(ctx)
	if terr != nil {
		return terr
	}
	return cerr
}
