package cuda

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strings"
	"sync"
	"unsafe"
)

// Arg is the C type of a kernel parameter, as the launcher packs it.
type Arg uint8

const (
	Ptr Arg = iota + 1 // a device pointer (8 bytes)
	U64                // unsigned long long (weft_u64)
	F32                // float
)

func (a Arg) String() string {
	switch a {
	case Ptr:
		return "ptr"
	case U64:
		return "u64"
	case F32:
		return "f32"
	}
	return fmt.Sprintf("Arg(%d)", uint8(a))
}

// Size is the number of bytes the argument takes in a launch.
func (a Arg) Size() int {
	if a == F32 {
		return 4
	}
	return 8
}

// Kernel describes one kernel of a Program.
type Kernel struct {
	Name string // the extern "C" __global__ function, "weft_" first
	File string // the .cu file of the Program that defines it
	Args []Arg  // parameters in order
	// Ref is the kernel's CPU reference: it computes what the kernel
	// computes, with the same rounding, on the memory Args names. The
	// host-memory fake runs it in place of the kernel; GPU tests compare
	// the kernel against it.
	Ref func(a Args)
}

// Program is a set of CUDA kernels as source, with their table: the .cu
// files and their headers (Sources), compiled at run time by NVRTC for the
// device at hand (Load). Every source may include this package's header
// Header (weft_half.cuh: the u16/u32/u64 types, the float16 and bfloat16
// conversions of internal/half, the grid-stride loop WEFT_FOR).
type Program struct {
	Name    string // for messages: "cuda", "nn", ...
	Sources fs.FS  // the .cu files and any header of the program's own
	Kernels []Kernel
}

// The registry of programs, by kernel name: the fake finds kernels' CPU
// references here, and the tools list every program.
var (
	registryMu sync.Mutex
	registry   = map[string]*Program{}
	programs   []*Program
)

// Register makes a program's kernels known to the process (the fake runs
// their references; Programs lists them). Packages register their
// programs in an init function. Register panics when a kernel name is
// taken, as database/sql's Register does.
func Register(p *Program) *Program {
	registryMu.Lock()
	defer registryMu.Unlock()
	for _, k := range p.Kernels {
		if q, dup := registry[k.Name]; dup {
			panic(fmt.Sprintf("cuda: kernel %s of program %s registered by %s too", k.Name, p.Name, q.Name))
		}
		if k.Ref == nil {
			panic(fmt.Sprintf("cuda: kernel %s of program %s has no CPU reference", k.Name, p.Name))
		}
	}
	for _, k := range p.Kernels {
		registry[k.Name] = p
	}
	programs = append(programs, p)
	return p
}

// Programs lists the registered programs in the order they registered.
func Programs() []*Program {
	registryMu.Lock()
	defer registryMu.Unlock()
	return append([]*Program(nil), programs...)
}

// lookupKernel finds a registered kernel by name.
func lookupKernel(name string) (Kernel, bool) {
	registryMu.Lock()
	p := registry[name]
	registryMu.Unlock()
	if p == nil {
		return Kernel{}, false
	}
	return p.Kernel(name)
}

// Kernel returns the table entry of kernel name.
func (p *Program) Kernel(name string) (Kernel, bool) {
	for _, k := range p.Kernels {
		if k.Name == name {
			return k, true
		}
	}
	return Kernel{}, false
}

// Files returns the names of the program's kernel sources (*.cu), sorted.
func (p *Program) Files() []string {
	if p.Sources == nil {
		return nil
	}
	names, err := fs.Glob(p.Sources, "*.cu")
	if err != nil {
		panic(err) // the pattern is constant
	}
	sort.Strings(names)
	return names
}

// Source returns the text of one of the program's files, or of Header.
func (p *Program) Source(file string) (string, error) {
	fsys := p.Sources
	if file == Header {
		fsys = sources
	}
	b, err := fs.ReadFile(fsys, file)
	if err != nil {
		return "", fmt.Errorf("cuda: program %s has no source %q", p.Name, file)
	}
	return string(b), nil
}

// Args are a launch's arguments as a CPU reference sees them: values by
// position, and device memory as Go slices.
type Args struct {
	vals []uint64
	mem  func(p DevicePtr, n int) []byte
}

// Ptr is pointer argument i.
func (a Args) Ptr(i int) DevicePtr { return DevicePtr(a.vals[i]) }

// U64 is integer argument i.
func (a Args) U64(i int) int { return int(a.vals[i]) }

// F32 is float argument i.
func (a Args) F32(i int) float32 { return math.Float32frombits(uint32(a.vals[i])) }

// Bytes is the n bytes of device memory pointer argument i points to.
func (a Args) Bytes(i, n int) []byte { return a.mem(a.Ptr(i), n) }

// Float32s is n float32 at pointer argument i.
func (a Args) Float32s(i, n int) []float32 { return view[float32](a.Bytes(i, 4*n), n) }

