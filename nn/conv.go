package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/weft-hpc/weft/csrc"
	cnn "github.com/weft-hpc/weft/csrc/nn"
)

// native says whether the loops around the sgemms (im2col, col2im, max
// pooling, ReLU) run csrc/nn's C kernels, which give the Go loops' bits; tests
// turn it off to compare the two.
var native = csrc.Available()

// Conv2D is a 2-D convolution over NCHW input (Shape [B, InC, H, W]) with
// square kernels, computed per sample as im2col followed by one sgemm:
// y_n = W col(x_n) + b, W stored OutC x (InC*K*K) then b. Output is
// [B, OutC, OH, OW] with OH = (H + 2*Pad - K)/Stride + 1.
//
// The bias rides in the sgemms: the patch matrix has a last row of ones
// and the weights a last column b ([W | b], packed at each Forward), so
// the forward sgemm adds b and the weight-gradient sgemm's last row is
// db, with no pass of their own. The weight gradient is summed transposed,
// col dy^T, which OpenBLAS runs faster than dy col^T for the long thin
// patch matrices here (1.3-1.7x on CNN's second layer).
//
// Only one sample's patch matrix exists at a time, and Backward builds it
// again from a copy of the input: the whole batch's would be K*K times the
// input (20 MB for CNN's second layer at batch 128), written to and read
// back from beyond the cache, while one sample's stays in L2 between its
// im2col and its sgemm.
type Conv2D struct {
	InC, OutC, K, Stride, Pad int

	w, b, dw, db span
	x            Tensor // a copy of the last input
	inShape      []int
	oh, ow       int
	col          Tensor // one sample's im2col, then a row of ones: (InC*K*K+1) x (OH*OW)
	dcol         Tensor // one sample's column gradient
	wb           Tensor // [W | b]: OutC x (InC*K*K+1)
	dwb          Tensor // [dW | db] transposed: (InC*K*K+1) x OutC
	y, dx        Tensor
}

var (
	_ Layer       = (*Conv2D)(nil)
	_ deviceLayer = (*Conv2D)(nil)
)

// NewConv2D returns a convolution from inC to outC channels with a k x k
// kernel.
func NewConv2D(inC, outC, k, stride, pad int) *Conv2D {
	if stride < 1 || k < 1 || pad < 0 {
		panic("nn: Conv2D needs k >= 1, stride >= 1, pad >= 0")
	}
	return &Conv2D{InC: inC, OutC: outC, K: k, Stride: stride, Pad: pad}
}

func (c *Conv2D) kk() int { return c.InC * c.K * c.K }

func (c *Conv2D) NumParams() int { return c.OutC*c.kk() + c.OutC }

func (c *Conv2D) Bind(w, g []float32) { c.bindSpans(hostSpan(w), hostSpan(g)) }

func (c *Conv2D) bindSpans(w, g span) {
	n := c.OutC * c.kk()
	c.w, c.b, c.dw, c.db = w.sub(0, n), w.sub(n, w.n), g.sub(0, n), g.sub(n, g.n)
}

// Init draws from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = InC*K*K,
// PyTorch's default for nn.Conv2d.
func (c *Conv2D) Init(w []float32, rng *rand.Rand) {
	uniform(w, float32(1/math.Sqrt(float64(c.kk()))), rng)
}

