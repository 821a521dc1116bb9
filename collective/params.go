package collective

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/weft-hpc/weft/internal/units"
)

// Every WEFT_* knob the front end reads, one line each, cached on first
// read. The backends read their own (collective/engine's params.go,
// collective/mpi's), and launch detection the launcher variables such as
// WEFT_RANK (internal/launch). docs/LAUNCH.md lists them all.
var (
	paramTimeout = newParam("WEFT_TIMEOUT", 60*time.Second, units.ParseDuration) // silence from a peer that fails an operation; 0 disables
	paramLog     = newParam("WEFT_LOG", "warn", parseString)                     // log level: error, warn, info, debug
	paramBackend = newParam("WEFT_BACKEND", "auto", parseString)                 // which backend Open uses: auto, tcp, mpi, local
	paramNCCL    = newParam("WEFT_NCCL", "auto", parseAutoOff)                   // collectives on device memory through NCCL when every rank has a GPU: auto or off (staged)
)

type param[T any] struct {
	name  string
	def   T
	parse func(string) (T, error)
	once  sync.Once
	v     T
	err   error
}

func newParam[T any](name string, def T, parse func(string) (T, error)) *param[T] {
	return &param[T]{name: name, def: def, parse: parse}
}

// get returns the value, the default when unset, or an error naming the
// variable when it does not parse.
func (p *param[T]) get() (T, error) {
	p.once.Do(func() {
		p.v = p.def
		if s, ok := os.LookupEnv(p.name); ok && s != "" {
			v, err := p.parse(s)
			if err != nil {
				p.err = fmt.Errorf("collective: %s=%q: %w", p.name, s, err)
				return
			}
			p.v = v
		}
	})
	return p.v, p.err
}

func parseString(s string) (string, error) { return s, nil }

func parseAutoOff(s string) (string, error) {
	if s != "auto" && s != "off" {
		return "", fmt.Errorf("want auto or off")
	}
	return s, nil
}

func parseChunk(s string) (int64, error) {
	n, err := units.ParseSize(s)
	if err != nil {
		return 0, err
	}
	if n < 4<<10 || n > 64<<20 {
		return 0, fmt.Errorf("chunk of %d bytes is outside [4K, 64M]", n)
	}
	return n, nil
}
