package collective

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/weft-hpc/weft/collective/transport/shm"
	"github.com/weft-hpc/weft/internal/units"
)

// Every WEFT_* knob the collective package reads, one line each, cached on
// first read (launcher variables such as WEFT_RANK are read by launch
// detection, see Init). docs/LAUNCH.md lists them all.
var (
	paramTimeout    = newParam("WEFT_TIMEOUT", 60*time.Second, units.ParseDuration)      // silence from a peer that fails an operation; 0 disables
	paramAlgo       = newParam("WEFT_ALGO", "", parseString)                             // force algorithms: "ring" or "allreduce=rd,broadcast=tree"
	paramChunk      = newParam("WEFT_CHUNK_BYTES", int64(512<<10), parseChunk)           // pipeline chunk and largest frame
	paramRendezvous = newParam("WEFT_RENDEZVOUS", "", parseString)                       // "file:///shared/path" when no master address is given
	paramJobToken   = newParam("WEFT_JOB_TOKEN", "", parseString)                        // job identity checked on every connection
	paramIfAddr     = newParam("WEFT_IFADDR", "", parseString)                           // local address to listen on and advertise
	paramSockBuf    = newParam("WEFT_SOCKET_BUFFER", int64(4<<20), units.ParseSize)      // SO_SNDBUF/SO_RCVBUF (4M: a pipelined chunk never waits for buffer space); 0 keeps autotuning
	paramLog        = newParam("WEFT_LOG", "warn", parseString)                          // log level: error, warn, info, debug
	paramBackend    = newParam("WEFT_BACKEND", "auto", parseString)                      // which backend Open uses: auto, tcp, mpi, local
	paramCongestion = newParam("WEFT_TCP_CONGESTION", "reno", parseString)               // TCP congestion control; "system" keeps the system's
	paramShm        = newParam("WEFT_SHM", "auto", parseAutoOff)                         // shared memory between ranks on one host: auto or off
	paramShmRing    = newParam("WEFT_SHM_RING", int64(shm.DefaultRing), units.ParseSize) // bytes of each direction's ring
	paramSpin       = newParam("WEFT_SPIN", "auto", parseString)                         // how long a waiting operation polls its socket before sleeping
	paramNCCL       = newParam("WEFT_NCCL", "auto", parseAutoOff)                        // collectives on device memory through NCCL when every rank has a GPU: auto or off (staged)
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
