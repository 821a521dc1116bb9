// Pingpong is a user's blocking ping-pong between ranks 0 and 1, written
// as an application would write it: collective.Open, then a plain loop of
// Send and Recv, with no knob of Weft's set. It measures what such a
// program gets, beside its C twin on MPI (scripts/peers/osu_p2p.c
// latency, the same protocol); scripts/bench-user.sh runs the two.
//
// For each size from -min to -max (doubling) rank 0 sends the message to
// rank 1, which sends it back; after -warmup untimed round trips it times
// -iters of them (0: 10 to 10000, about 0.2 s of data at 1 GB/s, as
// osu_p2p.c chooses) and prints half the round trip. After each size an
// untimed round sends a pattern each way and checks every byte; a wrong
// byte is an error. Ranks beyond 1 only wait at the barriers.
//
//	go build -o bin/pingpong ./examples/pingpong
//	mpirun -np 2 bin/pingpong
//	mpirun -np 2 --bind-to none bin/pingpong -min 8 -max 64K
//
// It prints one line per size, "BYTES US" (half the round trip in
// microseconds, rank 0's clock), after a line starting with "#".
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/weft-hpc/weft/collective"
)

func main() {
	minS := flag.String("min", "8", "smallest message, bytes (K and M suffixes: powers of 2)")
	maxS := flag.String("max", "64K", "largest message, bytes")
	iters := flag.Int("iters", 0, "timed round trips per size (0: 10 to 10000, about 0.2 s of data at 1 GB/s)")
	warmup := flag.Int("warmup", -1, "untimed round trips before each size (-1: a tenth of the timed ones, at least 10)")
	flag.Parse()
	if err := run(*minS, *maxS, *iters, *warmup, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "pingpong:", err)
		os.Exit(1)
	}
}

// size reads a byte count with an optional K or M (binary).
func size(flagName, s string) (int, error) {
	mult := 1
	t := strings.ToUpper(s)
	switch {
	case strings.HasSuffix(t, "K"):
		mult, t = 1<<10, t[:len(t)-1]
	case strings.HasSuffix(t, "M"):
		mult, t = 1<<20, t[:len(t)-1]
	}
	n, err := strconv.Atoi(t)
	if err != nil || n < 1 || n > (1<<30)/mult {
		return 0, fmt.Errorf("-%s %q: want a size from 1 byte to 1G (K and M suffixes allowed)", flagName, s)
	}
	return n * mult, nil
}

func run(minS, maxS string, iters, warmup int, args []string) error {
	lo, err := size("min", minS)
	if err != nil {
		return err
	}
	hi, err := size("max", maxS)
	switch {
	case err != nil:
		return err
	case len(args) > 0:
		return fmt.Errorf("unexpected arguments %q (flags are -min, -max, -iters, -warmup)", args)
	case hi < lo:
		return fmt.Errorf("-max %s is smaller than -min %s", maxS, minS)
	case iters < 0:
		return fmt.Errorf("-iters %d: want 0 (auto) or more", iters)
	case warmup < -1:
		return fmt.Errorf("-warmup %d: want -1 (auto) or more", warmup)
	}
	ctx := context.Background()
	c, err := collective.Open(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if c.Size() < 2 {
		return fmt.Errorf("a ping-pong needs 2 ranks, this world has %d (run it under mpirun -np 2)", c.Size())
	}
	me := c.Rank()
	send, recv := make([]byte, hi), make([]byte, hi)
	if me == 0 {
		fmt.Printf("# pingpong: %d ranks (weft %s), half round trip in us\n", c.Size(), c.Backend())
	}
	for b := lo; b <= hi; b *= 2 {
		n := iters
		if n == 0 {
			n = min(max(int(2e8/float64(2*b+20000)), 10), 10000)
		}
		w := warmup
		if w < 0 {
			w = max(10, n/10)
		}
		s, r := send[:b], recv[:b]
		trip := func() error {
			switch me {
			case 0:
				if err := c.Send(ctx, collective.Buf(s), 1, 0); err != nil {
					return err
				}
				_, err := c.Recv(ctx, collective.Buf(r), 1, 0)
				return err
			case 1:
				if _, err := c.Recv(ctx, collective.Buf(r), 0, 0); err != nil {
					return err
				}
				return c.Send(ctx, collective.Buf(s), 0, 0)
			}
			return nil
		}
		for range w {
			if err := trip(); err != nil {
				return err
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		start := time.Now()
		for range n {
			if err := trip(); err != nil {
				return err
			}
		}
		us := time.Since(start).Seconds() * 1e6 / float64(2*n)
		// The check: rank 0 sends pattern 1, rank 1 checks it and sends
		// pattern 2 back.
		for i := range s {
			s[i] = pattern(me+1, i)
			r[i] = 0
		}
		if err := trip(); err != nil {
			return err
		}
		if me <= 1 {
			for i := range r {
				if want := pattern(2-me, i); r[i] != want {
					return fmt.Errorf("rank %d: byte %d of a %d-byte message is %d, want %d", me, i, b, r[i], want)
				}
			}
		}
		if me == 0 {
			fmt.Printf("%d %.3f\n", b, us)
		}
	}
	return c.Barrier(ctx)
}

// pattern is byte i of message m of the check: never 0.
func pattern(m, i int) byte { return byte((i*131+m*17)%251 + 1) }
