package nn

import "testing"

// BenchmarkSGDApply compares a plain momentum step over the MLP's first
// layer (200,960 parameters) with the same pass carrying SAPipe's delay
// compensation and weight prediction.
func BenchmarkSGDApply(b *testing.B) {
	const n = 200960
	vec := func() []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(i%97) / 97
		}
		return s
	}
	w, g, stale, live, est := vec(), vec(), vec(), vec(), vec()
	for _, tc := range []struct {
		name string
		u    Update
	}{
		{"plain", Update{W: w, G: g}},
		{"dc", Update{W: w, G: g, Stale: stale, Lambda: 0.04}},
		{"dc-from-state+wp", Update{W: w, G: g, Lambda: 0.04, Live: live, Estimate: est}},
		{"wp", Update{W: w, G: g, Live: live, Estimate: est}},
		{"dc+wp", Update{W: w, G: g, Stale: stale, Lambda: 0.04, Live: live, Estimate: est}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			o := &SGD{LR: 1e-6, Momentum: 0.9}
			o.Init(n)
			b.SetBytes(n * 4)
			for i := 0; i < b.N; i++ {
				tc.u.T = i + 1
				o.Apply(&tc.u, 0, n)
			}
		})
	}
}