func (c *Conv2D) Forward(x *Tensor, train bool) *Tensor {
	if len(x.Shape) != 4 || x.Shape[1] != c.InC {
		panic(fmt.Sprintf("nn: Conv2D(%d->%d) wants [B, %d, H, W], got %v", c.InC, c.OutC, c.InC, x.Shape))
	}
	dev := x.Device()
	sameSide("Conv2D", dev, c.w, c.dw)
	be := backendOf(dev)
	bs, h, w := x.Shape[0], x.Shape[2], x.Shape[3]
	c.inShape = append(c.inShape[:0], x.Shape...)
	c.oh = (h+2*c.Pad-c.K)/c.Stride + 1
	c.ow = (w+2*c.Pad-c.K)/c.Stride + 1
	hw, kk := c.oh*c.ow, c.kk()
	col := c.col.resizeOn(dev, (kk+1)*hw).span()
	be.fill(col.sub(kk*hw, col.n), 1)
	wb := c.wb.resizeOn(dev, c.OutC*(kk+1)).span()
	be.packBias(wb, c.w, c.b, c.OutC, kk)
	be.copy(c.x.resizeOn(dev, bs*c.InC*h*w).span(), x.span().sub(0, bs*c.InC*h*w))
	y := c.y.resizeOn(dev, bs, c.OutC, c.oh, c.ow)
	for n := 0; n < bs; n++ {
		c.sampleCol(be, n, h, w)
		yn := y.span().sub(n*c.OutC*hw, (n+1)*c.OutC*hw)
		be.gemm(false, false, c.OutC, hw, kk+1, 1, wb, kk+1, col, hw, 0, yn, hw)
	}
	return y
}

func (c *Conv2D) geom(h, w int) cnn.ConvGeom {
	return cnn.ConvGeom{C: c.InC, H: h, W: w, K: c.K, Stride: c.Stride, Pad: c.Pad, OH: c.oh, OW: c.ow}
}

// sampleCol writes sample n's patch matrix into c.col.
func (c *Conv2D) sampleCol(be backend, n, h, w int) {
	in := c.InC * h * w
	be.im2col(c.col.span(), c.x.span().sub(n*in, (n+1)*in), c.geom(h, w))
}

func (c *Conv2D) Backward(dy *Tensor, needDx bool) *Tensor {
	dev := dy.Device()
	sameSide("Conv2D", dev, c.w, c.dw, c.x.span())
	be := backendOf(dev)
	bs, h, w := c.inShape[0], c.inShape[2], c.inShape[3]
	hw, kk := c.oh*c.ow, c.kk()
	dwb := c.dwb.resizeOn(dev, c.OutC*(kk+1)).span()
	if bs == 0 {
		be.fill(dwb, 0)
	}
	var dx *Tensor
	var dcol span
	if needDx {
		dx = c.dx.resizeOn(dev, c.inShape...)
		dcol = c.dcol.resizeOn(dev, kk*hw).span()
	}
	in := c.InC * h * w
	g := c.geom(h, w)
	col := c.col.span()
	for n := 0; n < bs; n++ {
		dyn := dy.span().sub(n*c.OutC*hw, (n+1)*c.OutC*hw)
		c.sampleCol(be, n, h, w)
		beta := float32(1)
		if n == 0 {
			beta = 0
		}
		be.gemm(false, true, kk+1, c.OutC, hw, 1, col, hw, dyn, hw, beta, dwb, c.OutC)
		if needDx {
			be.gemm(true, false, kk, hw, c.OutC, 1, c.w, kk, dyn, hw, 0, dcol, hw)
			be.col2im(dx.span().sub(n*in, (n+1)*in), dcol, g)
		}
	}
	be.unpackBias(c.dw, c.db, dwb, c.OutC, kk)
	return dx
}

// im2colRef writes the K*K*C x OH*OW patch matrix of one sample: the
// pure-Go loop, and weft_im2col's reference.
func im2colRef(col, x []float32, g convGeom) {
	c := g // the loops read as they did on Conv2D
	h, w := g.H, g.W
	hw := c.OH * c.OW
	r := 0
	for ch := 0; ch < c.C; ch++ {
		img := x[ch*h*w : (ch+1)*h*w]
		for ki := 0; ki < c.K; ki++ {
			for kj := 0; kj < c.K; kj++ {
				dst := col[r*hw : (r+1)*hw]
				r++
				for oh := 0; oh < c.OH; oh++ {
					ih := oh*c.Stride - c.Pad + ki
					row := dst[oh*c.OW : (oh+1)*c.OW]
					if ih < 0 || ih >= h {
						clear(row)
						continue
					}
					src := img[ih*w : (ih+1)*w]
					if c.Stride == 1 {
						// A contiguous run of the input row, zeros either side.
						lo, hi := validRange(g, kj)
						clear(row[:lo])
						copy(row[lo:hi], src[lo-c.Pad+kj:])
						clear(row[hi:])
						continue
					}
					for ow := range row {
						iw := ow*c.Stride - c.Pad + kj
						if iw >= 0 && iw < w {
							row[ow] = src[iw]
						} else {
							row[ow] = 0
						}
					}
				}
			}
		}
	}
}

