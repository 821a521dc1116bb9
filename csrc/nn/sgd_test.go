package nn

import (
	"math"
	"testing"

	"github.com/weft-hpc/weft/csrc"
)

// TestSGDLevelsAgree runs the four loops at every level and compares them
// with the formula evaluated in Go one rounding at a time; nn's
// TestSGDNativeMatchesGo compares them with nn.SGD's own loops.
func TestSGDLevelsAgree(t *testing.T) {
	const n = 203
	vec := func(seed int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32((i*seed)%89-44) / 29
		}
		return s
	}
	eachISA(t, func(t *testing.T) {
		for _, lambda := range []float32{0, 0.04} {
			for _, wp := range []bool{false, true} {
				w, v, g, est := vec(3), vec(5), vec(7), vec(11)
				ww, wv := append([]float32(nil), w...), append([]float32(nil), v...)
				var live, wlive []float32
				if wp {
					live, wlive = make([]float32, n), make([]float32, n)
				} else {
					est = nil
				}
				const lr, mu = 0.05, 0.9
				if err := SGD(w, g, v, live, est, lr, mu, lambda); err != nil {
					t.Fatal(err)
				}
				c := -lambda * lr
				for i := range ww {
					gi := g[i]
					if lambda != 0 {
						gi += c * gi * gi * wv[i]
					}
					wv[i] = mu*wv[i] + gi
					ww[i] -= lr * wv[i]
					if wp {
						wlive[i] = ww[i] - lr*(mu*wv[i]+est[i])
					}
				}
				for i := range ww {
					if math.Float32bits(w[i]) != math.Float32bits(ww[i]) || math.Float32bits(v[i]) != math.Float32bits(wv[i]) ||
						wp && math.Float32bits(live[i]) != math.Float32bits(wlive[i]) {
						t.Fatalf("lambda %g wp %v: element %d differs", lambda, wp, i)
					}
				}
			}
		}
	})
}

func TestSGDBadArguments(t *testing.T) {
	a, b, c := make([]float32, 8), make([]float32, 8), make([]float32, 8)
	for name, err := range map[string]error{
		"lengths":          SGD(a, b[:7], c, nil, nil, 1, 1, 0),
		"live without est": SGD(a, b, c, make([]float32, 8), nil, 1, 1, 0),
		"w is v":           SGD(a, b, a, nil, nil, 1, 1, 0),
		"live overlaps g":  SGD(a, b, c, b[:8], make([]float32, 8), 1, 1, 0),
	} {
		if err == nil || err == csrc.ErrNotBuilt {
			t.Errorf("%s: %v, want an argument error", name, err)
		}
	}
}

// BenchmarkSGD is the pass over the MLP's first layer (200,960
// parameters): plain, and with compensation and prediction.
func BenchmarkSGD(b *testing.B) {
	if !csrc.Available() {
		b.Skip("built without cgo (csrc.Available is false): no C kernel to measure")
	}
	const n = 200960
	w, g, v, live, est := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	b.Run("plain", func(b *testing.B) {
		b.SetBytes(4 * n)
		for i := 0; i < b.N; i++ {
			if err := SGD(w, g, v, nil, nil, 1e-6, 0.9, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("dc+wp", func(b *testing.B) {
		b.SetBytes(4 * n)
		for i := 0; i < b.N; i++ {
			if err := SGD(w, g, v, live, est, 1e-6, 0.9, 0.04); err != nil {
				b.Fatal(err)
			}
		}
	})
}
