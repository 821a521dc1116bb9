package nccl

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/weft-hpc/weft/csrc/cuda"
)

func TestLaunchTableMatchesKernels(t *testing.T) {
	used := map[string]bool{}
	for _, n := range kernelOf() {
		if _, ok := cuda.Lookup(n); !ok {
			t.Errorf("launcher uses %s, which cuda.Table lacks", n)
		}
		used[n] = true
	}
	for _, k := range cuda.Table {
		if !used[k.Name] {
			t.Errorf("kernel %s has no typed launcher", k.Name)
		}
	}
}

func TestPack(t *testing.T) {
	kn, _ := cuda.Lookup("weft_dcsgd_momentum")
	buf, offs, err := pack(kn, []any{DevicePtr(1), DevicePtr(2), DevicePtr(3), DevicePtr(4), float32(0.5), float32(0.9), float32(0.04), 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(offs) != 8 || offs[4] != 32 || offs[5] != 36 || offs[6] != 40 || offs[7] != 48 {
		t.Fatalf("offsets %v", offs)
	}
	if binary.LittleEndian.Uint64(buf[offs[3]:]) != 4 || math.Float32frombits(binary.LittleEndian.Uint32(buf[offs[5]:])) != 0.9 ||
		binary.LittleEndian.Uint64(buf[offs[7]:]) != 10 {
		t.Fatalf("packed % x", buf)
	}
	for _, bad := range [][]any{
		{DevicePtr(1), DevicePtr(2), DevicePtr(3), DevicePtr(4), 0.5, float32(0.9), float32(0.04), 10}, // float64
		{DevicePtr(1), DevicePtr(2), DevicePtr(3), DevicePtr(4), float32(0.5), float32(0.9), float32(0.04), -1},
		{DevicePtr(1)},
		{uintptr(1), DevicePtr(2), DevicePtr(3), DevicePtr(4), float32(0.5), float32(0.9), float32(0.04), 10},
	} {
		if _, _, err := pack(kn, bad); err == nil || !strings.Contains(err.Error(), "weft_dcsgd_momentum") {
			t.Errorf("pack(%v) = %v", bad, err)
		}
	}
}

func TestBlocks(t *testing.T) {
	for _, c := range []struct {
		n, sms int
		want   uint32
	}{{0, 132, 1}, {1, 132, 1}, {257, 132, 2}, {1 << 30, 132, 132 * 32}, {1000, 0, 4}} {
		if got := blocks(c.n, c.sms); got != c.want {
			t.Errorf("blocks(%d, %d) = %d, want %d", c.n, c.sms, got, c.want)
		}
	}
}
