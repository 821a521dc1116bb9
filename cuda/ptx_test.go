package cuda_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/gnn/feature"
	"github.com/weft-hpc/weft/gnn/model"
	"github.com/weft-hpc/weft/gnn/spgnn"
	"github.com/weft-hpc/weft/nn"
)

// clangPrelude stands in for NVRTC's built-ins under clang's CUDA mode
// without CUDA headers (-nocudainc): the qualifiers, the bit casts.
// blockIdx and the rest come from clang's own header.
const clangPrelude = `#include <__clang_cuda_builtin_vars.h>
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
__device__ inline unsigned __float_as_uint(float f) { return __builtin_bit_cast(unsigned, f); }
__device__ inline float __uint_as_float(unsigned u) { return __builtin_bit_cast(float, u); }
extern "C" __device__ double exp(double);
extern "C" __device__ double log(double);
extern "C" __device__ double sqrt(double);
extern "C" __device__ float sqrtf(float);
`

// bandwidthKernels are the kernels that must run at the memory's speed,
// measured by weft bench kernels: the PTX test holds them to 128-bit
// accesses and no 64-bit division. The other kernels (nn's layers and
// optimizers, the feature cache's) are only compiled here: they are not
// tuned yet.
var bandwidthKernels = map[string]bool{
	"weft_f32_to_f16": true, "weft_f16_to_f32": true, "weft_f32_to_bf16": true, "weft_bf16_to_f32": true,
	"weft_sum_f32": true, "weft_sum_f16": true, "weft_sum_bf16": true, "weft_dcsgd_momentum": true, "weft_gather_mean": true,
}

// TestKernelsCompileToPTX compiles every program's sources as CUDA device
// code with clang (no CUDA toolkit needed), for sm_80 (the packed float16
// conversion) and sm_75 (the scalar one), the closest a machine without
// NVRTC gets to it: device code calling host code, a bad asm constraint or
// a type NVRTC lacks fails here. In the PTX every bandwidth kernel accesses memory
// with 128-bit loads and stores (ld.global.v4, st.global.v4), the float16
// kernels convert with cvt.rn.f16x2.f32 on sm_80, and no kernel divides
// 64-bit integers. ptxas and NVRTC's own front end still only run on the
// GPU machine (make gpu-check).
func TestKernelsCompileToPTX(t *testing.T) {
	clang := ""
	for _, name := range []string{"clang", "clang-19", "clang-18", "clang-17", "clang-16", "clang-15", "clang-14"} {
		if p, err := exec.LookPath(name); err == nil {
			clang = p
			break
		}
	}
	if clang == "" {
		t.Skip("no clang: compiling the kernels to PTX without the CUDA toolkit needs clang's CUDA mode (Debian: clang-14)")
	}
	dir := t.TempDir()
	prelude := filepath.Join(dir, "prelude.h")
	if err := os.WriteFile(prelude, []byte(clangPrelude), 0o644); err != nil {
		t.Fatal(err)
	}
	intDiv := regexp.MustCompile(`\b(div|rem)\.[us]64\b`)
	for _, p := range []*cuda.Program{cuda.Builtin, nn.Kernels, model.Kernels, feature.Kernels, spgnn.Kernels} {
		pdir := filepath.Join(dir, strings.ReplaceAll(p.Name, "/", "_"))
		if err := os.Mkdir(pdir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range append([]string{cuda.Header}, p.Files()...) {
			src, err := p.Source(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(pdir, f), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range p.Files() {
			for _, arch := range []string{"sm_80", "sm_75"} {
				ptx := filepath.Join(pdir, f+"."+arch+".ptx")
				args := []string{"-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib", "--cuda-gpu-arch=" + arch,
					"-O3", "-S", "-std=c++17", "-ffp-contract=off", "-Wall", "-Werror", "-include", prelude, "-o", ptx, filepath.Join(pdir, f)}
				if out, err := exec.Command(clang, args...).CombinedOutput(); err != nil {
					t.Fatalf("%s %s: %v\n%s", clang, strings.Join(args, " "), err, out)
				}
				text, err := os.ReadFile(ptx)
				if err != nil {
					t.Fatal(err)
				}
				entries := ptxEntries(string(text))
				for _, k := range p.Kernels {
					if k.File != f {
						continue
					}
					body, ok := entries[k.Name]
					if !ok {
						t.Errorf("%s %s: no .entry %s in the PTX", f, arch, k.Name)
						continue
					}
					if !bandwidthKernels[k.Name] {
						continue
					}
					if !strings.Contains(body, "ld.global.v4.") || !strings.Contains(body, "st.global.v4.") {
						t.Errorf("%s %s: %s has no 128-bit load or store", f, arch, k.Name)
					}
					if m := intDiv.FindString(body); m != "" {
						t.Errorf("%s %s: %s divides 64-bit integers (%s)", f, arch, k.Name, m)
					}
					if arch == "sm_80" && (k.Name == "weft_f32_to_f16" || k.Name == "weft_sum_f16") && !strings.Contains(body, "cvt.rn.f16x2.f32") {
						t.Errorf("%s %s: %s does not convert with cvt.rn.f16x2.f32", f, arch, k.Name)
					}
				}
			}
		}
	}
}

// ptxEntries splits PTX into its kernels' bodies, by name.
func ptxEntries(ptx string) map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(ptx, ".entry ")[1:] {
		name := part[:strings.IndexAny(part, "( \n")]
		out[name] = part
	}
	return out
}
