//go:build cgo

package gpu

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// realNVML is NVML through go-nvml, which dlopens libnvidia-ml.so.1.
type realNVML struct {
	lib nvml.Interface
	dev []nvml.Device
}

func newNVML() nvmlLib { return &realNVML{lib: nvml.New()} }

func ret(call string, r nvml.Return) error {
	if r == nvml.SUCCESS {
		return nil
	}
	return fmt.Errorf("gpu: %s: %s", call, nvml.ErrorString(r))
}

func (n *realNVML) init() error {
	r := n.lib.Init()
	if r == nvml.ERROR_LIBRARY_NOT_FOUND {
		return ErrNoDriver
	}
	if r == nvml.ERROR_DRIVER_NOT_LOADED {
		return fmt.Errorf("%w: libnvidia-ml.so.1 is there but the kernel driver is not loaded", ErrNoDriver)
	}
	return ret("nvmlInit", r)
}

func (n *realNVML) shutdown() { n.lib.Shutdown() }

func (n *realNVML) driverVersion() string {
	v, r := n.lib.SystemGetDriverVersion()
	if r != nvml.SUCCESS {
		return "unknown"
	}
	return v
}

func (n *realNVML) count() (int, error) {
	c, r := n.lib.DeviceGetCount()
	if err := ret("nvmlDeviceGetCount", r); err != nil {
		return 0, err
	}
	n.dev = make([]nvml.Device, c)
	for i := range c {
		d, r := n.lib.DeviceGetHandleByIndex(i)
		if err := ret("nvmlDeviceGetHandleByIndex", r); err != nil {
			return 0, err
		}
		n.dev[i] = d
	}
	return c, nil
}

func cstr(b []int8) string {
	s := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}

func (n *realNVML) device(i int) (Device, error) {
	d := n.dev[i]
	out := Device{Index: i}
	var r nvml.Return
	if out.Name, r = d.GetName(); r != nvml.SUCCESS {
		return out, ret("nvmlDeviceGetName", r)
	}
	out.UUID, _ = d.GetUUID()
	if pci, r := d.GetPciInfo(); r == nvml.SUCCESS {
		out.BusID = cstr(pci.BusId[:])
	}
	if m, r := d.GetMemoryInfo(); r == nvml.SUCCESS {
		out.MemoryTotal, out.MemoryFree = m.Total, m.Free
	}
	out.Major, out.Minor, _ = d.GetCudaComputeCapability()
	for l := range nvml.NVLINK_MAX_LINKS {
		if s, r := d.GetNvLinkState(l); r == nvml.SUCCESS && s == nvml.FEATURE_ENABLED {
			out.NVLinks++
		}
	}
	return out, nil
}

var levels = map[nvml.GpuTopologyLevel]string{
	nvml.TOPOLOGY_INTERNAL: "X", nvml.TOPOLOGY_SINGLE: "PIX", nvml.TOPOLOGY_MULTIPLE: "PXB",
	nvml.TOPOLOGY_HOSTBRIDGE: "PHB", nvml.TOPOLOGY_NODE: "NODE", nvml.TOPOLOGY_SYSTEM: "SYS",
}

func (n *realNVML) link(i, j int) (string, bool, int) {
	a, b := n.dev[i], n.dev[j]
	level := "?"
	if t, r := a.GetTopologyCommonAncestor(b); r == nvml.SUCCESS {
		level = levels[t]
	}
	st, r := a.GetP2PStatus(b, nvml.P2P_CAPS_INDEX_READ)
	p2p := r == nvml.SUCCESS && st == nvml.P2P_STATUS_OK
	bus := ""
	if pci, r := b.GetPciInfo(); r == nvml.SUCCESS {
		bus = cstr(pci.BusId[:])
	}
	nv := 0
	for l := range nvml.NVLINK_MAX_LINKS {
		if s, r := a.GetNvLinkState(l); r != nvml.SUCCESS || s != nvml.FEATURE_ENABLED {
			continue
		}
		if pci, r := a.GetNvLinkRemotePciInfo(l); r == nvml.SUCCESS && cstr(pci.BusId[:]) == bus && bus != "" {
			nv++
		}
	}
	return level, p2p, nv
}
