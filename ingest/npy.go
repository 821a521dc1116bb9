package ingest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"strconv"
	"strings"
	"unsafe"
)

// Array is one NumPy array. Data holds the elements in C order as one of
// []int32, []int64, []float32, []float64, []uint8 or []bool:
//
//	'<i4' '|i1' '<i2' '<u2'  []int32
//	'<i8' '<u4' '<u8'        []int64 ('<u8' values above MaxInt64 are errors)
//	'<f4'                    []float32
//	'<f8'                    []float64
//	'|u1'                    []uint8
//	'|b1'                    []bool
type Array struct {
	Dtype string // the dtype as the header spells it, e.g. "<f4"
	Shape []int  // empty for a scalar
	Data  any
}

// Len returns the number of elements: the product of Shape.
func (a *Array) Len() int {
	n := 1
	for _, d := range a.Shape {
		n *= d
	}
	return n
}

// maxNpyHeader bounds the header we read; NumPy's own reader refuses
// headers over 10000 bytes by default.
const maxNpyHeader = 1 << 20

var npyMagic = "\x93NUMPY"

type npyDtype struct {
	size int
	read func(r io.Reader, n int, exact bool) (any, error)
}

var npyDtypes = map[string]npyDtype{
	"<i4": {4, func(r io.Reader, n int, e bool) (any, error) { return readElems[int32](r, n, e) }},
	"<i8": {8, func(r io.Reader, n int, e bool) (any, error) { return readElems[int64](r, n, e) }},
	"<f4": {4, func(r io.Reader, n int, e bool) (any, error) { return readElems[float32](r, n, e) }},
	"<f8": {8, func(r io.Reader, n int, e bool) (any, error) { return readElems[float64](r, n, e) }},
	"|u1": {1, func(r io.Reader, n int, e bool) (any, error) { return readElems[uint8](r, n, e) }},
	"|b1": {1, readBool},
	"|i1": {1, func(r io.Reader, n int, e bool) (any, error) { return widen[int8, int32](readElems[int8](r, n, e)) }},
	"<i2": {2, func(r io.Reader, n int, e bool) (any, error) { return widen[int16, int32](readElems[int16](r, n, e)) }},
	"<u2": {2, func(r io.Reader, n int, e bool) (any, error) { return widen[uint16, int32](readElems[uint16](r, n, e)) }},
	"<u4": {4, func(r io.Reader, n int, e bool) (any, error) { return widen[uint32, int64](readElems[uint32](r, n, e)) }},
	"<u8": {8, readUint64},
}

func init() {
	// NumPy writes '|' for one-byte types; accept the other spellings too.
	for _, k := range []string{"u1", "b1", "i1"} {
		npyDtypes["<"+k] = npyDtypes["|"+k]
	}
}

// ReadNpy reads one .npy array (format versions 1, 2 and 3) from r and
// leaves r just after it. It reads the data in growing chunks, so a
// header that promises more than r holds fails with a truncation error
// before much memory is spent.
func ReadNpy(r io.Reader) (*Array, error) {
	a, _, err := readNpy(r, -1)
	return a, err
}

// ReadNpyFile reads a .npy file, which must hold exactly one array.
// Errors are *Error naming the path.
func ReadNpyFile(path string) (*Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	a, _, err := readNpy(bufio.NewReaderSize(f, 64<<10), st.Size())
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	return a, nil
}

