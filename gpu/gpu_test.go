package gpu

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

type fakeNVML struct {
	initErr error
	devs    []Device
	nvlinks map[[2]int]int
	shut    int
}

func (f *fakeNVML) init() error           { return f.initErr }
func (f *fakeNVML) shutdown()             { f.shut++ }
func (f *fakeNVML) driverVersion() string { return "580.00" }
func (f *fakeNVML) count() (int, error)   { return len(f.devs), nil }
func (f *fakeNVML) device(i int) (Device, error) {
	return f.devs[i], nil
}
func (f *fakeNVML) link(i, j int) (string, bool, int) {
	return "SYS", f.nvlinks[[2]int{i, j}] > 0, f.nvlinks[[2]int{i, j}]
}

func fourGPUs() *fakeNVML {
	f := &fakeNVML{nvlinks: map[[2]int]int{{0, 1}: 18, {1, 0}: 18}}
	for i := range 4 {
		f.devs = append(f.devs, Device{Index: i, Name: "NVIDIA H200", UUID: "GPU-" + strings.Repeat(string(rune('a'+i)), 8),
			BusID: "00000000:1" + string(rune('0'+i)) + ":00.0", MemoryTotal: 141 << 30, Major: 9})
	}
	return f
}

func TestDiscover(t *testing.T) {
	f := fourGPUs()
	sys, err := discover(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(sys.Devices) != 4 || f.shut != 1 {
		t.Fatalf("%d devices, %d shutdowns", len(sys.Devices), f.shut)
	}
	if l := sys.Links[0][1]; l.Level != "NV18" || !l.P2P || l.NVLinks != 18 {
		t.Errorf("link 0-1: %+v", l)
	}
	if l := sys.Links[2][3]; l.Level != "SYS" || l.P2P {
		t.Errorf("link 2-3: %+v", l)
	}
	if sys.Links[1][1].Level != "X" {
		t.Errorf("self link: %+v", sys.Links[1][1])
	}
	var b bytes.Buffer
	if err := WriteTable(&b, sys); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NVIDIA H200", "00000000:12:00.0", "141.0 GiB", "NV18", "SYS (no p2p)", "9.0"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestNoDriver(t *testing.T) {
	_, err := discover(&fakeNVML{initErr: ErrNoDriver})
	if !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "libnvidia-ml.so.1 not found") {
		t.Fatal(err)
	}
	// This machine: no driver, or no cgo.
	if sys, err := Discover(); err == nil {
		t.Logf("a driver is installed: %d GPUs", len(sys.Devices))
	} else if !errors.Is(err, ErrNoDriver) && !errors.Is(err, ErrNotBuilt) {
		t.Fatalf("Discover: %v", err)
	}
}

func TestLocalDevice(t *testing.T) {
	sys, _ := discover(fourGPUs())
	for _, c := range []struct {
		env        string
		rank       int
		nvml, cuda int
		err        string
	}{
		{"", 0, 0, 0, ""},
		{"", 3, 3, 3, ""},
		{"", 4, 0, 0, "4 are visible"},
		{"2,3", 0, 2, 0, ""},
		{"2,3", 1, 3, 1, ""},
		{"2,3", 2, 0, 0, "2 are visible"},
		{"3,7,1", 1, 0, 0, "1 are visible"}, // CUDA stops at the first invalid entry
		{"GPU-cccc", 0, 2, 0, ""},
		{"GPU-dd,GPU-aa", 1, 0, 1, ""},
		{"-1", 0, 0, 0, "0 are visible"},
		{"", -1, 0, 0, "unknown"},
	} {
		a, err := localDevice(sys, c.rank, c.env)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("env %q rank %d: %v, want %q", c.env, c.rank, err, c.err)
			}
			continue
		}
		if err != nil || a.NVMLIndex != c.nvml || a.CUDADevice != c.cuda || a.BusID != sys.Devices[c.nvml].BusID {
			t.Errorf("env %q rank %d: %+v %v", c.env, c.rank, a, err)
		}
	}
	// Without NVML: indices are trusted, UUIDs cannot be resolved.
	if a, err := localDevice(nil, 5, ""); err != nil || a.CUDADevice != 5 || a.NVMLIndex != -1 {
		t.Errorf("no NVML: %+v %v", a, err)
	}
	if a, err := localDevice(nil, 1, "4,6"); err != nil || a.NVMLIndex != 6 {
		t.Errorf("no NVML with a list: %+v %v", a, err)
	}
	if _, err := localDevice(nil, 0, "GPU-aa"); err == nil {
		t.Error("UUID without NVML accepted")
	}
}
