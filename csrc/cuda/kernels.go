package cuda

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// sources holds every kernel file and the shared header.
//
//go:embed *.cu *.cuh
var sources embed.FS

// Header is the file every kernel source includes.
const Header = "weft_half.cuh"

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

// Kernel describes one kernel of the table.
type Kernel struct {
	Name string // the extern "C" __global__ function
	File string // the .cu file that defines it
	Args []Arg  // parameters in order
}

// Table is every kernel Weft launches. The launcher in package nccl looks
// kernels up here; TestTableMatchesSources keeps it equal to the sources.
var Table = []Kernel{
	{"weft_f32_to_f16", "convert.cu", []Arg{Ptr, Ptr, U64}},
	{"weft_f16_to_f32", "convert.cu", []Arg{Ptr, Ptr, U64}},
	{"weft_f32_to_bf16", "convert.cu", []Arg{Ptr, Ptr, U64}},
	{"weft_bf16_to_f32", "convert.cu", []Arg{Ptr, Ptr, U64}},
	{"weft_sum_f32", "sum.cu", []Arg{Ptr, Ptr, Ptr, U64}},
	{"weft_sum_f16", "sum.cu", []Arg{Ptr, Ptr, Ptr, U64}},
	{"weft_sum_bf16", "sum.cu", []Arg{Ptr, Ptr, Ptr, U64}},
	{"weft_dcsgd_momentum", "dcsgd.cu", []Arg{Ptr, Ptr, Ptr, Ptr, F32, F32, F32, U64}},
	{"weft_gather_mean", "gather.cu", []Arg{Ptr, Ptr, Ptr, Ptr, U64, U64}},
}

// Lookup returns the table entry of a kernel.
func Lookup(name string) (Kernel, bool) {
	for _, k := range Table {
		if k.Name == name {
			return k, true
		}
	}
	return Kernel{}, false
}

// Files returns the names of the kernel sources (*.cu), sorted.
func Files() []string {
	names, err := fs.Glob(sources, "*.cu")
	if err != nil {
		panic(err) // the pattern is constant
	}
	sort.Strings(names)
	return names
}

// Source returns the text of an embedded file (a .cu file or Header).
func Source(file string) (string, error) {
	b, err := sources.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("cuda: no embedded source %q", file)
	}
	return string(b), nil
}

// Declared returns the kernels a source defines (extern "C" __global__
// functions) with their parameters' C types, as written. It is a small
// scanner for the style of Weft's sources, not a C++ parser.
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
