//go:build race

package bench

// raceEnabled: this binary runs under the race detector. The bandwidth
// benchmark then receives each message of a window into a region of its
// own: OSU's one receive buffer for every message in flight is a
// write-write race by design (the bytes are thrown away), which the
// detector would report and which tests under -race must not contain.
const raceEnabled = true
