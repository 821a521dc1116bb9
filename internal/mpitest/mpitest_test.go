package mpitest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// The harness tests itself: this binary's ranks play "echo", which prints
// what the job gave them.
func TestMain(m *testing.M) { os.Exit(Main(m, rank)) }

func rank(role string) int {
	switch role {
	case "echo":
		fmt.Printf("READY\nRESULT rank=%s size=%s addr=%s token=%s extra=%s\nRESULT second\n", os.Getenv("WEFT_RANK"),
			os.Getenv("WEFT_WORLD_SIZE"), os.Getenv("WEFT_MASTER_ADDR"), os.Getenv("WEFT_JOB_TOKEN"), os.Getenv("WEFT_TEST_EXTRA"))
		return 0
	}
	fmt.Printf("RESULT unknown role %q\n", role)
	return 2
}

// StartRanks runs this binary as n ranks with the job's variables and the
// extra ones; Result is each rank's first RESULT line.
func TestStartRanks(t *testing.T) {
	j := StartRanks(t, 3, "echo", "WEFT_TEST_EXTRA=x")
	for r := range 3 {
		j.WaitFor(t, r, "READY", 30*time.Second)
		want := fmt.Sprintf("RESULT rank=%d size=3 addr=127.0.0.1 token=test-%s extra=x", r, t.Name())
		if got := j.Result(t, r, 30*time.Second); got != want {
			t.Errorf("rank %d: %q, want %q", r, got, want)
		}
	}
}

// Command runs np ranks of this binary under mpirun, the role and the
// variables passed to each.
func TestCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := Command(ctx, t, 2, "echo", "WEFT_TEST_EXTRA=y").CombinedOutput()
	if n := strings.Count(string(out), " extra=y\n"); err != nil || n != 2 {
		t.Fatalf("mpirun: %v; %d of 2 ranks got the variable:\n%s", err, n, Tail(out, 20))
	}
}

func TestTail(t *testing.T) {
	if got := Tail([]byte("a\nb\nc\n"), 2); got != "b\nc" {
		t.Errorf("Tail: %q", got)
	}
	if got := Tail([]byte("a\n"), 5); got != "a" {
		t.Errorf("Tail of less: %q", got)
	}
}
