package mpitest

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// RoleVar is the variable that makes a test binary one rank of a job a
// test started: WEFT_TEST_ROLE=<role>.
const RoleVar = "WEFT_TEST_ROLE"

// Role is RoleVar=role, for a rank's environment or mpirun's -x.
func Role(role string) string { return RoleVar + "=" + role }

// Self is this test binary, which a job runs as its ranks.
func Self() string { return os.Args[0] }

// Main is the body of a multi-process test binary's TestMain. With
// RoleVar set, the process is one rank: Main calls rank with the role and
// exits with the status it returns. Otherwise it runs the tests and
// returns m.Run's status, for TestMain to clean up and exit with:
//
//	func TestMain(m *testing.M) { os.Exit(mpitest.Main(m, runRole)) }
func Main(m *testing.M, rank func(role string) int) int {
	if role := os.Getenv(RoleVar); role != "" {
		os.Exit(rank(role))
	}
	return m.Run()
}

// Example is mpirun -np np running the program bin (BuildExample's, or
// another) with args on the backend given (WEFT_BACKEND), in Env's
// environment. It skips the test when there is no mpirun (Mpirun).
func Example(ctx context.Context, t testing.TB, np int, backend, bin string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(ctx, Mpirun(t), append([]string{"-np", strconv.Itoa(np), "-x", "WEFT_BACKEND=" + backend, bin}, args...)...)
	cmd.Env = Env()
	return cmd
}

// Command is mpirun -np np running this test binary as ranks that play
// role, with vars (NAME=value) passed to every rank with -x, in Env's
// environment. It skips the test when there is no mpirun (Mpirun).
func Command(ctx context.Context, t testing.TB, np int, role string, vars ...string) *exec.Cmd {
	t.Helper()
	args := []string{"-np", strconv.Itoa(np), "-x", Role(role)}
	for _, v := range vars {
		args = append(args, "-x", v)
	}
	cmd := exec.CommandContext(ctx, Mpirun(t), append(args, Self())...)
	cmd.Env = Env()
	return cmd
}
