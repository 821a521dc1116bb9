package reduce

import "encoding/binary"

// Byte sums run eight lanes per 64-bit word (SWAR): add the low seven bits
// of each byte, whose carries stay inside the byte, then put each byte's top
// bit back with XOR, which drops the carry out of the byte as wrapping
// requires. Words are loaded with encoding/binary, which compiles to one
// unaligned 8-byte load on amd64 and arm64.
const (
	low7 = 0x7f7f7f7f7f7f7f7f
	high = 0x8080808080808080
)

func addBytes(x, y uint64) uint64 { return (x&low7 + y&low7) ^ (x^y)&high }

func sumUint8(d, a, b []byte) {
	n := len(d)
	a, b = a[:n], b[:n]
	le := binary.LittleEndian
	i := 0
	for ; i <= n-32; i += 32 {
		z, x, y := (*[32]byte)(d[i:]), (*[32]byte)(a[i:]), (*[32]byte)(b[i:])
		le.PutUint64(z[0:], addBytes(le.Uint64(x[0:]), le.Uint64(y[0:])))
		le.PutUint64(z[8:], addBytes(le.Uint64(x[8:]), le.Uint64(y[8:])))
		le.PutUint64(z[16:], addBytes(le.Uint64(x[16:]), le.Uint64(y[16:])))
		le.PutUint64(z[24:], addBytes(le.Uint64(x[24:]), le.Uint64(y[24:])))
	}
	for ; i <= n-8; i += 8 {
		le.PutUint64(d[i:], addBytes(le.Uint64(a[i:]), le.Uint64(b[i:])))
	}
	for ; i < n; i++ {
		d[i] = a[i] + b[i]
	}
}
