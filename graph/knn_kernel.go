package graph

// dotTile computes out[r*ldo+c] = dot(a[r], b[c]) for the rows a[r] =
// a[(ra+r)*dim:][:dim], r in [0, nr), and b[c] = b[(cb+c)*dim:][:dim], c in
// [0, nc).
//
// The bulk goes through a 2x4 register-blocked kernel: two rows of a
// against four rows of b, eight accumulators, so six loads feed eight
// multiply-adds and everything stays in the 16 SSE registers of amd64. (A
// 4x4 block spills to the stack with the Go compiler and runs at about
// half the speed: 2.5 against 4.4 GFMA/s on one Xeon core; 3x3 gives 3.8,
// 2x5 3.3, a plain dot product 2.0.) Edges use the plain dot product.
// Every dot product is summed over k in order with its own accumulator in
// every kernel, so a pair gets bit-identical results whichever kernel or
// tile computes it: results do not depend on the tiling or on GOMAXPROCS.
func dotTile(a []float32, ra, nr int, b []float32, cb, nc, dim int, out []float32, ldo int) {
	row := func(m []float32, i int) []float32 { return m[i*dim : i*dim+dim] }
	r := 0
	for ; r+2 <= nr; r += 2 {
		a0, a1 := row(a, ra+r), row(a, ra+r+1)
		c := 0
		for ; c+4 <= nc; c += 4 {
			dot2x4(a0, a1, row(b, cb+c), row(b, cb+c+1), row(b, cb+c+2), row(b, cb+c+3), out[r*ldo+c:], ldo)
		}
		for ; c < nc; c++ {
			b0 := row(b, cb+c)
			out[r*ldo+c] = dot1(a0, b0)
			out[(r+1)*ldo+c] = dot1(a1, b0)
		}
	}
	for ; r < nr; r++ {
		a0 := row(a, ra+r)
		for c := range nc {
			out[r*ldo+c] = dot1(a0, row(b, cb+c))
		}
	}
}

func dot1(a, b []float32) float32 {
	b = b[:len(a)]
	var s float32
	for k, x := range a {
		s += x * b[k]
	}
	return s
}

func dot2x4(a0, a1, b0, b1, b2, b3 []float32, out []float32, ldo int) {
	n := len(a0)
	a1 = a1[:n]
	b0, b1, b2, b3 = b0[:n], b1[:n], b2[:n], b3[:n]
	var s00, s01, s02, s03, s10, s11, s12, s13 float32
	for k := 0; k < n; k++ {
		x0, x1 := a0[k], a1[k]
		y0, y1, y2, y3 := b0[k], b1[k], b2[k], b3[k]
		s00 += x0 * y0
		s01 += x0 * y1
		s02 += x0 * y2
		s03 += x0 * y3
		s10 += x1 * y0
		s11 += x1 * y1
		s12 += x1 * y2
		s13 += x1 * y3
	}
	o := out[:ldo+4]
	o[0], o[1], o[2], o[3] = s00, s01, s02, s03
	o[ldo], o[ldo+1], o[ldo+2], o[ldo+3] = s10, s11, s12, s13
}