// Uint16s is n uint16 (float16 or bfloat16 bits) at pointer argument i.
func (a Args) Uint16s(i, n int) []uint16 { return view[uint16](a.Bytes(i, 2*n), n) }

// Int64s is n int64 at pointer argument i.
func (a Args) Int64s(i, n int) []int64 { return view[int64](a.Bytes(i, 8*n), n) }

// Int32s is n int32 at pointer argument i.
func (a Args) Int32s(i, n int) []int32 { return view[int32](a.Bytes(i, 4*n), n) }

func view[T any](b []byte, n int) []T {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// pack lays out a kernel's arguments as cuLaunchKernel reads them and
// checks them against the table: Ptr takes a DevicePtr or *Mem, U64 an int
// (>= 0) or uint64, F32 a float32.
func pack(kn Kernel, args []any) (buf []byte, offs []int32, err error) {
	if len(args) != len(kn.Args) {
		return nil, nil, fmt.Errorf("cuda: kernel %s takes %d arguments, got %d: %w", kn.Name, len(kn.Args), len(args), ErrInvalid)
	}
	for i, want := range kn.Args {
		off := (len(buf) + want.Size() - 1) / want.Size() * want.Size()
		buf = append(buf, make([]byte, off-len(buf)+want.Size())...)
		offs = append(offs, int32(off))
		var bad bool
		switch want {
		case Ptr:
			switch v := args[i].(type) {
			case DevicePtr:
				binary.LittleEndian.PutUint64(buf[off:], uint64(v))
			case *Mem:
				binary.LittleEndian.PutUint64(buf[off:], uint64(v.Ptr()))
			default:
				bad = true
			}
		case U64:
			switch v := args[i].(type) {
			case int:
				bad = v < 0
				binary.LittleEndian.PutUint64(buf[off:], uint64(v))
			case uint64:
				binary.LittleEndian.PutUint64(buf[off:], v)
			default:
				bad = true
			}
		case F32:
			v, ok := args[i].(float32)
			bad = !ok
			binary.LittleEndian.PutUint32(buf[off:], math.Float32bits(v))
		}
		if bad {
			return nil, nil, fmt.Errorf("cuda: kernel %s argument %d: want %v, got %T(%v): %w", kn.Name, i, want, args[i], args[i], ErrInvalid)
		}
	}
	return buf, offs, nil
}

// unpack is pack's inverse, for the fake: the values of a packed launch.
func unpack(kn Kernel, buf []byte, offs []int32) []uint64 {
	vals := make([]uint64, len(kn.Args))
	for i, a := range kn.Args {
		if a == F32 {
			vals[i] = uint64(binary.LittleEndian.Uint32(buf[offs[i]:]))
		} else {
			vals[i] = binary.LittleEndian.Uint64(buf[offs[i]:])
		}
	}
	return vals
}

// blocks is the grid size for n threads of work in blocks of 256: enough
// to fill the device, the kernels loop over the rest (grid stride).
func blocks(n, sms int) uint32 {
	b := (n + 255) / 256
	return uint32(max(1, min(b, max(sms, 1)*32)))
}

// Module is a Program compiled for one device and loaded with the driver
// API. Load compiles once per device per process; a Module is safe for
// concurrent use, and launches queue on a stream and return at once.
type Module struct {
	l     *libraries
	prog  *Program
	drv   *driverAPI
	rt    *runtimeAPI
	props Props
	ctx   uintptr
	funcs map[string]uintptr
}

var (
	modulesMu sync.Mutex
	modules   = map[*libraries]map[*Program]map[int]*Module{}
)

// CompileOptions are the NVRTC options of every program, after
// --gpu-architecture=sm_XX: no fused multiply-add, so that results equal
// the CPU references bit for bit.
var CompileOptions = []string{"--fmad=false", "--std=c++17"}

// Load returns program p compiled for device dev, compiling it on first
// use (about a second per file). It needs the CUDA driver (libcuda.so.1),
// NVRTC and the CUDA runtime; without them it returns the error that says
// what to install.
func Load(dev int, p *Program) (*Module, error) {
	l := std()
	modulesMu.Lock()
	defer modulesMu.Unlock()
	if m := modules[l][p][dev]; m != nil {
		return m, nil
	}
	props, err := Properties(dev)
	if err != nil {
		return nil, err
	}
	a, _ := l.runtime()
	drv, _ := l.driver()
	nv, err := l.nvrtc()
	if err != nil {
		return nil, err
	}
	m := &Module{l: l, prog: p, drv: drv, rt: a, props: props, funcs: map[string]uintptr{}}
	err = withDevice(a, dev, func() error {
		var cu int32
		if err := drvErr(drv, "cuDeviceGet", drv.deviceGet(&cu, int32(dev))); err != nil {
			return err
		}
		if err := drvErr(drv, "cuDevicePrimaryCtxRetain", drv.primaryCtxRetain(&m.ctx, cu)); err != nil {
			return err
		}
		if err := drvErr(drv, "cuCtxSetCurrent", drv.ctxSetCurrent(m.ctx)); err != nil {
			return err
		}
		header, err := p.Source(Header)
		if err != nil {
			return err
		}
		for _, file := range p.Files() {
			src, err := p.Source(file)
			if err != nil {
				return err
			}
			cubin, err := compile(nv, src, file, header, props.Arch())
			if err != nil {
				return err
			}
			var mod uintptr
			if err := drvErr(drv, "cuModuleLoadData("+file+")", drv.moduleLoadData(&mod, unsafe.Pointer(&cubin[0]))); err != nil {
				return err
			}
			for _, kn := range p.Kernels {
				if kn.File != file {
					continue
				}
				var f uintptr
				if err := drvErr(drv, "cuModuleGetFunction("+kn.Name+")", drv.moduleGetFunction(&f, mod, kn.Name)); err != nil {
					return err
				}
				m.funcs[kn.Name] = f
			}
		}
		for _, kn := range p.Kernels {
			if _, ok := m.funcs[kn.Name]; !ok {
				return fmt.Errorf("kernel %s: no file %q among the program's sources %q", kn.Name, kn.File, p.Files())
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: program %s for device %d: %w", p.Name, dev, err)
	}
	if modules[l] == nil {
		modules[l] = map[*Program]map[int]*Module{}
	}
	if modules[l][p] == nil {
		modules[l][p] = map[int]*Module{}
	}
	modules[l][p][dev] = m
	return m, nil
}

// compile runs NVRTC on one source with the shared header and returns the
// CUBIN for arch.
func compile(nv *nvrtcAPI, src, name, header, arch string) ([]byte, error) {
	var prog uintptr
	if r := nv.createProgram(&prog, src, name, []string{header}, []string{Header}); r != 0 {
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
	if n == 0 {
		return nil, fmt.Errorf("nvrtcGetCUBIN(%s): an empty image", name)
	}
	b := make([]byte, n)
	if r := nv.getCUBIN(prog, b); r != 0 {
		return nil, fmt.Errorf("nvrtcGetCUBIN(%s): %w", name, r)
	}
	return b, nil
}

// Props are the properties of the module's device.
func (m *Module) Props() Props { return m.props }

// Device is the module's device.
func (m *Module) Device() int { return m.props.Ordinal }

// Launch queues kernel name of the program over n elements of work on s
// with args, checked against the program's table. It returns at once.
func (m *Module) Launch(s *Stream, name string, n int, args ...any) error {
	kn, ok := m.prog.Kernel(name)
	if !ok {
		return fmt.Errorf("cuda: program %s has no kernel %q: %w", m.prog.Name, name, ErrInvalid)
	}
	buf, offs, err := pack(kn, args)
	if err != nil {
		return err
	}
	if s.dev != m.props.Ordinal {
		return fmt.Errorf("cuda: kernel %s of device %d launched on a stream of device %d: %w", name, m.props.Ordinal, s.dev, ErrInvalid)
	}
	sh, err := s.Handle()
	if err != nil || n == 0 {
		return err
	}
	return withDevice(m.rt, m.props.Ordinal, func() error {
		if err := drvErr(m.drv, "cuCtxSetCurrent", m.drv.ctxSetCurrent(m.ctx)); err != nil {
			return err
		}
		return drvErr(m.drv, "cuLaunchKernel("+name+")", m.drv.launchKernel(m.funcs[name],
			[3]uint32{blocks(n, m.props.SMs), 1, 1}, [3]uint32{256, 1, 1}, 0, sh, buf, offs))
	})
}

// Declared returns the kernels a source defines (extern "C" __global__
// functions) with their parameters' C types, as written. It is a small
// scanner for the style of Weft's sources, not a C++ parser; the tests of
// every program check their table against it.
func Declared(src string) map[string][]string {
	out := map[string][]string{}
	const marker = `extern "C" __global__ void `
	for rest := src; ; {
		i := strings.Index(rest, marker)
		if i < 0 {
			return out
		}
		rest = rest[i+len(marker):]
		open := strings.IndexByte(rest, '(')
		end := strings.IndexByte(rest, ')')
		if open < 0 || end < open {
			return out
		}
		name := strings.TrimSpace(rest[:open])
		var types []string
		for _, p := range strings.Split(rest[open+1:end], ",") {
			f := strings.Fields(p)
			if len(f) < 2 {
				continue
			}
			t := strings.Join(f[:len(f)-1], " ")
			if strings.HasPrefix(f[len(f)-1], "*") {
				t += "*"
			}
			types = append(types, t)
		}
		out[name] = types
		rest = rest[end:]
	}
}

// ArgOf maps a parameter's C type, as Declared returns it, to an Arg; ok is
// false for a type the launcher cannot pass.
func ArgOf(ctype string) (a Arg, ok bool) {
	switch {
	case strings.HasSuffix(ctype, "*"):
		return Ptr, true
	case ctype == "weft_u64":
		return U64, true
	case ctype == "float":
		return F32, true
	}
	return 0, false
}
