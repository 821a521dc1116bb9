// Waitcost measures what a wait costs a user's program when ranks
// outnumber cores (issue 32): rank 0 computes while every other rank
// waits for it, in a blocking Recv of the message rank 0 sends when it is
// done, or in an AllReduce of one float64 that rank 0 joins when it is
// done. A waiter that polls takes CPU time; where the host runs more
// ranks than CPUs, that time can be the computing rank's. The program is
// written as an application would write it (collective.Open, then plain
// calls, no knob of Weft's set); the C twin on MPI is
// scripts/peers/waitcost.c, and scripts/bench-wait.sh runs the two under
// each wait policy.
//
// After an untimed message to each rank and an untimed AllReduce, rank 0
// calibrates its work alone: it runs a fixed integer loop
// (no memory traffic, no sleep) in chunks until -work has passed, while
// the other ranks sleep in the kernel (a plain time.Sleep, not a wait of
// Weft's); that count of chunks is the work of every round, and its time
// is the time alone of the first round (each later round measures it
// again, the others asleep). Then in each of -rounds rounds, for each wait
// of -waits, after a barrier, rank 0 does the same work again and ends the
// wait; each waiter measures its CPU time (getrusage RUSAGE_SELF, user +
// system, every thread of the process) and the wall time over its wait,
// and the latency of the message that ended it (rank 0 stamps it with
// CLOCK_MONOTONIC just before the Send or the AllReduce; the waiter reads
// the clock when the call returns).
//
//	go build -o bin/waitcost ./examples/waitcost
//	mpirun -np 4 --oversubscribe bin/waitcost
//	mpirun -np 4 --oversubscribe -x WEFT_SPIN=0 bin/waitcost -work 500ms -rounds 3
//
// Rank 0 prints lines starting with "#", then per round "alone SECONDS"
// and a line per wait:
//
//	WAIT COMPUTE_S SLOWDOWN CPU_PER_S LAT_MED_US LAT_MAX_US
//
// COMPUTE_S is the work's wall time in that round, SLOWDOWN that time
// over the round's time alone, CPU_PER_S the waiters' CPU seconds per second of
// waiting (their mean), and LAT_MED_US and LAT_MAX_US the median and the
// largest latency over the waiters, in microseconds.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/weft-hpc/weft/collective"
)

func main() {
	work := flag.Duration("work", time.Second, "rank 0's work, calibrated alone to about this long")
	rounds := flag.Int("rounds", 1, "rounds of each wait")
	waits := flag.String("waits", "recv,allreduce", "the waits to measure, comma-separated: recv, allreduce")
	flag.Parse()
	if err := run(*work, *rounds, *waits, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "waitcost:", err)
		os.Exit(1)
	}
}

// chunk is the iterations of the work loop between looks at the clock
// while calibrating: about a millisecond.
const chunk = 1 << 20

// sink keeps the work loop's result alive.
var sink uint64

// compute runs n chunks of a linear congruential recurrence: a chain of
// dependent multiply-adds on one register.
func compute(n int) {
	x := sink | 1
	for range n {
		for range chunk {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink = x
}

// mono is CLOCK_MONOTONIC in nanoseconds: the same clock in every process
// of the host (the C twin reads it too).
func mono() float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err) // CLOCK_MONOTONIC exists on every Linux
	}
	return float64(ts.Nano())
}

// cpu is this process's CPU time, user and system, in seconds.
func cpu() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err) // RUSAGE_SELF cannot fail
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func parseWaits(s string) ([]string, error) {
	var ws []string
	for _, w := range strings.Split(s, ",") {
		if w != "recv" && w != "allreduce" {
			return nil, fmt.Errorf("-waits %q: %q is not a wait (recv, allreduce)", s, w)
		}
		if slices.Contains(ws, w) {
			return nil, fmt.Errorf("-waits %q: %s twice", s, w)
		}
		ws = append(ws, w)
	}
	return ws, nil
}

