package feature

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// Rows turns a byte budget into a number of rows of dim float32s, after
// CheckBudget. A budget of 0 gives 0 rows.
func Rows(budget int64, dim int) (int, error) {
	if budget < 0 || dim <= 0 {
		return 0, fmt.Errorf("feature: cache budget %d bytes for rows of width %d", budget, dim)
	}
	if err := CheckBudget(budget); err != nil {
		return 0, err
	}
	return int(budget / (4 * int64(dim))), nil
}

// CheckBudget refuses a budget above the MemAvailable line of
// /proc/meminfo. Where that file cannot be read (not Linux) it accepts.
func CheckBudget(budget int64) error {
	avail, ok := memAvailable()
	if ok && budget > avail {
		return fmt.Errorf("%w: %d MiB asked, %d MiB available (MemAvailable in /proc/meminfo): lower the budget", ErrBudget, budget>>20, avail>>20)
	}
	return nil
}

// memAvailable reads MemAvailable from /proc/meminfo, in bytes.
func memAvailable() (int64, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	return parseMemAvailable(b)
}

func parseMemAvailable(b []byte) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) >= 2 && string(f[0]) == "MemAvailable:" {
			kb, err := strconv.ParseInt(string(f[1]), 10, 64)
			if err != nil {
				return 0, false
			}
			return kb << 10, true
		}
	}
	return 0, false
}
