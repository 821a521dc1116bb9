package mpi

import (
	"strconv"
	"testing"

	"github.com/weft-hpc/weft/collective/driver"
)

func TestParseAnswer(t *testing.T) {
	st, seq, text := parseAnswer("C 12 pid 7 on h: inside MPI_Bcast, op #12: broadcast(3 x uint8, root 0)")
	if st != stateCall || seq != 12 || text != "pid 7 on h: inside MPI_Bcast, op #12: broadcast(3 x uint8, root 0)" {
		t.Errorf("got %c %d %q", st, seq, text)
	}
	for _, a := range []string{"", "C", "C x text", "CC 1 text"} {
		if _, _, text := parseAnswer(a); text != "" {
			t.Errorf("%q: text %q, want none", a, text)
		}
	}
}

// FuzzParseAnswer: any bytes another rank's watchdog sends are read
// without a panic, and an answer read back reads the same.
func FuzzParseAnswer(f *testing.F) {
	f.Add("C 12 pid 7 on h: inside MPI_Bcast")
	f.Add("I -1 alive")
	f.Add("N -9223372036854775808 x")
	f.Fuzz(func(t *testing.T, a string) {
		st, seq, text := parseAnswer(a)
		if text == "" {
			return
		}
		if st2, seq2, text2 := parseAnswer(string([]byte{st}) + " " + strconv.FormatInt(seq, 10) + " " + text); st2 != st || seq2 != seq || text2 != text {
			t.Errorf("%q: read back as %c %d %q", a, st2, seq2, text2)
		}
	})
}

// FuzzSignatures: the signatures gathered from the other ranks, whatever
// their words, give a mismatch that blames one of the ranks, without a
// panic.
func FuzzSignatures(f *testing.F) {
	f.Add(int64(driver.AllReduce), int64(driver.Float32), int64(driver.Sum), int64(0), int64(1000), int64(0), int64(3), int64(500))
	f.Add(int64(99), int64(-1), int64(1<<40), int64(-5), int64(-1), int64(-1), int64(-1), int64(0))
	f.Fuzz(func(t *testing.T, kind, dtype, op, root, count, counts, seq, other int64) {
		w := []int64{kind, dtype, op, root, count, counts, seq}
		a := sigFrom(w)
		w[4] = other
		b := sigFrom(w)
		_ = a.String() + b.String()
		world := []int{3, 0, 2}
		g := mismatch([]sig{a, b, a}, world)
		if g.Culprit != 0 && g.Culprit != 3 && g.Culprit != 2 {
			t.Errorf("blamed rank %d, not a member", g.Culprit)
		}
	})
}
