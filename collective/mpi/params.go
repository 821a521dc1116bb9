package mpi

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
)

// Every setting the mpi backend reads, in one place: the WEFT_* variables
// of its own, one line each, cached on first read (a value the program set
// in driver.Config.Settings takes the variable's place), and what comes
// resolved in driver.Config. The package doc and docs/LAUNCH.md list them.
var (
	paramCheck = sync.OnceValues(func() (checkMode, error) { return parseCheck(os.Getenv("WEFT_CHECK")) }) // signature check of collectives: all (default), first, off
)

// settings is what one world runs with.
type settings struct {
	check    checkMode
	checkErr error         // WEFT_CHECK did not parse (check is then checkInvalid)
	timeout  time.Duration // cfg.Timeout (WEFT_TIMEOUT, or collective.WithTimeout): the watchdog's limit; 0: no watchdog
}

func settingsOf(cfg *driver.Config) settings {
	s := settings{timeout: cfg.Timeout}
	if v, ok := cfg.Settings["WEFT_CHECK"]; ok {
		s.check, s.checkErr = parseCheck(v)
	} else {
		s.check, s.checkErr = paramCheck()
	}
	if s.checkErr != nil {
		s.check = checkInvalid
	}
	return s
}

// checkMode is WEFT_CHECK: which collectives agree on their signature
// before they run (sig.go).
type checkMode int64

const (
	checkAll     checkMode = iota // every collective
	checkFirst                    // the first collective of each communicator
	checkOff                      // none
	checkInvalid                  // WEFT_CHECK did not parse: Open fails on every rank
)

var checkNames = [...]string{checkAll: "all", checkFirst: "first", checkOff: "off", checkInvalid: "invalid"}

func (m checkMode) String() string {
	if m >= 0 && int(m) < len(checkNames) {
		return checkNames[m]
	}
	return fmt.Sprintf("checkMode(%d)", int64(m))
}

func parseCheck(s string) (checkMode, error) {
	switch s {
	case "", "all", "1", "on":
		return checkAll, nil
	case "first":
		return checkFirst, nil
	case "off", "0":
		return checkOff, nil
	}
	return checkInvalid, fmt.Errorf("WEFT_CHECK=%q: want all, first or off", s)
}

// on reports whether the collective numbered seq on its communicator is
// checked.
func (m checkMode) on(seq int64) bool {
	return m == checkAll || m == checkFirst && seq == 0
}
