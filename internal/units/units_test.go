package units

import (
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "8": 8, "64K": 64 << 10, "256M": 256 << 20, "1G": 1 << 30,
		"2KiB": 2048, "3mb": 3 << 20, " 5 ": 5, "10B": 10} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1X", "M", "1.5M", "99999999999999T"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
	for n, want := range map[int64]string{8: "8", 1024: "1K", 256 << 20: "256M", 1000: "1000", 3 << 30: "3G"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"60": time.Minute, "0.5": 500 * time.Millisecond, "90s": 90 * time.Second, "2m": 2 * time.Minute} {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-3", "soon", "-1s"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) accepted", in)
		}
	}
}