// readNpy reads an array; size is the bytes the whole .npy has, or -1
// when unknown. It returns the bytes of data it consumed.
func readNpy(r io.Reader, size int64) (*Array, int64, error) {
	descr, fortran, shape, hlen, err := readNpyHeader(r)
	if err != nil {
		return nil, 0, err
	}
	dt, ok := npyDtypes[descr]
	if !ok {
		if strings.HasPrefix(descr, ">") {
			return nil, 0, fmt.Errorf("%w: big-endian dtype %q (convert with a.astype(a.dtype.newbyteorder('<')))", ErrUnsupported, descr)
		}
		return nil, 0, fmt.Errorf("%w: dtype %q", ErrUnsupported, descr)
	}
	if fortran {
		return nil, 0, fmt.Errorf("%w: Fortran-ordered array (save np.ascontiguousarray(a) instead)", ErrUnsupported)
	}
	n := 1
	for _, d := range shape {
		hi, lo := bits.Mul64(uint64(n), uint64(d))
		if hi != 0 || lo > math.MaxInt64/uint64(dt.size) {
			return nil, 0, fmt.Errorf("shape %v is too large", shape)
		}
		n = int(lo)
	}
	nbytes := int64(n) * int64(dt.size)
	if size >= 0 && size-hlen != nbytes {
		return nil, 0, fmt.Errorf("shape %v of %s needs %d data bytes, the file has %d", shape, descr, nbytes, size-hlen)
	}
	data, err := dt.read(r, n, size >= 0)
	if err != nil {
		return nil, 0, err
	}
	return &Array{Dtype: descr, Shape: shape, Data: data}, hlen + nbytes, nil
}

// readNpyHeader reads the magic, version and header dictionary. hlen is
// the bytes before the data.
func readNpyHeader(r io.Reader) (descr string, fortran bool, shape []int, hlen int64, err error) {
	var pre [10]byte
	if _, err := io.ReadFull(r, pre[:8]); err != nil {
		return "", false, nil, 0, fmt.Errorf("truncated .npy header: %w", noEOF(err))
	}
	if string(pre[:6]) != npyMagic {
		return "", false, nil, 0, errors.New("not a .npy file (bad magic)")
	}
	var n int64
	switch pre[6] {
	case 1:
		if _, err := io.ReadFull(r, pre[8:10]); err != nil {
			return "", false, nil, 0, fmt.Errorf("truncated .npy header: %w", noEOF(err))
		}
		n, hlen = int64(binary.LittleEndian.Uint16(pre[8:10])), 10
	case 2, 3:
		var l [4]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return "", false, nil, 0, fmt.Errorf("truncated .npy header: %w", noEOF(err))
		}
		n, hlen = int64(binary.LittleEndian.Uint32(l[:])), 12
	default:
		return "", false, nil, 0, fmt.Errorf("%w: .npy format version %d.%d", ErrUnsupported, pre[6], pre[7])
	}
	if n > maxNpyHeader {
		return "", false, nil, 0, fmt.Errorf(".npy header of %d bytes is too long", n)
	}
	h := make([]byte, n)
	if _, err := io.ReadFull(r, h); err != nil {
		return "", false, nil, 0, fmt.Errorf("truncated .npy header: %w", noEOF(err))
	}
	descr, fortran, shape, err = parseNpyHeader(string(h))
	if err != nil {
		return "", false, nil, 0, fmt.Errorf("bad .npy header %s: %w", quote(h), err)
	}
	return descr, fortran, shape, hlen + n, nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseNpyHeader parses the Python dict literal of a .npy header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }.
func parseNpyHeader(h string) (descr string, fortran bool, shape []int, err error) {
	p := &pyLit{s: h}
	var seen [3]bool
	if !p.eat('{') {
		return "", false, nil, errors.New("want a dict")
	}
	for !p.eat('}') {
		key, err := p.str()
		if err != nil {
			return "", false, nil, err
		}
		if !p.eat(':') {
			return "", false, nil, errors.New("want ':' after key")
		}
		switch key {
		case "descr":
			if p.peek() == '[' {
				return "", false, nil, fmt.Errorf("%w: structured dtype", ErrUnsupported)
			}
			descr, err = p.str()
			seen[0] = true
		case "fortran_order":
			fortran, err = p.boolean()
			seen[1] = true
		case "shape":
			shape, err = p.tuple()
			seen[2] = true
		default:
			return "", false, nil, fmt.Errorf("unknown key %q", key)
		}
		if err != nil {
			return "", false, nil, fmt.Errorf("%s: %w", key, err)
		}
		if !p.eat(',') {
			if !p.eat('}') {
				return "", false, nil, errors.New("want ',' or '}'")
			}
			break
		}
	}
	if strings.TrimSpace(p.s[p.i:]) != "" {
		return "", false, nil, errors.New("text after the dict")
	}
	for i, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[i] {
			return "", false, nil, fmt.Errorf("no %q", k)
		}
	}
	return descr, fortran, shape, nil
}