func run(work time.Duration, rounds int, waitList string, args []string) error {
	waits, err := parseWaits(waitList)
	switch {
	case err != nil:
		return err
	case len(args) > 0:
		return fmt.Errorf("unexpected arguments %q (flags are -work, -rounds, -waits)", args)
	case work < 10*time.Millisecond || work > time.Minute:
		return fmt.Errorf("-work %v: want 10ms to 1m", work)
	case rounds < 1:
		return fmt.Errorf("-rounds %d: want at least 1", rounds)
	}
	ctx := context.Background()
	c, err := collective.Open(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	n, me := c.Size(), c.Rank()
	if n < 2 {
		return fmt.Errorf("a wait needs 2 ranks or more, this world has %d (run it under mpirun -np 2 or more)", n)
	}
	// One untimed message to each rank and one AllReduce first: a first
	// call may set up what later ones reuse (connections, the shared
	// segment of an allreduce), which is not the cost of a wait.
	stamp, got := []float64{0}, []float64{0}
	for r := 1; r < n; r++ {
		switch me {
		case 0:
			err = c.Send(ctx, collective.Buf(stamp), r, 1)
		case r:
			_, err = c.Recv(ctx, collective.Buf(got), 0, 1)
		}
		if err != nil {
			return err
		}
	}
	if err := c.AllReduce(ctx, collective.Buf(stamp), collective.Buf(got), collective.Sum); err != nil {
		return err
	}
	// Calibrate alone: the waiters sleep in the kernel for twice the work
	// and more, so that rank 0 is done before they reach the barrier.
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	chunks, alone := 0, 0.0
	if me == 0 {
		start := time.Now()
		for time.Since(start) < work {
			compute(1)
			chunks++
		}
		alone = time.Since(start).Seconds()
	} else {
		time.Sleep(2*work + 200*time.Millisecond)
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	if me == 0 {
		fmt.Printf("# waitcost: %d ranks (weft %s), rank 0 computes %d chunks, the others wait; WEFT_SPIN=%s\n",
			n, c.Backend(), chunks, os.Getenv("WEFT_SPIN"))
		fmt.Println("# wait compute_s slowdown cpu_per_s lat_med_us lat_max_us")
	}
	mine, all := make([]float64, 3), make([]float64, 3*n)
	for round := range rounds {
		// The time alone of this round: the calibration's in the first,
		// the same work again, the others asleep, in each later one, so
		// that a change of the host's load between rounds cancels.
		if round > 0 {
			if me == 0 {
				start := time.Now()
				compute(chunks)
				alone = time.Since(start).Seconds()
			} else {
				time.Sleep(2*work + 100*time.Millisecond)
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
		}
		if me == 0 {
			fmt.Printf("alone %.4f\n", alone)
		}
		for _, w := range waits {
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			t0, c0 := time.Now(), cpu()
			if me == 0 {
				compute(chunks)
				mine[0], mine[1], mine[2] = time.Since(t0).Seconds(), cpu()-c0, 0
				switch w {
				case "recv":
					for r := 1; r < n; r++ {
						stamp[0] = mono()
						if err := c.Send(ctx, collective.Buf(stamp), r, 1); err != nil {
							return err
						}
					}
				case "allreduce":
					stamp[0] = mono()
					if err := c.AllReduce(ctx, collective.Buf(stamp), collective.Buf(got), collective.Sum); err != nil {
						return err
					}
				}
			} else {
				switch w {
				case "recv":
					if _, err := c.Recv(ctx, collective.Buf(got), 0, 1); err != nil {
						return err
					}
				case "allreduce":
					stamp[0] = 0
					if err := c.AllReduce(ctx, collective.Buf(stamp), collective.Buf(got), collective.Sum); err != nil {
						return err
					}
				}
				now := mono()
				mine[0], mine[1], mine[2] = time.Since(t0).Seconds(), cpu()-c0, now-got[0]
				if lat := mine[2]; lat < 0 || lat > 60e9 {
					return fmt.Errorf("rank %d: the %s that ended the wait carried %.0f, %.0f ns from this rank's clock: not rank 0's stamp", me, w, got[0], lat)
				}
			}
			if err := c.AllGather(ctx, collective.Buf(mine), collective.Buf(all)); err != nil {
				return err
			}
			if me == 0 {
				fmt.Println(report(w, alone, all))
			}
		}
	}
	return nil
}

// report is rank 0's line for one wait, from every rank's (wall seconds,
// CPU seconds, latency ns), rank 0's first.
func report(w string, alone float64, all []float64) string {
	n := len(all) / 3
	perS, lats := 0.0, make([]float64, 0, n-1)
	for r := 1; r < n; r++ {
		wall, cpu, lat := all[3*r], all[3*r+1], all[3*r+2]
		perS += cpu / wall / float64(n-1)
		lats = append(lats, lat/1e3)
	}
	slices.Sort(lats)
	med := lats[len(lats)/2]
	if len(lats)%2 == 0 {
		med = (lats[len(lats)/2-1] + med) / 2
	}
	return fmt.Sprintf("%s %.4f %.3f %.3f %.1f %.1f", w, all[0], all[0]/alone, perS, med, lats[len(lats)-1])
}