// validRange is, for stride 1 and kernel column kj, the output columns
// [lo, hi) whose input column ow-Pad+kj lies inside [0, W).
func validRange(g convGeom, kj int) (lo, hi int) {
	lo = min(max(0, g.Pad-kj), g.OW)
	hi = max(min(g.OW, g.W+g.Pad-kj), lo)
	return lo, hi
}

// col2imRef sets one sample's input gradient dx to its column gradient
// col folded back: the pure-Go loop (after clearing dx), and
// weft_col2im's reference.
func col2imRef(dx, col []float32, g convGeom) {
	clear(dx)
	c := g
	h, w := g.H, g.W
	hw := c.OH * c.OW
	r := 0
	for ch := 0; ch < c.C; ch++ {
		img := dx[ch*h*w : (ch+1)*h*w]
		for ki := 0; ki < c.K; ki++ {
			for kj := 0; kj < c.K; kj++ {
				src := col[r*hw : (r+1)*hw]
				r++
				for oh := 0; oh < c.OH; oh++ {
					ih := oh*c.Stride - c.Pad + ki
					if ih < 0 || ih >= h {
						continue
					}
					row := src[oh*c.OW : (oh+1)*c.OW]
					dst := img[ih*w : (ih+1)*w]
					if c.Stride == 1 {
						lo, hi := validRange(g, kj)
						d := dst[lo-c.Pad+kj : hi-c.Pad+kj]
						for i, v := range row[lo:hi] {
							d[i] += v
						}
						continue
					}
					for ow, v := range row {
						iw := ow*c.Stride - c.Pad + kj
						if iw >= 0 && iw < w {
							dst[iw] += v
						}
					}
				}
			}
		}
	}
}

// MaxPool is 2-D max pooling over NCHW input with a K x K window and the
// given stride (no padding): output [B, C, (H-K)/Stride+1, (W-K)/Stride+1].
// The gradient goes to the first maximum of each window.
type MaxPool struct {
	K, Stride int

	inShape []int
	arg     []int32 // on the host: the index in x of each output's maximum
	argT    Tensor  // on a device: the same int32 indices, in a tensor's storage
	y, dx   Tensor
}

var (
	_ Layer       = (*MaxPool)(nil)
	_ deviceLayer = (*MaxPool)(nil)
)

// NewMaxPool returns a max pooling layer.
func NewMaxPool(k, stride int) *MaxPool {
	if k < 1 || stride < 1 {
		panic("nn: MaxPool needs k >= 1 and stride >= 1")
	}
	return &MaxPool{K: k, Stride: stride}
}

func (*MaxPool) NumParams() int                 { return 0 }
func (*MaxPool) Bind(w, g []float32)            {}
func (*MaxPool) Init(w []float32, _ *rand.Rand) {}
func (*MaxPool) bindSpans(w, g span)            {}

func (p *MaxPool) Forward(x *Tensor, train bool) *Tensor {
	if len(x.Shape) != 4 {
		panic(fmt.Sprintf("nn: MaxPool wants [B, C, H, W], got %v", x.Shape))
	}
	bs, ch, h, w := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	p.inShape = append(p.inShape[:0], x.Shape...)
	oh, ow := (h-p.K)/p.Stride+1, (w-p.K)/p.Stride+1
	if dev := x.Device(); dev != nil {
		y := p.y.resizeOn(dev, bs, ch, oh, ow)
		dev.maxPool(y.span(), p.argT.resizeOn(dev, y.Len()).span(), x.span(), p.geom())
		return y
	}
	y := p.y.resizeOn(nil, bs, ch, oh, ow)
	if n := len(y.Data); cap(p.arg) < n {
		p.arg = make([]int32, n)
	} else {
		p.arg = p.arg[:n]
	}
	if native && cnn.MaxPool(x.Data, p.geom(), y.Data, p.arg) == nil {
		return y
	}
	if p.K == 2 && p.Stride == 2 {
		p.forward22(x.Data, bs*ch, h, w, oh, ow, y.Data)
		return y
	}
	maxPoolRef(y.Data, p.arg, x.Data, p.geom())
	return y
}

