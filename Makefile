# Weft's build. `make demo` and `make test` are the README's two commands;
# both install what they need first (scripts/deps.sh).
GO      ?= go
NP      ?= 4
# Open MPI (4.1) as root, oversubscribed, its own traffic on loopback. mpirun
# refuses root unless both ALLOW variables are 1 (mpirun(1), "Running as
# root"); OMPI_MCA_<name> sets an MCA parameter (mpirun(1), "Setting MCA
# Parameters"): rmaps_base_oversubscribe lets NP exceed the cores, and
# btl_tcp_if_include / oob_tcp_if_include put MPI's and the launcher's TCP
# on lo (MPI's TCP leaves 127.0.0.1/8 out by default: btl_tcp_if_exclude in
# `ompi_info --param btl tcp --level 9`).
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
export OMPI_MCA_rmaps_base_oversubscribe := 1
export OMPI_MCA_btl_tcp_if_include := lo
export OMPI_MCA_oob_tcp_if_include := lo


# The go command through scripts/go-quiet.sh, which drops the C compiler's
# deprecation warnings of one third-party package (go-nvml's cgo wrappers
# of NVML's deprecated functions) and passes everything else through.
GOQ     = GO="$(GO)" scripts/go-quiet.sh

.PHONY: all deps build build-mpich demo demo-allreduce test test-short vet fuzz bench bench-vs-mpi bench-cluster clean

all: build

deps:
	@scripts/deps.sh

# With Open MPI's headers (pkg-config ompi-c), weft also gets the mpi backend.
build: deps
	$(GOQ) build $$(pkg-config --exists ompi-c 2>/dev/null && echo -tags mpi) -o bin/weft ./cmd/weft

# weft with the mpi backend linked against MPICH (pkg-config mpich), for
# mpiexec.mpich and srun --mpi=pmi2; bin/weft's Open MPI starts under
# mpirun and srun --mpi=pmix (docs/LAUNCH.md).
build-mpich: deps
	@pkg-config --exists mpich || { echo "build-mpich: MPICH's headers are missing (Debian: libmpich-dev)"; exit 1; }
	$(GOQ) build -tags mpi,mpich -o bin/weft-mpich ./cmd/weft

# The main job: distributed GNN training with the BGL pipeline. A
# Fashion-MNIST k-NN graph (20,000 real images, their labels and splits) is
# generated, partitioned into NP parts with BGL's partitioner, and NP ranks
# under mpirun train GraphSAGE on it over Weft's own transports (shared
# memory on one host, TCP between hosts), a table row per epoch.
DEMO ?= bin/demo-fmnist.h5
demo: deps build
	test -f $(DEMO) || bin/weft gen fmnist-knn --limit 10000 -o $(DEMO)
	bin/weft partition --algo bgl -k $(NP) --force $(DEMO)
	mpirun -np $(NP) -x WEFT_BACKEND=tcp bin/weft train gnn --data $(DEMO) --partition bgl --epochs 5 --batch 256 --dropout 0.2

# The collectives' table: allreduce on NP ranks, nccl-tests' columns.
demo-allreduce: deps build
	mpirun -np $(NP) -x WEFT_BACKEND=tcp bin/weft bench allreduce -b 8 -e 64M -f 4

# Every test: unit tests, the conformance suite over goroutines with -race,
# over shared memory and TCP under mpirun, in two network-namespace hosts,
# over the MPI backend (Open MPI, MPICH), the fault tests in separate
# processes, the launch tests (cmd/weft: every command of docs/LAUNCH.md
# and the README under mpirun, MPICH's mpiexec, torchrun where PyTorch is
# installed, and a Slurm cluster of this host the test starts as root),
# scripts/bench-cluster.sh in its small mode (and stopped by a signal: it
# must remove its test hosts), and the fuzz targets.
test: deps vet
	$(GOQ) test -race -timeout 30m ./...
	$(GOQ) test -race -tags mpi -timeout 20m ./collective/mpi/
	$(MAKE) fuzz FUZZTIME=300000x FUZZTIME_SLOW=20000x

test-short: vet
	$(GOQ) test -short ./...

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	$(GOQ) vet ./...
	CGO_ENABLED=0 $(GO) vet ./...
	if pkg-config --exists ompi-c 2>/dev/null; then $(GOQ) vet -tags mpi ./...; fi
	if pkg-config --exists mpich 2>/dev/null; then $(GOQ) vet -tags mpi,mpich ./collective/mpi/; fi

