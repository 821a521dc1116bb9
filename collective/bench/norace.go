//go:build !race

package bench

// raceEnabled: see race.go.
const raceEnabled = false
