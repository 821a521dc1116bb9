//go:build mpi

package mpi

import (
	"testing"
	"time"
)

// TestLimit: a collective may stay inside MPI for the timeout plus its
// bytes at 100 MB/s, so that a large call on a slow network is not taken
// for a stuck one.
func TestLimit(t *testing.T) {
	c := &conn{w: &world{set: settings{timeout: 2 * time.Second}}}
	for _, tc := range []struct {
		bytes int
		want  time.Duration
	}{
		{8, 2*time.Second + 80*time.Nanosecond},
		{64 << 20, 2*time.Second + 671088640*time.Nanosecond},
		{16 << 30, 2*time.Second + 171798691840*time.Nanosecond},
	} {
		c.watch.bytes = tc.bytes
		if got := c.limit(); got != tc.want {
			t.Errorf("%d bytes: limit %v, want %v", tc.bytes, got, tc.want)
		}
	}
}
