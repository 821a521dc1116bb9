package nccl

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/csrc/cuda"
)

// Driver attributes used here (cuda.h CUdevice_attribute).
const (
	attrMultiprocessors = 16
	attrMemClockKHz     = 36
	attrMemBusWidth     = 37
	attrCCMajor         = 75
	attrCCMinor         = 76
)

// Kernels is Weft's CUDA kernels (package csrc/cuda) compiled by NVRTC for
// one device and loaded with the driver API. LoadKernels compiles once per
// device per process; the value is safe for concurrent use, and launches
// queue on a stream and return at once.
type Kernels struct {
	l     *libraries
	drv   *driverAPI
	rt    *cudartAPI
	dev   int
	arch  string
	sms   int
	ctx   uintptr
	funcs map[string]uintptr
}

var (
	kernelsMu    sync.Mutex
	kernelsCache = map[*libraries]map[int]*Kernels{}
)

// LoadKernels returns the kernels compiled for device dev, compiling them
// on first use (about a second per file). It needs the CUDA driver
// (libcuda.so.1), NVRTC and the CUDA runtime; without them it returns the
// error that says what to install.
func LoadKernels(dev int) (*Kernels, error) { return loadKernels(std, dev) }

func loadKernels(l *libraries, dev int) (*Kernels, error) {
	kernelsMu.Lock()
	defer kernelsMu.Unlock()
	if k := kernelsCache[l][dev]; k != nil {
		return k, nil
	}
	a, err := l.cudart()
	if err != nil {
		return nil, err
	}
	drv, err := l.driver()
	if err != nil {
		return nil, err
	}
	nv, err := l.nvrtc()
	if err != nil {
		return nil, err
	}
	k := &Kernels{l: l, drv: drv, rt: a, dev: dev, funcs: map[string]uintptr{}}
	err = onDevice(a, dev, func() error {
		if err := drvErr(drv, "cuInit", drv.init(0)); err != nil {
			return err
		}
		var cudev, major, minor, sms int32
		if err := drvErr(drv, "cuDeviceGet", drv.deviceGet(&cudev, int32(dev))); err != nil {
			return err
		}
		for _, q := range []struct {
			attr int32
			v    *int32
		}{{attrCCMajor, &major}, {attrCCMinor, &minor}, {attrMultiprocessors, &sms}} {
			if err := drvErr(drv, "cuDeviceGetAttribute", drv.deviceGetAttribute(q.v, q.attr, cudev)); err != nil {
				return err
			}
		}
		k.arch, k.sms = fmt.Sprintf("sm_%d%d", major, minor), int(sms)
		if err := drvErr(drv, "cuDevicePrimaryCtxRetain", drv.primaryCtxRetain(&k.ctx, cudev)); err != nil {
			return err
		}
		if err := drvErr(drv, "cuCtxSetCurrent", drv.ctxSetCurrent(k.ctx)); err != nil {
			return err
		}
		header, err := cuda.Source(cuda.Header)
		if err != nil {
			return err
		}
		for _, file := range cuda.Files() {
			src, err := cuda.Source(file)
			if err != nil {
				return err
			}
			cubin, err := compile(nv, src, file, header, k.arch)
			if err != nil {
				return err
			}
			var mod uintptr
			if err := drvErr(drv, "cuModuleLoadData("+file+")", drv.moduleLoadData(&mod, ptrOf(cubin))); err != nil {
				return err
			}
			for _, kn := range cuda.Table {
				if kn.File != file {
					continue
				}
				var f uintptr
				if err := drvErr(drv, "cuModuleGetFunction("+kn.Name+")", drv.moduleGetFunction(&f, mod, kn.Name)); err != nil {
					return err
				}
				k.funcs[kn.Name] = f
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("nccl: kernels for device %d: %w", dev, err)
	}
	if kernelsCache[l] == nil {
		kernelsCache[l] = map[int]*Kernels{}
	}
	kernelsCache[l][dev] = k
	return k, nil
}

// CompileOptions are the NVRTC options of every kernel program, after
// --gpu-architecture=sm_XX: no fused multiply-add, so results equal the
// CPU references bit for bit.
var CompileOptions = []string{"--fmad=false", "--std=c++17"}

// compile runs NVRTC on one source with the shared header and returns the
// CUBIN for arch.
func compile(nv *nvrtcAPI, src, name, header, arch string) ([]byte, error) {
	var prog uintptr
	if r := nv.createProgram(&prog, src, name, []string{header}, []string{cuda.Header}); r != 0 {
		return nil, fmt.Errorf("nvrtcCreateProgram(%s): %w", name, r)
	}
	defer nv.destroyProgram(&prog)
	opts := append([]string{"--gpu-architecture=" + arch}, CompileOptions...)
	if r := nv.compileProgram(prog, opts); r != 0 {
		var n uint64
		log := ""
		if nv.getLogSize(prog, &n) == 0 && n > 1 {
			b := make([]byte, n)
			if nv.getLog(prog, b) == 0 {
				log = string(b[:n-1])
			}
		}
		return nil, fmt.Errorf("nvrtcCompileProgram(%s, %q): %w (an NVRTC older than the GPU rejects its sm_XX: use the NVRTC of the installed CUDA):\n%s", name, opts, r, log)
	}
	var n uint64
	if r := nv.getCUBINSize(prog, &n); r != 0 {
		return nil, fmt.Errorf("nvrtcGetCUBINSize(%s): %w", name, r)
	}
	b := make([]byte, n)
	if r := nv.getCUBIN(prog, b); r != 0 {
		return nil, fmt.Errorf("nvrtcGetCUBIN(%s): %w", name, r)
	}
	return b, nil
}

func drvErr(d *driverAPI, call string, e DriverError) error {
	if e == 0 {
		return nil
	}
	return fmt.Errorf("%s: %w (%s)", call, e, d.getErrorString(e))
}

// Arch is the sm_XX the kernels were compiled for.
func (k *Kernels) Arch() string { return k.arch }

// pack lays out a kernel's arguments as cuLaunchKernel reads them and
// checks them against the table: Ptr takes a DevicePtr or *Mem, U64 an int
// (>= 0) or uint64, F32 a float32.
func pack(kn cuda.Kernel, args []any) (buf []byte, offs []int32, err error) {
	if len(args) != len(kn.Args) {
		return nil, nil, fmt.Errorf("nccl: kernel %s takes %d arguments, got %d", kn.Name, len(kn.Args), len(args))
	}
	for i, want := range kn.Args {
		off := (len(buf) + want.Size() - 1) / want.Size() * want.Size()
		buf = append(buf, make([]byte, off-len(buf)+want.Size())...)
		offs = append(offs, int32(off))
		var bad bool
		switch want {
		case cuda.Ptr:
			switch v := args[i].(type) {
			case DevicePtr:
				binary.LittleEndian.PutUint64(buf[off:], uint64(v))
			case *Mem:
				binary.LittleEndian.PutUint64(buf[off:], uint64(v.Ptr()))
			default:
				bad = true
			}
		case cuda.U64:
			switch v := args[i].(type) {
			case int:
				bad = v < 0
				binary.LittleEndian.PutUint64(buf[off:], uint64(v))
			case uint64:
				binary.LittleEndian.PutUint64(buf[off:], v)
			default:
				bad = true
			}
		case cuda.F32:
			v, ok := args[i].(float32)
			bad = !ok
			binary.LittleEndian.PutUint32(buf[off:], math.Float32bits(v))
		}
		if bad {
			return nil, nil, fmt.Errorf("nccl: kernel %s argument %d: want %v, got %T(%v)", kn.Name, i, want, args[i], args[i])
		}
	}
	return buf, offs, nil
}

// blocks is the grid size for n threads of work in blocks of 256: enough
// to fill the device, the kernels loop over the rest (grid stride).
func blocks(n, sms int) uint32 {
	b := (n + 255) / 256
	return uint32(max(1, min(b, max(sms, 1)*32)))
}

// Launch queues kernel name (an entry of cuda.Table) over n elements of
// work on s with args, checked against the table. It returns at once.
func (k *Kernels) Launch(s *Stream, name string, n int, args ...any) error {
	kn, ok := cuda.Lookup(name)
	if !ok {
		return fmt.Errorf("nccl: no kernel %q", name)
	}
	buf, offs, err := pack(kn, args)
	if err != nil {
		return err
	}
	sh, err := s.handle()
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	return onDevice(k.rt, k.dev, func() error {
		if err := drvErr(k.drv, "cuCtxSetCurrent", k.drv.ctxSetCurrent(k.ctx)); err != nil {
			return err
		}
		return drvErr(k.drv, "cuLaunchKernel("+name+")", k.drv.launchKernel(k.funcs[name],
			[3]uint32{blocks(n, k.sms), 1, 1}, [3]uint32{256, 1, 1}, 0, sh, buf, offs))
	})
}

// The typed launchers. Each is one kernel of cuda.Table (kernelOf lists
// which, for the tests); n counts elements.

// Convert converts n elements from x (type from) to y (type to): float32 to
// float16 or bfloat16 and back.
func (k *Kernels) Convert(s *Stream, y DevicePtr, to collective.DType, x DevicePtr, from collective.DType, n int) error {
	name, ok := convertKernel[[2]collective.DType{from, to}]
	if !ok {
		return fmt.Errorf("nccl: no conversion from %v to %v", from, to)
	}
	return k.Launch(s, name, n, x, y, n)
}

var convertKernel = map[[2]collective.DType]string{
	{collective.Float32, collective.Float16}:  "weft_f32_to_f16",
	{collective.Float16, collective.Float32}:  "weft_f16_to_f32",
	{collective.Float32, collective.BFloat16}: "weft_f32_to_bf16",
	{collective.BFloat16, collective.Float32}: "weft_bf16_to_f32",
}

// Sum sets y = a + b for n elements of dt (float32, float16, bfloat16).
func (k *Kernels) Sum(s *Stream, dt collective.DType, y, a, b DevicePtr, n int) error {
	name, ok := sumKernel[dt]
	if !ok {
		return fmt.Errorf("nccl: no sum kernel for %v", dt)
	}
	return k.Launch(s, name, n, y, a, b, n)
}

var sumKernel = map[collective.DType]string{
	collective.Float32:  "weft_sum_f32",
	collective.Float16:  "weft_sum_f16",
	collective.BFloat16: "weft_sum_bf16",
}

// DCSGDMomentum is SAPipe's compensated step on n float32 parameters, in
// place on w and v: d = w - wStale; g' = g + lambda*((g*g)*d);
// v = mu*v + g'; w = w - lr*v.
func (k *Kernels) DCSGDMomentum(s *Stream, w, v, g, wStale DevicePtr, lr, mu, lambda float32, n int) error {
	return k.Launch(s, "weft_dcsgd_momentum", n, w, v, g, wStale, lr, mu, lambda, n)
}

// GatherMean sets out (rows x dim float32) to the mean, per CSR row, of
// the feat rows its neighbours name (indptr: rows+1 int64, indices: int64).
func (k *Kernels) GatherMean(s *Stream, out, feat, indptr, indices DevicePtr, rows, dim int) error {
	return k.Launch(s, "weft_gather_mean", rows*dim, out, feat, indptr, indices, rows, dim)
}

// kernelOf lists the kernels the typed launchers use.
func kernelOf() []string {
	names := []string{"weft_dcsgd_momentum", "weft_gather_mean"}
	for _, n := range convertKernel {
		names = append(names, n)
	}
	for _, n := range sumKernel {
		names = append(names, n)
	}
	return names
}

// PeakBandwidth is the device's theoretical memory bandwidth in bytes per
// second from the driver's attributes (2 transfers per memory clock times
// the bus width), or 0 when the driver does not report them.
func (k *Kernels) PeakBandwidth() float64 {
	var khz, bits int32
	err := onDevice(k.rt, k.dev, func() error {
		var cudev int32
		if e := k.drv.deviceGet(&cudev, int32(k.dev)); e != 0 {
			return e
		}
		if e := k.drv.deviceGetAttribute(&khz, attrMemClockKHz, cudev); e != 0 {
			return e
		}
		if e := k.drv.deviceGetAttribute(&bits, attrMemBusWidth, cudev); e != 0 {
			return e
		}
		return nil
	})
	if err != nil {
		return 0
	}
	return 2 * float64(khz) * 1e3 * float64(bits) / 8
}
