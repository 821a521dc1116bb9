#!/usr/bin/env bash
# Installs the Debian packages Weft's build and tests need, if any is
# missing. Idempotent and quiet when everything is present. Without root it
# prints the exact command to run and stops.
set -euo pipefail

packages=(
  openmpi-bin libopenmpi-dev   # mpirun for multi-process tests and the demo; the MPI peer benchmark
  mpich libmpich-dev           # the mpi backend's MPICH build and its test (beside Open MPI, which stays the default)
  iproute2 util-linux          # ip netns and unshare: the multi-host test's hosts
  slurm-wlm munge              # srun, sbatch and a one-host Slurm cluster TestSlurm starts (its own config, ports and key)
  python3-torch                # torchrun for TestTorchrun (about 250 MB with libtorch); the PyTorch peers in scripts/peers
  libhdf5-dev hdf5-tools       # package hdf5's cgo binding; h5dump for the interop tests
  python3-h5py python3-numpy   # interop tests (h5py writes, reads) and the numpy+h5py convert baseline
  dataset-fashion-mnist        # the real Fashion-MNIST for weft gen fmnist-knn and its tests
  libmetis-dev                 # partition's METIS baseline (cgo)
  libopenblas-dev              # nn's sgemm (cgo)
  time                         # GNU time: peak memory in scripts/bench-convert.sh
  clang-14                     # cuda's TestKernelsCompileToPTX: every CUDA kernel compiled to PTX without the CUDA toolkit
  pkg-config gcc make
)

missing=()
for p in "${packages[@]}"; do
  [[ $p == \#* ]] && continue
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ! command -v go >/dev/null 2>&1; then
  echo "deps: Go 1.26 is not on PATH (https://go.dev/dl/; /usr/local/go/bin)" >&2
  exit 1
fi
[ ${#missing[@]} -eq 0 ] && exit 0

cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing Debian packages: ${missing[*]}" >&2
  echo "deps: run as root:  $cmd" >&2
  exit 1
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq </dev/null >/dev/null
apt-get install -y -qq "${missing[@]}" </dev/null >/dev/null
