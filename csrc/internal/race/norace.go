//go:build !race

package race

// Read reports a read of s's elements to the race detector: nothing
// without -race.
func Read[T any](s []T) {}

// Write reports a write of s's elements to the race detector: nothing
// without -race.
func Write[T any](s []T) {}
