package collective_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
)

// TestShrinkLocal: of 4 goroutine ranks one aborts (its links close as a
// dead process's do); the others fail naming it, agree on it, shrink to
// 3 and use the new communicator: allreduce, point to point, Split, and
// a second Agree.
func TestShrinkLocal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	comms, err := collective.NewLocal(4, collective.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range comms {
		defer c.Close()
	}
	comms[1].Abort()
	var wg sync.WaitGroup
	for _, r := range []int{0, 2, 3} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := comms[r]
			x := []float64{1}
			err := c.AllReduce(ctx, collective.Buf(x), collective.Buf(x), collective.Sum)
			if collective.PeerOf(err) != 1 {
				t.Errorf("rank %d: allreduce after the abort: %v", r, err)
			}
			and, failed, err := c.Agree(ctx, uint64(r|8))
			if err != nil || and != 8 || !slices.Equal(failed, []int{1}) {
				t.Errorf("rank %d: Agree = %b, %v, %v", r, and, failed, err)
			}
			s, err := c.Shrink(ctx)
			if err != nil {
				t.Errorf("rank %d: Shrink: %v", r, err)
				return
			}
			defer s.Close()
			if want := map[int]int{0: 0, 2: 1, 3: 2}[r]; s.Rank() != want || s.Size() != 3 {
				t.Errorf("rank %d: rank %d of %d in the shrunk world, want %d of 3", r, s.Rank(), s.Size(), want)
			}
			if got := c.FailedRanks(); !slices.Equal(got, []int{1}) {
				t.Errorf("rank %d: FailedRanks = %v", r, got)
			}
			y := []float64{float64(r)}
			if err := s.AllReduce(ctx, collective.Buf(y), collective.Buf(y), collective.Sum); err != nil || y[0] != 5 {
				t.Errorf("rank %d: allreduce of 3: %v, %v", r, y, err)
			}
			// A ring of messages.
			in := []int32{-1}
			rq := s.IRecv(collective.Buf(in), (s.Rank()+2)%3, 7)
			if err := s.Send(ctx, collective.Buf([]int32{int32(r)}), (s.Rank()+1)%3, 7); err != nil {
				t.Errorf("rank %d: send: %v", r, err)
			}
			if err := rq.Wait(ctx); err != nil || in[0] != map[int]int32{0: 3, 2: 0, 3: 2}[r] {
				t.Errorf("rank %d: recv %v, %v", r, in, err)
			}
			sub, err := s.Split(ctx, s.Rank()%2, 0)
			if err != nil {
				t.Errorf("rank %d: split: %v", r, err)
				return
			}
			defer sub.Close()
			if and, failed, err := s.Agree(ctx, 1); err != nil || and != 1 || len(failed) != 0 {
				t.Errorf("rank %d: Agree on the shrunk world = %v, %v, %v", r, and, failed, err)
			}
		}()
	}
	wg.Wait()
}

// TestShrinkClosed: a closed communicator cannot agree.
func TestShrinkClosed(t *testing.T) {
	comms, _ := collective.NewLocal(1)
	comms[0].Close()
	if _, err := comms[0].Shrink(context.Background()); !errors.Is(err, collective.ErrClosed) {
		t.Fatalf("Shrink on a closed communicator: %v", err)
	}
}

// A solver loop that survives the loss of a rank: it checkpoints every
// few steps, and when a step fails it shrinks the communicator, goes back
// to the checkpoint and goes on with the ranks that are left.
func ExampleComm_Shrink() {
	comms, _ := collective.NewLocal(4)
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var lines []string
	for _, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			cur := c
			x, saved := 0.0, 0.0 // the solution and its checkpoint
			for step := 0; step < 6; step++ {
				if step%2 == 0 {
					saved = x
				}
				if step == 3 && c.Rank() == 2 {
					c.Abort() // rank 2 dies
					return
				}
				v := []float64{1}
				if err := cur.AllReduce(ctx, collective.Buf(v), collective.Buf(v), collective.Sum); err != nil {
					s, err := cur.Shrink(ctx)
					if err != nil {
						panic(err)
					}
					defer s.Close()
					cur, x = s, saved
					step -= step%2 + 1 // redo from the checkpoint
					continue
				}
				x += v[0]
			}
			mu.Lock()
			lines = append(lines, fmt.Sprintf("rank %d: %d ranks left, x = %v", c.Rank(), cur.Size(), x))
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// rank 0: 3 ranks left, x = 20
	// rank 1: 3 ranks left, x = 20
	// rank 3: 3 ranks left, x = 20
}
