package ingest

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzEdgeList parses arbitrary bytes twice, in many tiny blocks on
// several goroutines and in one block on one, and requires the same
// edges or the same error; what parses must re-serialise and parse back
// to the same edges.
func FuzzEdgeList(f *testing.F) {
	for _, s := range []string{
		"0 1\n1 2\n", "# c\nsrc,dst\n1,2\r\n\n3,4,0.5\n", "1\t2\n3\t4", "12\n",
		"%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 3\n",
		"1 -2\n", "9223372036854775807 1\n", "+1 +2 x\n", "1 , 2\n",
		"\xef\xbb\xbf0 1\n", "\xef\xbb\xbfa,b\n1,2\n", "\xff\xfe0\x00",
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, flags uint8) {
		opt := EdgeListOptions{OneBased: flags&1 != 0, Relabel: flags&2 != 0, Format: Format(flags>>2) % 4}
		par, seq := opt, opt
		par.BlockSize, par.Workers = 1+int(flags>>4), 3
		seq.Workers = 1
		d, err := ParseEdgeList(bytes.NewReader(data), "fuzz", par)
		d1, err1 := ParseEdgeList(bytes.NewReader(data), "fuzz", seq)
		if fmt.Sprint(err) != fmt.Sprint(err1) || !reflect.DeepEqual(d, d1) {
			t.Fatalf("block parse differs from one block:\n%v %v\n%v %v", d, err, d1, err1)
		}
		if err != nil {
			return
		}
		e := d.Edges
		if len(e.Src) != len(e.Dst) {
			t.Fatalf("%d sources, %d destinations", len(e.Src), len(e.Dst))
		}
		var b strings.Builder
		for i := range e.Src {
			if e.Src[i] < 0 || e.Src[i] >= e.NumNodes || e.Dst[i] < 0 || e.Dst[i] >= e.NumNodes {
				t.Fatalf("edge %d -> %d outside %d nodes", e.Src[i], e.Dst[i], e.NumNodes)
			}
			fmt.Fprintf(&b, "%d %d\n", e.Src[i], e.Dst[i])
		}
		d2, err := ParseEdgeList(strings.NewReader(b.String()), "again", EdgeListOptions{NumNodes: e.NumNodes})
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if !slices.Equal(d2.Edges.Src, e.Src) || !slices.Equal(d2.Edges.Dst, e.Dst) || d2.Edges.NumNodes != e.NumNodes {
			t.Fatalf("re-parse differs: %+v, want %+v", d2.Edges, e)
		}
	})
}

// FuzzNpy decodes arbitrary bytes as .npy; what decodes must have as
// many elements as its shape says and encode back to an equal array.
func FuzzNpy(f *testing.F) {
	f.Add(npyBytes("<i4", false, []int{2, 2}, make([]byte, 16)))
	f.Add(npyBytes("<f8", false, []int{}, make([]byte, 8)))
	f.Add(npyBytes("|b1", false, []int{3}, []byte{0, 1, 1}))
	f.Add(npyBytes("<u8", false, []int{1}, make([]byte, 8)))
	f.Add(npyBytes("<f4", true, []int{1, 1}, make([]byte, 4)))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ReadNpy(bytes.NewReader(data))
		if err != nil {
			return
		}
		v := reflect.ValueOf(a.Data)
		if v.Kind() != reflect.Slice || v.Len() != a.Len() {
			t.Fatalf("shape %v but %d elements", a.Shape, v.Len())
		}
		raw := bytes.Buffer{}
		for i := range v.Len() {
			x := v.Index(i).Interface()
			if bv, ok := x.(bool); ok {
				x = map[bool]uint8{false: 0, true: 1}[bv]
			}
			writeLE(&raw, x, npyDtypes[a.Dtype].size)
		}
		b, err := ReadNpy(bytes.NewReader(npyBytes(a.Dtype, false, a.Shape, raw.Bytes())))
		if err != nil {
			t.Fatalf("re-read: %v", err)
		}
		if !reflect.DeepEqual(a.Shape, b.Shape) || fmt.Sprint(a.Data) != fmt.Sprint(b.Data) { // Sprint: NaN == NaN
			t.Fatalf("re-read differs: %v, want %v", b, a)
		}
	})
}

// writeLE writes x, a value of Array.Data's element type, as size bytes.
func writeLE(b *bytes.Buffer, x any, size int) {
	var u uint64
	switch v := x.(type) {
	case int32:
		u = uint64(v)
	case int64:
		u = uint64(v)
	case uint8:
		u = uint64(v)
	case float32:
		u = uint64(math.Float32bits(v))
	case float64:
		u = math.Float64bits(v)
	}
	for i := range size {
		b.WriteByte(byte(u >> (8 * i)))
	}
}
