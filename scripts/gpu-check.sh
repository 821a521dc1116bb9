#!/usr/bin/env bash
# gpu-check.sh: Weft's GPU validation, run on a machine with an NVIDIA GPU
# and no Go toolchain. `make gpu-check` builds what it runs into bin/gpu
# (test binaries, weft, the shared libraries they link in lib/) and packs
# bin/gpu.tar.xz; on the GPU machine:
#
#   tar xJf bin/gpu.tar.xz -C /tmp && /tmp/gpu/gpu-check.sh
#
# (where tar lacks xz: python3 -m tarfile -e gpu.tar.xz /tmp)
#
# It finds NCCL, the CUDA runtime, NVRTC and cuBLAS in NVIDIA's Python
# wheels (nvidia-nccl-cu13, nvidia-cuda-runtime, ...) through python3 and
# CUDA_HOME, sets LD_LIBRARY_PATH, and runs with WEFT_GPU_TESTS=1 so that a
# missing GPU or library fails instead of skipping:
#   1. weft gpus                 NVML discovery table
#   2. cuda.test                 device layer: memory, streams, events,
#                                pinned copies, GEMM in each math, the
#                                built-in kernels bit for bit
#   3. nn, gnn_model, gnn_spgnn  the training kernels bit for bit (nn:
#                                layers, optimizers, MLP and CNN trained on
#                                the device against the CPU, TF32/BF16 cost)
#   4. gpu.test                  topology and local-rank mapping
#   5. collective_nccl.test      NCCL collectives on device buffers
#   6. collective.test           the conformance suite on device buffers:
#                                staged (ranks sharing the GPU) and NCCL
#   7. weft bench --device cuda  every collective, NCCL (one rank) and
#                                staged (two ranks on the GPU), nccl-tests'
#                                columns with #wrong
#   8. weft bench kernels        the kernels' bandwidth beside the
#                                device-to-device copy and PyTorch's (when
#                                python3 has torch: scripts/peers/torch_kernels.py)
#   9. sapipe, psmode, gnn tests the models and trainers on the device
#                                against the CPU (-run Device)
#  10. weft train mlp --device cuda
#                                SAPipe against BSP, two ranks on the GPU
#                                (staged), at 10 Gbit/s emulated and
#                                unthrottled, and one rank's accuracy
#                                (gpu-train.txt; the Fashion-MNIST subset
#                                packed beside the binaries)
#  11. weft train gnn --device cuda
#                                the 100k-node SBM at batch 512 and 4096,
#                                BGL's cache of 20% against none, beside
#                                scripts/peers/torch_sage_gpu.py sampling
#                                on the GPU and on the CPU (gpu-gnn.txt)
#  12. weft ps bench --device cuda
#                                static assignment against PSLD under a 3x
#                                straggler, GPU workers (gpu-ps.txt)
# Each step has a time limit; the whole run stays under 8 minutes. Output
# files (the tables) go to OUT, default the current directory.
#
# GPU_CHECK_FAKE=1 runs the same steps on a machine without a GPU over the
# host-memory fake of the device layer (WEFT_FAKE_GPUS=2, small sizes), to
# check this script and the binaries' plumbing (make test does, in
# scripts/gpu_check_test.go); it measures nothing.
set -uo pipefail

bindir=${1:-$(cd "$(dirname "$0")" && pwd)}
out=${OUT:-.}
if [[ ! -x $bindir/collective_nccl.test ]]; then
	echo "gpu-check: no collective_nccl.test in $bindir: run make gpu-check on the build machine first" >&2
	exit 2
fi

