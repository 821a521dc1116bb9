package collective_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/weft-hpc/weft/collective"
)

// TestCartErrors: bad arguments to CartCreate, Sub and the neighbour
// collectives fail with ErrInvalid naming the argument and its value, on
// the rank that made them, and the grid goes on working.
func TestCartErrors(t *testing.T) {
	runLocal(t, 4, func(c *collective.Comm) error {
		ctx := context.Background()
		g, err := c.CartCreate(ctx, []int{2, 2}, nil)
		if err != nil {
			return err
		}
		defer g.Close()
		x := collective.Buf(make([]float64, 4))
		for _, bad := range []struct {
			err  error
			want string
		}{
			{second(c.CartCreate(ctx, nil, nil)), "dims is empty"},
			{second(c.CartCreate(ctx, []int{2, 0}, nil)), "dims[1] = 0"},
			{second(c.CartCreate(ctx, []int{3, 2}, nil)), "dims [3 2] make more places than the 4 ranks"},
			{second(c.CartCreate(ctx, []int{2, 2}, []bool{true})), "periodic has 1 flags for 2 dimensions"},
			{second(g.Sub(ctx, []bool{true})), "remain has 1 flags for 2 dimensions"},
			{g.NeighborAllgather(ctx, collective.Buf(make([]float64, 2)), x), "recv holds 4 elements, want 4 neighbours x 2"},
			{g.NeighborAllgather(ctx, collective.Buf(make([]float32, 1)), x), "send is float32, recv is float64"},
			{g.NeighborAlltoall(ctx, collective.Buf(make([]float64, 6)), collective.Buf(make([]float64, 6))), "send holds 6 elements, not a multiple of 4 neighbours"},
			{g.NeighborAlltoall(ctx, x, collective.Buf(make([]float64, 8))), "send holds 4 elements and recv 8"},
		} {
			if !errors.Is(bad.err, collective.ErrInvalid) || !strings.Contains(fmt.Sprint(bad.err), bad.want) {
				return fmt.Errorf("got %v, want ErrInvalid saying %q", bad.err, bad.want)
			}
		}
		return g.NeighborAllgather(ctx, collective.Buf([]float64{1}), x)
	})
}