# FUZZTIME is a duration for runs by hand. make test gives counts (300000x):
# with a duration, Go 1.26's fuzz coordinator can fail a target with a bare
# "context deadline exceeded" at the deadline on a loaded machine (a race in
# the coordinator, go.dev/issue/75804, fixed in Go 1.27); a count has no
# deadline to race. FUZZTIME_SLOW is for FuzzOpen (a few hundred libhdf5
# opens a second).
FUZZTIME ?= 30s
FUZZTIME_SLOW ?= $(FUZZTIME)
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzHeader$$' -fuzztime $(FUZZTIME) ./internal/wire
	$(GO) test -run '^$$' -fuzz '^FuzzHandshake$$' -fuzztime $(FUZZTIME) ./internal/wire
	$(GO) test -run '^$$' -fuzz '^FuzzExpandHostlist$$' -fuzztime $(FUZZTIME) ./internal/launch
	$(GO) test -run '^$$' -fuzz '^FuzzApply$$' -fuzztime $(FUZZTIME) ./internal/reduce
	$(GO) test -run '^$$' -fuzz '^FuzzParseFile$$' -fuzztime $(FUZZTIME) ./internal/rendezvous
	$(GO) test -run '^$$' -fuzz '^FuzzRequest$$' -fuzztime $(FUZZTIME) ./internal/rendezvous
	$(GO) test -run '^$$' -fuzz '^FuzzAccept$$' -fuzztime $(FUZZTIME) ./collective/transport/tcp
	$(GO) test -run '^$$' -fuzz '^FuzzNativeEqualsGo$$' -fuzztime $(FUZZTIME) ./internal/reduce
	$(GO) test -run '^$$' -fuzz '^FuzzHello$$' -fuzztime $(FUZZTIME) ./collective/transport/shm
	$(GO) test -run '^$$' -fuzz '^FuzzParseAnswer$$' -fuzztime $(FUZZTIME) ./collective/mpi
	$(GO) test -run '^$$' -fuzz '^FuzzSignatures$$' -fuzztime $(FUZZTIME) ./collective/mpi
	$(GO) test -run '^$$' -fuzz '^FuzzEdgeList$$' -fuzztime $(FUZZTIME) ./ingest
	$(GO) test -run '^$$' -fuzz '^FuzzNpy$$' -fuzztime $(FUZZTIME) ./ingest
	$(GO) test -run '^$$' -fuzz '^FuzzIDX$$' -fuzztime $(FUZZTIME) ./ingest/fmnist
	$(GO) test -run '^$$' -fuzz '^FuzzOpen$$' -fuzztime $(FUZZTIME_SLOW) -fuzzminimizetime 2s ./hdf5io

bench:
	$(GO) test -run '^$$' -bench . -benchtime 200ms ./internal/reduce ./collective/

bench-vs-mpi: deps build
	scripts/bench-vs-mpi.sh

# Weft beside Open MPI on an emulated cluster: test hosts in network
# namespaces on this machine, links shaped by tc (root; about 10 minutes).
bench-cluster: deps
	scripts/bench-cluster.sh

clean:
	rm -rf bin

# GPU validation, in two halves: here (a Go toolchain, no GPU needed) build
# the test binaries and weft into bin/gpu, with every shared library they
# link except the C library's (the GPU machine has no libhdf5 or
# OpenBLAS), and pack them into bin/gpu.tar.xz (GPUDIR=dir: dir/gpu.tar.xz;
# xz, because gzip's 75 MiB would not travel: a device run carries 64 MiB
# with the source tree);
# on the GPU machine (CUDA 13
# driver, NCCL, the CUDA runtime and NVRTC from NVIDIA's Python wheels, no
# Go, no Fashion-MNIST: the first 12,000 training and 2,000 test images
# travel with the binaries) unpack it and run gpu/gpu-check.sh. The device
# run takes under 8 minutes; scripts/gpu-check.sh says what it runs.
GPU_TESTS = cuda collective/nccl gpu collective nn gnn/model gnn/spgnn sapipe psmode gnn/feature gnn/pipeline gnn/train
GPUDIR ?= bin
.PHONY: gpu-check
gpu-check:
	rm -rf $(GPUDIR)/gpu && mkdir -p $(GPUDIR)/gpu/lib
	for p in $(GPU_TESTS); do $(GO) test -c -ldflags='-s -w' -o $(GPUDIR)/gpu/$$(echo $$p | tr / _).test ./$$p || exit 1; done
	$(GO) build -ldflags='-s -w' -o $(GPUDIR)/gpu/weft ./cmd/weft
	cp scripts/gpu-check.sh scripts/peers/torch_kernels.py scripts/peers/torch_sage_gpu.py $(GPUDIR)/gpu/
	/usr/bin/python3 scripts/fmnist-subset.py /usr/share/datasets/fashion-mnist $(GPUDIR)/gpu/fmnist 12000 2000
	for f in $(GPUDIR)/gpu/weft $(GPUDIR)/gpu/*.test; do ldd $$f; done | awk '$$3 ~ /^\// {print $$3}' | sort -u | \
		grep -Ev '/(libc|libm|libdl|librt|libpthread|libresolv|ld-linux[^/]*)\.so' | xargs -r cp -L -t $(GPUDIR)/gpu/lib
	XZ_OPT=-T0 tar -C $(GPUDIR) -cJf $(GPUDIR)/gpu.tar.xz gpu
	@size=$$(stat -c %s $(GPUDIR)/gpu.tar.xz); echo "gpu-check: $(GPUDIR)/gpu.tar.xz, $$((size >> 20)) MiB; on the GPU machine: tar xJf gpu.tar.xz -C /tmp && /tmp/gpu/gpu-check.sh"; \
		test $$size -lt $$((56 << 20)) || { echo "gpu-check: $(GPUDIR)/gpu.tar.xz is over 56 MiB, too large to carry to the GPU machine beside the source tree"; exit 1; }