py=python3
libdirs=("$bindir/lib")
# Every nvidia-* wheel's lib directory (nccl, cuda_runtime, cuda_nvrtc,
# cublas, cu13, ...): the packages are namespace packages, so look in
# their __path__.
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
for d in ${CUDA_HOME:+$CUDA_HOME/lib64} /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [[ -d $d ]] && libdirs+=("$d"); done
LD_LIBRARY_PATH=$(IFS=:; echo "${libdirs[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH WEFT_GPU_TESTS=1 WEFT_PROGRESS=0 CUDA_DEVICE_ORDER=PCI_BUS_ID NCCL_DEBUG=${NCCL_DEBUG:-WARN}
big=1G mid=256M small=64M
if [[ ${GPU_CHECK_FAKE:-} == 1 ]]; then
	export WEFT_FAKE_GPUS=2
	unset WEFT_GPU_TESTS
	big=1M mid=1M small=64K
	echo "gpu-check: GPU_CHECK_FAKE=1: the host-memory fake, nothing measured"
fi
echo "gpu-check: LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
for lib in libnccl.so.2 libcudart.so.13 libnvrtc.so.13 libcublas.so.13 libcuda.so.1; do
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
step "cuda (device layer, built-in kernels)" 60 "$bindir/cuda.test" -test.v -test.count=1 -test.run 'GPU'
step "nn, gnn/model, gnn/spgnn (training kernels)" 90 bash -c "for t in nn gnn_model gnn_spgnn; do '$bindir/'\$t.test -test.v -test.count=1 -test.run 'Kernel' || exit 1; done"
step "gpu (NVML)" 30 "$bindir/gpu.test" -test.v -test.count=1
step "nccl (collectives on device buffers)" 60 "$bindir/collective_nccl.test" -test.v -test.count=1 -test.timeout=55s
step "collective (conformance on device buffers)" 90 "$bindir/collective.test" -test.count=1 -test.run 'Device' -test.timeout=85s
bench() { # bench OP LOCAL MAXBYTES
	"$bindir/weft" bench "$1" --device cuda --local "$2" -b 8 -e "$3" -f 8 -n 20 | tee -a "$out/gpu-bench.txt"
	[[ ${PIPESTATUS[0]} -eq 0 ]]
}
: >"$out/gpu-bench.txt"
step "weft bench --device cuda (one rank: NCCL)" 60 bash -c "$(declare -f bench); bindir='$bindir' out='$out'; bench allreduce 1 $big && for op in allgather broadcast reducescatter reduce alltoall; do bench \$op 1 $small || exit 1; done"
step "weft bench --device cuda (two ranks on one GPU: staged)" 90 bash -c "$(declare -f bench); bindir='$bindir' out='$out'; bench allreduce 2 $mid && for op in allgather broadcast reducescatter reduce alltoall; do bench \$op 2 $small || exit 1; done"
peer=()
if $py -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
	step "PyTorch peer (scripts/peers/torch_kernels.py)" 60 $py "$bindir/torch_kernels.py" --out "$out/torch-kernels.json"
	[[ -s $out/torch-kernels.json ]] && peer=(--peer "$out/torch-kernels.json")
fi
kn=()
[[ ${GPU_CHECK_FAKE:-} == 1 ]] && kn=(-n 4096 -r 3)
step "weft bench kernels" 60 bash -c "set -o pipefail; '$bindir/weft' bench kernels --device cuda ${kn[*]} ${peer[*]} | tee '$out/gpu-kernels.txt'"

# Training on the device (issue 31). Sizes: the fake's are small enough for
# make test; the GPU's are the targets' (docs/BENCHMARKS.md).
gn=100000 epochs=2 steps=40 fmlimit=12000
[[ ${GPU_CHECK_FAKE:-} == 1 ]] && gn=1500 epochs=1 steps=12 fmlimit=600
step "sapipe, psmode, gnn (trainers on the device against the CPU)" 240 bash -c "for t in sapipe psmode gnn_model gnn_spgnn gnn_feature gnn_pipeline gnn_train; do '$bindir/'\$t.test -test.count=1 -test.run Device -test.timeout=200s || exit 1; done"
train_mlp() { # train_mlp ARGS...: one run, its epoch and final lines
	echo "weft train mlp $*" | tee -a "$out/gpu-train.txt"
	"$bindir/weft" train mlp --data "$bindir/fmnist" --limit "$fmlimit" --device cuda --every 0 --epochs "$epochs" "$@" | tee -a "$out/gpu-train.txt"
	[[ ${PIPESTATUS[0]} -eq 0 ]]
}
: >"$out/gpu-train.txt"
step "weft train mlp --device cuda (SAPipe against BSP; two ranks on one GPU against one)" 180 bash -c "$(declare -f train_mlp); bindir='$bindir' out='$out' epochs=$epochs fmlimit=$fmlimit
	for g in 10 0; do for m in bsp sapipe; do train_mlp --local 2 --mode \$m --net-gbps \$g || exit 1; done; done
	train_mlp --local 1 --mode bsp"
: >"$out/gpu-gnn.txt"
torch_gpu=0
$py -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null && torch_gpu=1
step "weft train gnn --device cuda (and the PyTorch GPU peer)" 240 bash -c "set -o pipefail
	'$bindir/weft' gen sbm --nodes $gn --blocks 10 --deg-in 12 --deg-out 8 --feat-dim 32 --noise 4 -o '$out/sbm.h5' 2>/dev/null || exit 1
	for b in 512 4096; do
		for cache in fifo none; do
			echo \"weft train gnn --batch \$b --cache-policy \$cache\" | tee -a '$out/gpu-gnn.txt'
			'$bindir/weft' train gnn --data '$out/sbm.h5' --device cuda --fanout 10,5 --hidden 128 --batch \$b --epochs $epochs --cache 20% --cache-policy \$cache | tee -a '$out/gpu-gnn.txt' || exit 1
		done
		if [[ $torch_gpu == 1 ]]; then
			for on in device cpu; do
				echo \"torch_sage_gpu.py --batch \$b --sample-on \$on\" | tee -a '$out/gpu-gnn.txt'
				$py '$bindir/torch_sage_gpu.py' '$out/sbm.h5' --device cuda --sample-on \$on --fanout 10,5 --hidden 128 --batch \$b --epochs $epochs | tee -a '$out/gpu-gnn.txt' || exit 1
			done
		fi
	done"
step "weft ps bench --device cuda (PSLD against static, 3x straggler)" 180 bash -c "set -o pipefail; '$bindir/weft' ps bench --device cuda --data '$bindir/fmnist' --limit $fmlimit --steps $steps --factor 3 | tee '$out/gpu-ps.txt'"
echo
if [[ $fail -eq 0 ]]; then echo "gpu-check: PASS"; else echo "gpu-check: FAIL"; fi
exit $fail
