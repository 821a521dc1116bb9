package mpi

import (
	"strconv"
	"strings"
)

// The watchdog's answers (watchdog.go) as they travel between ranks:
// "<state> <op> <text>", the state one byte, op the number of the op on
// the communicator asked about (-1 for none).

// What a rank says of its part in a communicator, in the first byte of
// its answer.
const (
	stateCall  = 'C' // inside the MPI call of a collective
	stateCheck = 'K' // in the signature check before one
	stateIdle  = 'I' // in no collective of it
	stateNone  = 'N' // has no such communicator
)

// parseAnswer splits an answer into its state, the op it is at and its
// text; text is "" for no answer.
func parseAnswer(a string) (state byte, seq int64, text string) {
	f := strings.SplitN(a, " ", 3)
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, -1, ""
	}
	seq, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, -1, ""
	}
	return f[0][0], seq, f[2]
}
