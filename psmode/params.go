package psmode

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Every environment knob of psmode, read once, here: one line each, cached
// on first read as NCCL's NCCL_PARAM does (src/include/param.h), and listed
// in the package doc and docs/LAUNCH.md. Config fields override them.
var (
	envPartitionBytes = sync.OnceValue(func() string { return os.Getenv("WEFT_PS_PARTITION_BYTES") })
	envSlowdown       = sync.OnceValue(func() string { return os.Getenv("WEFT_PS_SLOWDOWN") })
	envSlowdownMode   = sync.OnceValue(func() string { return os.Getenv("WEFT_PS_SLOWDOWN_MODE") })
	envAsync          = sync.OnceValue(func() string { return os.Getenv("WEFT_PS_ASYNC") })
	envBalance        = sync.OnceValue(func() string { return os.Getenv("WEFT_PS_BALANCE") })
	envLinkRate       = sync.OnceValue(func() string { return os.Getenv("WEFT_PS_LINK_RATE") })
)

// DefaultPartitionBytes is the size of a key's partition, BytePS's default
// (BYTEPS_PARTITION_BYTES).
const DefaultPartitionBytes = 4096000

// Slowdown makes one server a straggler: after each piece of work it waits
// (Factor-1) times the time the work took, so it serves Factor times slower.
type Slowdown struct {
	Server int     // server index (0 is the first server rank)
	Factor float64 // > 1
	// CPU burns the extra time in a busy loop on the server's goroutine
	// (computation interference) instead of sleeping.
	CPU bool
	// FromStep delays the onset to the first push of this step.
	FromStep int64
}

// ParseSlowdown parses WEFT_PS_SLOWDOWN's syntax: "server:factor[@step]" items
// separated by commas, e.g. "1:3" or "0:2,2:3@20". mode is "sleep" (default)
// or "cpu".
func ParseSlowdown(s, mode string) ([]Slowdown, error) {
	var out []Slowdown
	cpu := false
	switch mode {
	case "", "sleep":
	case "cpu":
		cpu = true
	default:
		return nil, fmt.Errorf("psmode: slowdown mode %q: want sleep or cpu", mode)
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		var from int64
		if i := strings.IndexByte(item, '@'); i >= 0 {
			v, err := strconv.ParseInt(item[i+1:], 10, 64)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("psmode: slowdown %q: bad step", item)
			}
			from, item = v, item[:i]
		}
		srv, fac, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("psmode: slowdown %q: want server:factor", item)
		}
		i, err := strconv.Atoi(srv)
		if err != nil || i < 0 {
			return nil, fmt.Errorf("psmode: slowdown %q: bad server index", item)
		}
		f, err := strconv.ParseFloat(fac, 64)
		if err != nil || f < 1 {
			return nil, fmt.Errorf("psmode: slowdown %q: factor must be >= 1", item)
		}
		out = append(out, Slowdown{Server: i, Factor: f, CPU: cpu, FromStep: from})
	}
	return out, nil
}

// envDefaults fills the zero fields of cfg from the environment.
func envDefaults(cfg *Config) error {
	if cfg.PartitionBytes == 0 {
		if s := envPartitionBytes(); s != "" {
			v, err := strconv.Atoi(s)
			if err != nil || v < 4 {
				return fmt.Errorf("psmode: WEFT_PS_PARTITION_BYTES=%q: want a byte count >= 4", s)
			}
			cfg.PartitionBytes = v
		} else {
			cfg.PartitionBytes = DefaultPartitionBytes
		}
	}
	if cfg.Slowdown == nil {
		sd, err := ParseSlowdown(envSlowdown(), envSlowdownMode())
		if err != nil {
			return fmt.Errorf("WEFT_PS_SLOWDOWN: %w", err)
		}
		cfg.Slowdown = sd
	}
	if !cfg.Async {
		switch envAsync() {
		case "", "0", "false":
		case "1", "true":
			cfg.Async = true
		default:
			return fmt.Errorf("psmode: WEFT_PS_ASYNC=%q: want 0 or 1", envAsync())
		}
	}
	if cfg.LinkRate == 0 {
		if s := envLinkRate(); s != "" {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || v < 0 {
				return fmt.Errorf("psmode: WEFT_PS_LINK_RATE=%q: want bytes per second", s)
			}
			cfg.LinkRate = v
		}
	}
	if cfg.Balance == "" {
		cfg.Balance = envBalance()
		if cfg.Balance == "" {
			cfg.Balance = "static"
		}
	}
	if cfg.Balance != "static" && cfg.Balance != "psld" {
		return fmt.Errorf("psmode: balance %q: want static or psld", cfg.Balance)
	}
	return nil
}
