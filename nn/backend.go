package nn

import (
	"fmt"
	"math"

	cnn "github.com/weft-hpc/weft/csrc/nn"
)

// backend is where a layer's arithmetic runs: the CPU (cpu: OpenBLAS and
// csrc/nn's kernels, the code nn always had) or a Device (cuBLAS and nn's
// CUDA kernels, whose CPU references are cpu's loops). Layers hold their
// parameters as spans and call these operations, so that each layer's
// logic is written once for both. Every operation's spans lie on the
// backend's side; a device's operations queue on its stream.
type backend interface {
	// gemm is Gemm on spans: C = alpha*op(A)*op(B) + beta*C, row-major.
	gemm(transA, transB bool, m, n, k int, alpha float32, a span, lda int, b span, ldb int, beta float32, c span, ldc int)
	// fillRows sets each of the rows of y (rows x b.n) to b.
	fillRows(y span, rows int, b span)
	// sumRows sets db[j] (db.n columns) to the sum over the rows of
	// dy[i, j], from +0, in row order.
	sumRows(db, dy span, rows int)
	// relu is y = max(x, 0) (NaN stays NaN, -0 becomes +0).
	relu(y, x span)
	// reluBackward is dx = dy where y > 0, else 0.
	reluBackward(dx, y, dy span)
	// dropout draws the mask of one training forward (dropoutWord) and
	// sets y = x*mask.
	dropout(y, mask, x span, key, cut uint64, scale float32)
	// mul is y = a*b, elementwise.
	mul(y, a, b span)
	// softmaxXent fills grad (rows x k) with (softmax(logits) -
	// onehot(labels)) * inv and terms with each row's loss term and
	// whether its argmax is its label (softmaxXentRef), and returns the
	// device's failure, if any, once terms are on the host.
	softmaxXent(grad, logits span, labels []int32, k int, inv float32, terms []float64) error

	// The convolution's operations (Conv2D).

	// fill sets every element of y to v.
	fill(y span, v float32)
	// copy is dst = src (src.n elements).
	copy(dst, src span)
	// im2col writes one sample's patch matrix into the first C*K*K rows
	// of col.
	im2col(col, x span, g convGeom)
	// col2im sets dx to one sample's column gradient folded back.
	col2im(dx, col span, g convGeom)
	// packBias writes [W | b], outC rows of kk+1.
	packBias(wb, w, b span, outC, kk int)
	// unpackBias writes dW (outC x kk) and db from [dW | db] transposed
	// ((kk+1) x outC).
	unpackBias(dw, db, dwb span, outC, kk int)
}

// convGeom is one sample's convolution geometry.
type convGeom = cnn.ConvGeom

// backendOf is the backend of tensors on d (nil: the CPU).
func backendOf(d *Device) backend {
	if d == nil {
		return cpu{}
	}
	return d
}

// cpu is the host backend.
type cpu struct{}

var _ backend = cpu{}

// hostGemm is the CPU backend's GEMM: Gemm, or in tests a GEMM that sums
// in the host-memory fake's order, so that a model trained over the fake
// can be compared with the CPU bit for bit.
var hostGemm = Gemm

func (cpu) gemm(transA, transB bool, m, n, k int, alpha float32, a span, lda int, b span, ldb int, beta float32, c span, ldc int) {
	hostGemm(transA, transB, m, n, k, alpha, a.h, lda, b.h, ldb, beta, c.h, ldc)
}

func (cpu) fillRows(y span, rows int, b span) { fillRowsRef(y.h, b.h, rows) }

func (cpu) sumRows(db, dy span, rows int) { sumRowsRef(db.h, dy.h, rows) }

func (cpu) relu(y, x span) {
	yd := y.h[:len(x.h)]
	if native && cnn.ReLU(x.h, yd) == nil {
		return
	}
	reluRef(yd, x.h)
}

func (cpu) reluBackward(dx, y, dy span) {
	yd, dxd := y.h[:len(dy.h)], dx.h[:len(dy.h)]
	if native && cnn.ReLUBackward(yd, dy.h, dxd) == nil {
		return
	}
	reluBackwardRef(dxd, yd, dy.h)
}

func (cpu) dropout(y, mask, x span, key, cut uint64, scale float32) {
	dropoutRef(y.h, mask.h, x.h, key, cut, scale)
}

func (cpu) mul(y, a, b span) { mulRef(y.h, a.h, b.h) }

func (cpu) softmaxXent(grad, logits span, labels []int32, k int, inv float32, terms []float64) error {
	softmaxXentRef(grad.h, logits.h, labels, k, inv, terms)
	return nil
}

func (cpu) fill(y span, v float32) { fillRef(y.h, v) }

func (cpu) copy(dst, src span) { copy(dst.h, src.h) }

func (cpu) im2col(col, x span, g convGeom) {
	if native && cnn.Im2Col(x.h, 1, g, col.h) == nil {
		return
	}
	im2colRef(col.h, x.h, g)
}

func (cpu) col2im(dx, col span, g convGeom) {
	if native {
		clear(dx.h)
		if cnn.Col2Im(col.h, g, dx.h) == nil {
			return
		}
	}
	col2imRef(dx.h, col.h, g)
}

func (cpu) packBias(wb, w, b span, outC, kk int) { packBiasRef(wb.h, w.h, b.h, outC, kk) }

func (cpu) unpackBias(dw, db, dwb span, outC, kk int) { unpackBiasRef(dw.h, db.h, dwb.h, outC, kk) }

// fillRef is weft_fill.
func fillRef(y []float32, v float32) {
	for i := range y {
		y[i] = v
	}
}

