// Package units parses and prints the sizes and durations that flags and
// WEFT_* variables take ("256M", "64KiB", "60s", "90").
package units

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseSize parses a byte count: a non-negative integer with an optional
// binary suffix K, M, G, T (also KB, KiB, ...; all powers of 1024, as
// nccl-tests reads -b and -e).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	u := strings.ToUpper(t)
	mult := int64(1)
	for _, suf := range []struct {
		s string
		m int64
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40},
		{"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"TB", 1 << 40},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}, {"B", 1}} {
		if strings.HasSuffix(u, suf.s) {
			u, mult = strings.TrimSpace(u[:len(u)-len(suf.s)]), suf.m
			break
		}
	}
	n, err := strconv.ParseInt(u, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("units: %q is not a size (want a count of bytes such as 4096, 64K or 256M)", s)
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("units: size %q is too large", s)
	}
	return n * mult, nil
}

// FormatSize prints n bytes compactly with a binary suffix when exact
// ("256M", "1K", "1000").
func FormatSize(n int64) string {
	for _, s := range []struct {
		suf string
		m   int64
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= s.m && n%s.m == 0 {
			return strconv.FormatInt(n/s.m, 10) + s.suf
		}
	}
	return strconv.FormatInt(n, 10)
}

// ParseDuration parses a Go duration ("90s", "2m") or a plain number of
// seconds ("60", "0.5").
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(t, 64); err == nil {
		if f < 0 {
			return 0, fmt.Errorf("units: negative duration %q", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(t)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("units: %q is not a duration (want seconds such as 60, or 90s, 2m)", s)
	}
	return d, nil
}
