package reduce

// Typed kernels. Each computes d[i] = a[i] op b[i] for i < len(d); the
// caller guarantees len(a) == len(b) == len(d) and that d is either a or b
// or overlaps neither. Every kernel handles one element per index in
// order, so exact aliasing is safe.
//
// The loops are unrolled by 8 over array pointers: converting a[i:] to
// *[8]T costs one length check for the block instead of one per element,
// and the independent lines give the out-of-order core room. The generic
// kernels are instantiated per GC shape, which for these basic types means
// one fully specialised copy per type, with + and the builtin min and max
// compiled inline (for floats, min and max are branch-free MINSS/MINSD
// sequences with exactly the NaN and signed-zero rules of the package doc).

type number interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

func sumOf[T number](d, a, b []T) {
	n := len(d)
	a, b = a[:n], b[:n]
	i := 0
	for ; i <= n-8; i += 8 {
		z, x, y := (*[8]T)(d[i:]), (*[8]T)(a[i:]), (*[8]T)(b[i:])
		z[0] = x[0] + y[0]
		z[1] = x[1] + y[1]
		z[2] = x[2] + y[2]
		z[3] = x[3] + y[3]
		z[4] = x[4] + y[4]
		z[5] = x[5] + y[5]
		z[6] = x[6] + y[6]
		z[7] = x[7] + y[7]
	}
	for ; i < n; i++ {
		d[i] = a[i] + b[i]
	}
}

func prodOf[T number](d, a, b []T) {
	n := len(d)
	a, b = a[:n], b[:n]
	i := 0
	for ; i <= n-8; i += 8 {
		z, x, y := (*[8]T)(d[i:]), (*[8]T)(a[i:]), (*[8]T)(b[i:])
		z[0] = x[0] * y[0]
		z[1] = x[1] * y[1]
		z[2] = x[2] * y[2]
		z[3] = x[3] * y[3]
		z[4] = x[4] * y[4]
		z[5] = x[5] * y[5]
		z[6] = x[6] * y[6]
		z[7] = x[7] * y[7]
	}
	for ; i < n; i++ {
		d[i] = a[i] * b[i]
	}
}

func minOf[T number](d, a, b []T) {
	n := len(d)
	a, b = a[:n], b[:n]
	i := 0
	for ; i <= n-8; i += 8 {
		z, x, y := (*[8]T)(d[i:]), (*[8]T)(a[i:]), (*[8]T)(b[i:])
		z[0] = min(x[0], y[0])
		z[1] = min(x[1], y[1])
		z[2] = min(x[2], y[2])
		z[3] = min(x[3], y[3])
		z[4] = min(x[4], y[4])
		z[5] = min(x[5], y[5])
		z[6] = min(x[6], y[6])
		z[7] = min(x[7], y[7])
	}
	for ; i < n; i++ {
		d[i] = min(a[i], b[i])
	}
}

func maxOf[T number](d, a, b []T) {
	n := len(d)
	a, b = a[:n], b[:n]
	i := 0
	for ; i <= n-8; i += 8 {
		z, x, y := (*[8]T)(d[i:]), (*[8]T)(a[i:]), (*[8]T)(b[i:])
		z[0] = max(x[0], y[0])
		z[1] = max(x[1], y[1])
		z[2] = max(x[2], y[2])
		z[3] = max(x[3], y[3])
		z[4] = max(x[4], y[4])
		z[5] = max(x[5], y[5])
		z[6] = max(x[6], y[6])
		z[7] = max(x[7], y[7])
	}
	for ; i < n; i++ {
		d[i] = max(a[i], b[i])
	}
}

func applyNumber[T number](op Op, d, a, b []T) {
	switch op {
	case Sum, Avg:
		sumOf(d, a, b)
	case Prod:
		prodOf(d, a, b)
	case Min:
		minOf(d, a, b)
	case Max:
		maxOf(d, a, b)
	}
}