// packBiasRef is weft_pack_bias.
func packBiasRef(wb, w, b []float32, outC, kk int) {
	for o := 0; o < outC; o++ {
		copy(wb[o*(kk+1):], w[o*kk:(o+1)*kk])
		wb[o*(kk+1)+kk] = b[o]
	}
}

// unpackBiasRef is weft_unpack_bias.
func unpackBiasRef(dw, db, dwb []float32, outC, kk int) {
	for r := 0; r < kk; r++ {
		for o, v := range dwb[r*outC : (r+1)*outC] {
			dw[o*kk+r] = v
		}
	}
	copy(db, dwb[kk*outC:(kk+1)*outC])
}

// The loops of the CPU backend, which are also the CPU references of nn's
// CUDA kernels (kernels.go): each kernel computes what its loop does,
// every operation rounded to float32 in the same order (the kernels are
// compiled with --fmad=false).

// fillRowsRef is weft_fill_rows.
func fillRowsRef(y, b []float32, rows int) {
	for i := 0; i < rows; i++ {
		copy(y[i*len(b):(i+1)*len(b)], b)
	}
}

// sumRowsRef is weft_sum_rows.
func sumRowsRef(d, dy []float32, rows int) {
	clear(d)
	for i := 0; i < rows; i++ {
		row := dy[i*len(d) : (i+1)*len(d)]
		d := d[:len(row)]
		for j, v := range row {
			d[j] += v
		}
	}
}

// reluRef is weft_relu.
func reluRef(y, x []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] = max(v, 0)
	}
}

// reluBackwardRef is weft_relu_backward.
func reluBackwardRef(dx, y, dy []float32) {
	y, dx = y[:len(dy)], dx[:len(dy)]
	for i, g := range dy {
		if y[i] > 0 {
			dx[i] = g
		} else {
			dx[i] = 0
		}
	}
}

// mulRef is weft_mul.
func mulRef(y, a, b []float32) {
	y, b = y[:len(a)], b[:len(a)]
	for i, v := range a {
		y[i] = v * b[i]
	}
}

// dropoutRef is weft_dropout: element i is kept when its 32-bit draw u
// satisfies u >= cut, and the mask is scale or +0. The comparison has no
// branch (a coin flip at P = 0.5 mispredicts half the time), two draws
// per 64-bit word.
func dropoutRef(y, mask, x []float32, key, cut uint64, scale float32) {
	n := len(x)
	y, mask = y[:n], mask[:n]
	sbits := math.Float32bits(scale)
	var word uint64
	for i, v := range x {
		if i&1 == 0 {
			word = dropoutWord(key, uint64(i)>>1)
		} else {
			word >>= 32
		}
		drop := (uint64(uint32(word)) - cut) >> 63 // 1 when u < cut
		m := math.Float32frombits(sbits &^ -uint32(drop))
		mask[i] = m
		y[i] = v * m
	}
}

// softmaxXentRef is weft_softmax_xent: for each row i of logits z (k
// values), with mx its first maximum at arg, e_j = float32(exp(z_j - mx))
// (the exponential in float64), sum the float32 sum of the e_j in order:
// grad_i,j = e_j * (inv/sum), minus inv at the label y, terms[2i] =
// log(sum) - (z_y - mx) in float64 and terms[2i+1] = 1 when arg == y,
// else 0. The labels must lie in [0, k).
func softmaxXentRef(grad, logits []float32, labels []int32, k int, inv float32, terms []float64) {
	for i, lab := range labels {
		z := logits[i*k : (i+1)*k]
		gi := grad[i*k : (i+1)*k]
		mx, arg := z[0], 0
		for j, v := range z {
			if v > mx {
				mx, arg = v, j
			}
		}
		y := int(lab)
		var sum float32
		for j, v := range z {
			e := float32(math.Exp(float64(v - mx)))
			gi[j] = e
			sum += e
		}
		terms[2*i] = math.Log(float64(sum)) - float64(z[y]-mx)
		terms[2*i+1] = 0
		if arg == y {
			terms[2*i+1] = 1
		}
		s := inv / sum
		for j := range gi {
			gi[j] *= s
		}
		gi[y] -= inv
	}
}

// The dropout generator, the same on the CPU and the device: SplitMix64
// (Steele, Lea and Flood, OOPSLA 2014) used as a counter-based generator.
// A layer's training forward number call draws from key =
// dropoutKey(seed, call); element i takes the low (i even) or high (i odd)
// 32 bits of word i/2, the SplitMix64 output mix(key + (i/2+1)*golden),
// and is dropped when they are below P*2^32. Any element is drawn without
// the ones before it (the device's threads), and the CPU gives the same
// masks.
const (
	golden  = 0x9e3779b97f4a7c15
	keyMult = 0xd1b54a32d192ed03
)

// mix is SplitMix64's output function, a bijection of 64-bit words.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// dropoutKey is the key of the call-th training forward (from 0) of a
// Dropout layer seeded with seed.
func dropoutKey(seed, call uint64) uint64 { return mix(mix(seed) ^ (call+1)*keyMult) }

// dropoutWord is the 64-bit word of elements 2j and 2j+1.
func dropoutWord(key, j uint64) uint64 { return mix(key + (j+1)*golden) }

// sameSide panics unless every span lives where x does (the host, or x's
// device): a layer's parameters and its input must be on one side.
func sameSide(what string, d *Device, ss ...span) {
	for _, s := range ss {
		if s.d != d {
			where := func(d *Device) string {
				if d == nil {
					return "the host"
				}
				return d.String()
			}
			panic(fmt.Sprintf("nn: %s got a tensor on %s but its parameters are on %s: move the model with Sequential.To and feed it tensors there", what, where(d), where(s.d)))
		}
	}
}
