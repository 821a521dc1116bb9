// Package gpu finds NVIDIA GPUs and their topology through NVML
// (github.com/NVIDIA/go-nvml, which dlopens libnvidia-ml.so.1), and says
// which device each local rank takes.
//
// Discover lists the devices (name, UUID, PCIe bus id, memory, compute
// capability) and, for every pair, the link between them: NVLink (how many
// links), or the PCIe level of their common ancestor as nvidia-smi topo -m
// prints it (PIX, PXB, PHB, NODE, SYS), and whether peer-to-peer access is
// possible. Without a driver it returns an error wrapping ErrNoDriver that
// reads "no NVIDIA driver (libnvidia-ml.so.1 not found)"; a binary built
// without cgo returns one wrapping ErrNotBuilt. `weft gpus` prints the
// table.
//
// LocalDevice maps a local rank to a device, one GPU per local rank:
// local rank r takes the r-th visible device. CUDA_VISIBLE_DEVICES (a list
// of indices or UUIDs) restricts and orders what is visible; the CUDA
// ordinal a rank passes to nccl.WithDevice is then r itself, and the NVML
// index (to query the device) is the r-th entry. Indices in
// CUDA_VISIBLE_DEVICES follow CUDA's order, which equals NVML's PCI order
// only with CUDA_DEVICE_ORDER=PCI_BUS_ID: set it on machines with mixed
// GPU models (scripts/gpu-check.sh does). This package does not read it.
//
// Build: cgo for NVML; no NVIDIA header or library at build time.
// Environment: CUDA_VISIBLE_DEVICES (read, never set).
// Everything here may be called from any goroutine.
package gpu
