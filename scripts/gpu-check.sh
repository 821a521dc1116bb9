#!/usr/bin/env bash
# gpu-check.sh: Weft's GPU validation, run on a machine with an NVIDIA GPU
# and no Go toolchain. `make gpu-check` builds what it runs into bin/gpu
# and copies this script there; run bin/gpu/gpu-check.sh [BINDIR].
#
# It finds NCCL in the nvidia-nccl-cu13 wheel (and the other nvidia-*
# wheels' lib directories: CUDA runtime, NVRTC) through python3, sets
# LD_LIBRARY_PATH, and runs with WEFT_GPU_TESTS=1 so that a missing GPU or
# library fails instead of skipping:
#   1. weft gpus                   NVML discovery table
#   2. cuda.test                   kernel table and CPU references
#   3. gpu.test                    topology and local-rank mapping
#   4. nccl.test                   NCCL collectives on device buffers (one
#                                  rank; two communicators on one device
#                                  when NCCL allows), every kernel against
#                                  its CPU reference bit for bit, and the
#                                  kernel bandwidth table
# Each step has a time limit; the whole run stays under 5 minutes.
set -uo pipefail

bindir=${1:-$(cd "$(dirname "$0")" && pwd)}
if [[ ! -x $bindir/nccl.test ]]; then
	if [[ -x bin/gpu/nccl.test ]]; then bindir=bin/gpu; else
		echo "gpu-check: no nccl.test in $bindir: run make gpu-check on the build machine first" >&2
		exit 2
	fi
fi

py=python3
libdirs=()
if nccl=$($py -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null) && [[ -d $nccl/lib ]]; then
	libdirs+=("$nccl/lib")
elif nccl=$($py -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null) && [[ -d $nccl/lib ]]; then
	libdirs+=("$nccl/lib") # namespace package: no __file__
else
	echo "gpu-check: NCCL not found in python3 ($($py -c 'import sys; print(sys.executable)' 2>&1)): pip install nvidia-nccl-cu13" >&2
fi
# Every nvidia-* wheel's lib directory (cuda_runtime, cuda_nvrtc, cu13, ...).
while IFS= read -r d; do [[ -n $d ]] && libdirs+=("$d"); done < <($py - <<'PY' 2>/dev/null
import glob, os
try:
    import nvidia
except ImportError:
    raise SystemExit
for p in nvidia.__path__:
    for d in sorted(glob.glob(os.path.join(p, "*", "lib")) + glob.glob(os.path.join(p, "*", "*", "lib"))):
        print(d)
PY
)
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [[ -d $d ]] && libdirs+=("$d"); done
LD_LIBRARY_PATH=$(IFS=:; echo "${libdirs[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH WEFT_GPU_TESTS=1 CUDA_DEVICE_ORDER=PCI_BUS_ID NCCL_DEBUG=${NCCL_DEBUG:-WARN}
echo "gpu-check: LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
for lib in libnccl.so.2 libcudart.so.13 libnvrtc.so.13 libcuda.so.1; do
	found=$(for d in ${LD_LIBRARY_PATH//:/ }; do ls "$d/$lib" 2>/dev/null; done | head -1)
	echo "gpu-check: $lib: ${found:-$(ldconfig -p 2>/dev/null | grep -m1 " $lib " | sed 's/.*=> //' || true)}"
done
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv

fail=0
step() { # step NAME SECONDS CMD...
	local name=$1 secs=$2
	shift 2
	echo
	echo "=== $name"
	local t0=$SECONDS
	timeout "$secs" "$@"
	local rc=$?
	echo "=== $name: exit $rc in $((SECONDS - t0)) s"
	[[ $rc -eq 0 ]] || fail=1
}
step "weft gpus" 30 "$bindir/weft" gpus
step "cuda (device layer, kernels)" 60 "$bindir/cuda.test" -test.v -test.count=1
step "gpu (NVML)" 30 "$bindir/gpu.test" -test.v -test.count=1
step "nccl (collectives, kernels, bandwidth)" 200 "$bindir/nccl.test" -test.v -test.count=1 -test.timeout=190s
echo
if [[ $fail -eq 0 ]]; then echo "gpu-check: PASS"; else echo "gpu-check: FAIL"; fi
exit $fail
