package half

// The Slice forms convert min(len(dst), len(src)) elements and return that
// count; dst and src must not overlap. Reslicing both to n up front lets the
// compiler drop the bounds checks. The loops are deliberately not unrolled:
// the conversions are long enough that unrolling only adds register
// pressure (F32ToF16Slice unrolled by 4 measured 1.5x slower).

// F16ToF32Slice widens float16 bits in src into dst, through F16Table.
func F16ToF32Slice(dst []float32, src []uint16) int {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	t := F16Table()
	for i, h := range src {
		dst[i] = t[h]
	}
	return n
}

// F32ToF16Slice rounds float32 values in src to float16 bits in dst.
func F32ToF16Slice(dst []uint16, src []float32) int {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	for i, x := range src {
		dst[i] = F32ToF16(x)
	}
	return n
}

// BF16ToF32Slice widens bfloat16 bits in src into dst.
func BF16ToF32Slice(dst []float32, src []uint16) int {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	for i := range n {
		dst[i] = BF16ToF32(src[i])
	}
	return n
}

// F32ToBF16Slice rounds float32 values in src to bfloat16 bits in dst.
func F32ToBF16Slice(dst []uint16, src []float32) int {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	for i := range n {
		dst[i] = F32ToBF16(src[i])
	}
	return n
}