// maxPoolRef is max pooling's general loop: y and the index in x of each
// window's first maximum in row-major window order. It is weft_maxpool's
// reference.
func maxPoolRef(y []float32, arg []int32, x []float32, g cnn.PoolGeom) {
	h, w, oh, ow := g.H, g.W, g.OH, g.OW
	o := 0
	for plane := 0; plane < g.Planes; plane++ {
		img := x[plane*h*w : (plane+1)*h*w]
		base := int32(plane * h * w)
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				best, bi := float32(math.Inf(-1)), -1
				for ki := 0; ki < g.K; ki++ {
					r := (i*g.Stride + ki) * w
					for kj := 0; kj < g.K; kj++ {
						idx := r + j*g.Stride + kj
						if v := img[idx]; v > best || bi < 0 {
							best, bi = v, idx
						}
					}
				}
				y[o] = best
				arg[o] = base + int32(bi)
				o++
			}
		}
	}
}

// maxPoolBackwardRef sets dx to the sums of dy at the indices, in output
// order from +0: weft_maxpool_backward's reference.
func maxPoolBackwardRef(dx []float32, arg []int32, dy []float32) {
	clear(dx)
	for o, v := range dy {
		dx[arg[o]] += v
	}
}

// forward22 is Forward for the common 2x2 window with stride 2, with the
// same results (the first maximum in row-major window order wins).
func (p *MaxPool) forward22(x []float32, planes, h, w, oh, ow int, y []float32) {
	o := 0
	for plane := 0; plane < planes; plane++ {
		base := plane * h * w
		for i := 0; i < oh; i++ {
			r0 := base + 2*i*w
			top, bot := x[r0:r0+w], x[r0+w:r0+2*w]
			for j := 0; j < ow; j++ {
				c := 2 * j
				best, bi := top[c], r0+c
				if v := top[c+1]; v > best {
					best, bi = v, r0+c+1
				}
				if v := bot[c]; v > best {
					best, bi = v, r0+w+c
				}
				if v := bot[c+1]; v > best {
					best, bi = v, r0+w+c+1
				}
				y[o] = best
				p.arg[o] = int32(bi)
				o++
			}
		}
	}
}

// geom is the last Forward's geometry.
func (p *MaxPool) geom() cnn.PoolGeom {
	s := p.inShape
	if len(s) != 4 {
		return cnn.PoolGeom{} // no Forward yet: not a geometry, csrc refuses it
	}
	return cnn.PoolGeom{Planes: s[0] * s[1], H: s[2], W: s[3], K: p.K, Stride: p.Stride,
		OH: (s[2]-p.K)/p.Stride + 1, OW: (s[3]-p.K)/p.Stride + 1}
}

func (p *MaxPool) Backward(dy *Tensor, needDx bool) *Tensor {
	if !needDx {
		return nil
	}
	dx := p.dx.resizeOn(dy.Device(), p.inShape...)
	if dev := dy.Device(); dev != nil {
		sameSide("MaxPool", dev, p.argT.span())
		dev.maxPoolBackward(dx.span(), p.argT.span(), dy.span(), p.geom())
		return dx
	}
	if native && cnn.MaxPoolBackward(dy.Data, p.arg, p.geom(), dx.Data) == nil {
		return dx
	}
	maxPoolBackwardRef(dx.Data, p.arg, dy.Data)
	return dx
}
