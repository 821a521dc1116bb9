package engine

import (
	"strings"
	"testing"

	"github.com/weft-hpc/weft/collective/driver"
)

// TestSettings: each setting comes from the option (Config.Settings), else
// the variable, else its default, and a bad value names the variable and
// where it came from.
func TestSettings(t *testing.T) {
	c, err := newConfig(&driver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if c.chunk != 512<<10 || c.sockBuf != 4<<20 || c.ring != 4<<20 || !c.shm || c.spinSetting != "auto" || c.congestion != "reno" {
		t.Errorf("defaults: %+v", c)
	}
	c, err = newConfig(&driver.Config{Settings: map[string]string{"WEFT_CHUNK_BYTES": "64K", "WEFT_SHM": "off",
		"WEFT_TCP_CONGESTION": "system", "WEFT_ALGO": "allreduce=rd", "master": "h:1"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.chunk != 64<<10 || c.shm || c.congestion != "" || c.algo[driver.AllReduce] != "rd" || c.master != "h:1" {
		t.Errorf("options: %+v", c)
	}
	for _, tc := range []struct {
		settings map[string]string
		want     string
	}{
		{map[string]string{"WEFT_CHUNK_BYTES": "1K"}, `engine: WEFT_CHUNK_BYTES="1K" (set by an option): chunk of 1024 bytes is outside [4K, 64M]`},
		{map[string]string{"WEFT_SHM_RING": "100K"}, `WEFT_SHM_RING="100K" (set by an option): ring of 102400 bytes: want a power of two`},
		{map[string]string{"WEFT_SHM": "yes"}, `WEFT_SHM="yes" (set by an option): want auto or off`},
		{map[string]string{"WEFT_SPIN": "fast"}, `WEFT_SPIN="fast"`},
		{map[string]string{"WEFT_SOCKET_BUFFER": "-1"}, `WEFT_SOCKET_BUFFER="-1"`},
		{map[string]string{"WEFT_ALGO": "allreduce=nope"}, `WEFT_ALGO="allreduce=nope"`},
	} {
		if _, err := newConfig(&driver.Config{Settings: tc.settings}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.settings, err, tc.want)
		}
	}
	// A variable.
	s := setting[int]{"WEFT_TEST_SETTING", "4K", true, parseChunk}
	getenv := func(string) string { return "3K" }
	if _, err := s.getFrom(&driver.Config{}, getenv); err == nil ||
		!strings.Contains(err.Error(), `engine: WEFT_TEST_SETTING="3K": chunk of 3072`) || strings.Contains(err.Error(), "option") {
		t.Errorf("a bad variable: %v", err)
	}
}
