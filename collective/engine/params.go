package engine

import (
	"fmt"
	"os"
	"sync"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/collective/transport/shm"
	"github.com/weft-hpc/weft/internal/units"
)

// Every setting the engine reads, one line each: its WEFT_* variable, the
// default, and the parser that checks it. An option of package collective
// (WithAlgorithm, WithChunkBytes, ...) puts a value under the same name in
// driver.Config.Settings, which takes the variable's place for one world.
// The environment is read once; each world parses what it gets once, when
// it opens. docs/LAUNCH.md lists them.
var (
	setAlgo       = setting[map[driver.Kind]string]{"WEFT_ALGO", "", true, parseAlgo}     // force algorithms: "ring" or "allreduce=rd,broadcast=chain"
	setChunk      = setting[int]{"WEFT_CHUNK_BYTES", "512K", true, parseChunk}            // pipeline chunk and largest frame, [4K, 64M]
	setSockBuf    = setting[int]{"WEFT_SOCKET_BUFFER", "4M", true, parseSize}             // SO_SNDBUF/SO_RCVBUF; 0 keeps the kernel's autotuning
	setSpin       = setting[string]{"WEFT_SPIN", "auto", true, parseSpin}                 // how long a waiting operation polls before it sleeps
	setCongestion = setting[string]{"WEFT_TCP_CONGESTION", "reno", true, parseCongestion} // TCP congestion control; "system" keeps the system's ("")
	setShm        = setting[bool]{"WEFT_SHM", "auto", true, parseShm}                     // shared memory between the ranks of a host: auto or off
	setShmRing    = setting[int]{"WEFT_SHM_RING", "4M", true, parseRing}                  // bytes of each direction's shared-memory ring
	setRendezvous = setting[string]{"WEFT_RENDEZVOUS", "", true, parseString}             // file:///path of a shared-file rendezvous
	setToken      = setting[string]{"WEFT_JOB_TOKEN", "", true, parseString}              // job identity every request and connection presents
	setIfAddr     = setting[string]{"WEFT_IFADDR", "", true, parseString}                 // local IP address to listen on and advertise
	setMaster     = setting[string]{"master", "", false, parseString}                     // host:port of the store (collective.WithMaster; the launch's WEFT_MASTER_ADDR/PORT else)
)

// setting is one of the engine's knobs.
type setting[T any] struct {
	name  string // the WEFT_* variable, or the option's key
	def   string // the value when neither the option nor the variable sets one
	env   bool   // read the variable (false: an option only)
	parse func(string) (T, error)
}

// environ is the process's environment as the engine read it: each
// variable once, on first use.
type environ struct {
	mu   sync.Mutex
	vals map[string]string
}

var env environ

func (e *environ) get(name string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.vals[name]
	if !ok {
		if e.vals == nil {
			e.vals = map[string]string{}
		}
		v = os.Getenv(name)
		e.vals[name] = v
	}
	return v
}

// get is the setting's value for a world opened with cfg: the option's,
// else the variable's, else the default, parsed; an error names where the
// bad value came from.
func (s setting[T]) get(cfg *driver.Config) (T, error) { return s.getFrom(cfg, env.get) }

func (s setting[T]) getFrom(cfg *driver.Config, getenv func(string) string) (T, error) {
	v, from := cfg.Settings[s.name], "option"
	if _, ok := cfg.Settings[s.name]; !ok {
		v, from = "", ""
		if s.env {
			v, from = getenv(s.name), "variable"
		}
		if v == "" {
			v = s.def
		}
	}
	t, err := s.parse(v)
	if err != nil {
		var zero T
		if from == "option" {
			return zero, fmt.Errorf("engine: %s=%q (set by an option): %w", s.name, v, err)
		}
		return zero, fmt.Errorf("engine: %s=%q: %w", s.name, v, err)
	}
	return t, nil
}

func parseString(s string) (string, error) { return s, nil }

func parseSize(s string) (int, error) {
	n, err := units.ParseSize(s)
	if err == nil && n < 0 {
		err = fmt.Errorf("negative size")
	}
	return int(n), err
}

func parseChunk(s string) (int, error) {
	n, err := parseSize(s)
	if err == nil && (n < 4<<10 || n > 64<<20) {
		err = fmt.Errorf("chunk of %d bytes is outside [4K, 64M]", n)
	}
	return n, err
}

func parseRing(s string) (int, error) {
	n, err := parseSize(s)
	if err == nil {
		err = shm.CheckRing(n)
	}
	return n, err
}

func parseSpin(s string) (string, error) {
	if s == "auto" {
		return s, nil
	}
	_, err := units.ParseDuration(s)
	return s, err
}

func parseCongestion(s string) (string, error) {
	if s == "system" {
		return "", nil
	}
	return s, nil
}

func parseShm(s string) (bool, error) {
	switch s {
	case "auto":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("want auto or off")
}
