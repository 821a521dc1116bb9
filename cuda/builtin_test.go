package cuda

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/weft-hpc/weft/internal/dtype"
)

// TestLaunchersAtOffsets runs checkBuiltinAt over the host-memory fake:
// Convert and Sum pass each array's start and n through for every count
// and offset (the fake runs the CPU references, so this checks the Go
// side; gpu_test.go runs the same on a GPU, emulate_test.go the kernels'
// own code).
func TestLaunchersAtOffsets(t *testing.T) {
	useFake(t, 1)
	s := mustStream(t, 0)
	for _, n := range offsetCounts {
		for _, off := range offsets {
			checkBuiltinAt(t, s, n, off)
		}
	}
}

// TestLaunchersRefuse: a pointer off its element boundary (the GPU would
// fault and lose the context) and a negative count are errors naming
// them, and nothing runs; a count of 0 does nothing.
func TestLaunchersRefuse(t *testing.T) {
	useFake(t, 1)
	s := mustStream(t, 0)
	m := mustAlloc(t, 0, 64)
	p := m.Ptr()
	for _, c := range []struct {
		err  error
		want string
	}{
		{Convert(s, p, dtype.Float16, p.Add(2), dtype.Float32, 4), "weft_f32_to_f16: x = "},
		{Convert(s, p.Add(1), dtype.Float16, p, dtype.Float32, 4), "weft_f32_to_f16: y = "},
		{Convert(s, p, dtype.Float32, p.Add(1), dtype.BFloat16, 4), "weft_bf16_to_f32: x = "},
		{Sum(s, dtype.Float32, p, p.Add(4), p.Add(6), 2), "weft_sum_f32: b = "},
		{Sum(s, dtype.Float16, p.Add(3), p, p, 2), "weft_sum_f16: y = "},
		{Sum(s, dtype.BFloat16, p, p.Add(1), p, 2), "weft_sum_bf16: a = "},
		{Sum(s, dtype.Float32, p, p, p, -1), "weft_sum_f32 argument 3"},
		{Convert(s, p, dtype.Float16, p, dtype.Float32, -5), "weft_f32_to_f16 argument 2"},
	} {
		if !errors.Is(c.err, ErrInvalid) || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("error %v, want ErrInvalid naming %q", c.err, c.want)
		}
	}
	if err := Sum(s, dtype.Float32, p, p, p, 0); err != nil {
		t.Errorf("n = 0: %v", err)
	}
	if err := s.Synchronize(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestElementwiseThreads(t *testing.T) {
	k := elementwise{"k", 8}
	for _, c := range [][2]int{{0, 0}, {-3, -3}, {1, 1}, {8, 1}, {9, 2}, {16, 2}, {1 << 26, 1 << 23}} {
		if got := k.threads(c[0]); got != c[1] {
			t.Errorf("threads(%d) = %d, want %d", c[0], got, c[1])
		}
	}
}
