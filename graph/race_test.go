//go:build race

package graph

// raceEnabled skips the slow full-data-set tests under the race detector,
// which makes gzip decoding ten times slower.
const raceEnabled = true
