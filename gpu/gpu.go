package gpu

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/weft-hpc/weft/collective"
)

var (
	// ErrNoDriver: NVML (libnvidia-ml.so.1, part of the NVIDIA driver) is
	// not installed, so there are no usable NVIDIA GPUs here.
	ErrNoDriver = errors.New("no NVIDIA driver (libnvidia-ml.so.1 not found)")
	// ErrNotBuilt: this binary was built without cgo and cannot load NVML.
	ErrNotBuilt = collective.ErrNotBuilt
)

// Device is one GPU as NVML reports it.
type Device struct {
	Index       int    // NVML index (PCI order)
	Name        string // "NVIDIA H200"
	UUID        string // "GPU-..."
	BusID       string // PCIe bus id, "00000000:19:00.0"
	MemoryTotal uint64 // bytes
	MemoryFree  uint64 // bytes
	Major       int    // compute capability
	Minor       int
	NVLinks     int // active NVLink links
}

// Link is how two devices reach each other.
type Link struct {
	NVLinks int    // NVLink links between them (0: none)
	Level   string // "X" (itself), "NV<k>", or PIX, PXB, PHB, NODE, SYS
	P2P     bool   // peer-to-peer reads are supported
}

// System is what Discover found.
type System struct {
	Driver  string // driver version
	Devices []Device
	Links   [][]Link // Links[i][j] between Devices[i] and Devices[j]
}

// nvmlLib is the part of NVML this package uses, behind an interface so
// the logic is tested with a fake (go-nvml style).
type nvmlLib interface {
	init() error
	shutdown()
	driverVersion() string
	count() (int, error)
	device(i int) (Device, error)
	// link returns the PCIe level name (PIX ...), whether P2P reads work,
	// and the number of NVLinks from i whose remote end is j.
	link(i, j int) (level string, p2p bool, nvlinks int)
}

// Discover lists the GPUs and their topology.
func Discover() (*System, error) { return discover(newNVML()) }

func discover(lib nvmlLib) (*System, error) {
	if err := lib.init(); err != nil {
		return nil, err
	}
	defer lib.shutdown()
	n, err := lib.count()
	if err != nil {
		return nil, err
	}
	sys := &System{Driver: lib.driverVersion()}
	for i := range n {
		d, err := lib.device(i)
		if err != nil {
			return nil, fmt.Errorf("gpu: device %d: %w", i, err)
		}
		sys.Devices = append(sys.Devices, d)
	}
	sys.Links = make([][]Link, n)
	for i := range n {
		sys.Links[i] = make([]Link, n)
		for j := range n {
			if i == j {
				sys.Links[i][j] = Link{Level: "X", P2P: true}
				continue
			}
			level, p2p, nv := lib.link(i, j)
			l := Link{Level: level, P2P: p2p, NVLinks: nv}
			if nv > 0 {
				l.Level = "NV" + strconv.Itoa(nv)
			}
			sys.Links[i][j] = l
		}
	}
	return sys, nil
}

// Assignment is the device a local rank takes.
type Assignment struct {
	LocalRank  int
	CUDADevice int    // ordinal for CUDA and NCCL (nccl.WithDevice)
	NVMLIndex  int    // index into System.Devices, -1 if unknown
	BusID      string // "" if unknown
}

// LocalDevice maps localRank to a device: one GPU per local rank, the
// visible devices (CUDA_VISIBLE_DEVICES) in order. sys may be nil when
// NVML is not available; the mapping then only uses the visible count
// given by CUDA_VISIBLE_DEVICES, or trusts the rank.
func LocalDevice(sys *System, localRank int) (Assignment, error) {
	return localDevice(sys, localRank, os.Getenv("CUDA_VISIBLE_DEVICES"))
}

func localDevice(sys *System, localRank int, visibleEnv string) (Assignment, error) {
	if localRank < 0 {
		return Assignment{}, fmt.Errorf("gpu: local rank %d unknown: the launcher did not say (set WEFT_LOCAL_RANK or use mpirun/srun)", localRank)
	}
	visible, err := visibleDevices(sys, visibleEnv)
	if err != nil {
		return Assignment{}, err
	}
	if visible != nil && localRank >= len(visible) {
		return Assignment{}, fmt.Errorf("gpu: local rank %d needs a GPU of its own but %d are visible (CUDA_VISIBLE_DEVICES=%q): start at most %d ranks per node",
			localRank, len(visible), visibleEnv, len(visible))
	}
	a := Assignment{LocalRank: localRank, CUDADevice: localRank, NVMLIndex: -1}
	if visible != nil {
		a.NVMLIndex = visible[localRank]
		if sys != nil && a.NVMLIndex >= 0 && a.NVMLIndex < len(sys.Devices) {
			a.BusID = sys.Devices[a.NVMLIndex].BusID
		}
	}
	return a, nil
}

// visibleDevices returns the NVML indices CUDA will show, in CUDA's order
// (nil when unknown: no NVML and no CUDA_VISIBLE_DEVICES). Entries are
// indices or UUID prefixes; like CUDA, the list stops at the first entry
// that names no device.
func visibleDevices(sys *System, env string) ([]int, error) {
	n := -1
	if sys != nil {
		n = len(sys.Devices)
	}
	if strings.TrimSpace(env) == "" {
		if n < 0 {
			return nil, nil
		}
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	out := []int{} // non-nil: an empty list hides every device
	for _, f := range strings.Split(env, ",") {
		f = strings.TrimSpace(f)
		idx := -1
		if v, err := strconv.Atoi(f); err == nil {
			idx = v
			if v < 0 || (n >= 0 && v >= n) {
				break
			}
		} else if strings.HasPrefix(f, "GPU-") || strings.HasPrefix(f, "MIG-") {
			if sys == nil {
				return nil, fmt.Errorf("gpu: CUDA_VISIBLE_DEVICES names %s, which only NVML can resolve", f)
			}
			for _, d := range sys.Devices {
				if strings.HasPrefix(d.UUID, f) {
					idx = d.Index
				}
			}
			if idx < 0 {
				break
			}
		} else {
			break
		}
		out = append(out, idx)
	}
	return out, nil
}

// WriteTable prints the devices and the topology matrix, like nvidia-smi
// topo -m.
func WriteTable(w io.Writer, sys *System) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "driver %s, %d GPUs\n", sys.Driver, len(sys.Devices))
	fmt.Fprintln(tw, "GPU\tname\tbus id\tmemory\tfree\tcc\tnvlinks\tuuid")
	for _, d := range sys.Devices {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.1f GiB\t%.1f GiB\t%d.%d\t%d\t%s\n", d.Index, d.Name, d.BusID,
			float64(d.MemoryTotal)/(1<<30), float64(d.MemoryFree)/(1<<30), d.Major, d.Minor, d.NVLinks, d.UUID)
	}
	if len(sys.Devices) > 1 {
		fmt.Fprintln(tw)
		hdr := []string{"topology"}
		for i := range sys.Devices {
			hdr = append(hdr, "GPU"+strconv.Itoa(i))
		}
		fmt.Fprintln(tw, strings.Join(hdr, "\t"))
		for i, row := range sys.Links {
			cells := []string{"GPU" + strconv.Itoa(i)}
			for _, l := range row {
				c := l.Level
				if !l.P2P {
					c += " (no p2p)"
				}
				cells = append(cells, c)
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		fmt.Fprintln(tw, "\nNV<k>: k NVLinks; PIX: one PCIe switch; PXB: several switches; PHB: a host bridge; NODE: a NUMA node; SYS: across NUMA nodes")
	}
	return tw.Flush()
}