// pyLit reads the few Python literals a .npy header uses.
type pyLit struct {
	s string
	i int
}

func (p *pyLit) ws() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\n' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *pyLit) peek() byte {
	p.ws()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *pyLit) eat(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

func (p *pyLit) str() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", errors.New("want a string")
	}
	k := strings.IndexByte(p.s[p.i+1:], q)
	if k < 0 {
		return "", errors.New("unterminated string")
	}
	s := p.s[p.i+1 : p.i+1+k]
	if strings.IndexByte(s, '\\') >= 0 {
		return "", errors.New("escapes in strings are not supported")
	}
	p.i += k + 2
	return s, nil
}

func (p *pyLit) boolean() (bool, error) {
	p.ws()
	for _, v := range []bool{true, false} {
		w := "False"
		if v {
			w = "True"
		}
		if strings.HasPrefix(p.s[p.i:], w) {
			p.i += len(w)
			return v, nil
		}
	}
	return false, errors.New("want True or False")
}

func (p *pyLit) tuple() ([]int, error) {
	if !p.eat('(') {
		return nil, errors.New("want a tuple")
	}
	shape := []int{}
	for !p.eat(')') {
		p.ws()
		j := p.i
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		d, err := strconv.ParseInt(p.s[p.i:j], 10, 0)
		if err != nil {
			return nil, errors.New("want a non-negative integer dimension")
		}
		p.i = j
		if p.i < len(p.s) && p.s[p.i] == 'L' { // Python 2 long
			p.i++
		}
		shape = append(shape, int(d))
		if !p.eat(',') {
			if !p.eat(')') {
				return nil, errors.New("want ',' or ')'")
			}
			break
		}
	}
	return shape, nil
}

type number interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

var nativeLittle = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// readElems reads n little-endian elements. With exact set the caller
// has checked that r holds them, and the slice is allocated at once;
// otherwise it grows as bytes arrive, so a lying header costs little.
func readElems[T number](r io.Reader, n int, exact bool) ([]T, error) {
	var zero T
	size := int(unsafe.Sizeof(zero))
	c := n
	if !exact {
		c = min(n, (1<<20)/size)
	}
	s := make([]T, c)
	got := 0 // bytes
	for {
		b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*size)
		k, err := io.ReadFull(r, b[got:])
		got += k
		if err != nil {
			return nil, fmt.Errorf("truncated data: want %d bytes, got %d", n*size, got)
		}
		if len(s) == n {
			break
		}
		s = append(s, make([]T, min(len(s), n-len(s)))...)
	}
	if !nativeLittle && size > 1 {
		b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*size)
		for i := 0; i < len(b); i += size {
			for j, k := i, i+size-1; j < k; j, k = j+1, k-1 {
				b[j], b[k] = b[k], b[j]
			}
		}
	}
	return s, nil
}

func widen[From, To number](s []From, err error) ([]To, error) {
	if err != nil {
		return nil, err
	}
	out := make([]To, len(s))
	for i, v := range s {
		out[i] = To(v)
	}
	return out, nil
}

func readBool(r io.Reader, n int, exact bool) (any, error) {
	s, err := readElems[uint8](r, n, exact)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(s))
	for i, v := range s {
		if v > 1 {
			return nil, fmt.Errorf("bool element %d has byte value %d", i, v)
		}
		out[i] = v == 1
	}
	return out, nil
}

func readUint64(r io.Reader, n int, exact bool) (any, error) {
	s, err := readElems[uint64](r, n, exact)
	if err != nil {
		return nil, err
	}
	out := unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(s))), len(s)) // same memory
	for i, v := range s {
		if v > math.MaxInt64 {
			return nil, fmt.Errorf("uint64 element %d = %d exceeds the int64 range", i, v)
		}
	}
	return out, nil
}
