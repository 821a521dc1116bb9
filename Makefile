# Weft's build. `make demo` and `make test` are the README's two commands;
# both install what they need first (scripts/deps.sh).
GO      ?= go
NP      ?= 4
# Open MPI as root, oversubscribed, its own traffic on loopback (shared/ENV.md).
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
export OMPI_MCA_rmaps_base_oversubscribe := 1
export OMPI_MCA_btl_tcp_if_include := lo
export OMPI_MCA_oob_tcp_if_include := lo

.PHONY: all deps build demo test test-short vet fuzz bench bench-vs-mpi clean

all: build

deps:
	@scripts/deps.sh

# With Open MPI's headers (pkg-config ompi-c), weft also gets the mpi backend.
build:
	$(GO) build $$(pkg-config --exists ompi-c 2>/dev/null && echo -tags mpi) -o bin/weft ./cmd/weft

# The main job: NP ranks under mpirun, allreduce over Weft's own
# transports (shared memory on one host, TCP between hosts).
demo: deps build
	mpirun -np $(NP) -x WEFT_BACKEND=tcp bin/weft bench allreduce -b 8 -e 64M -f 4

# Every test: unit tests, the conformance suite over goroutines with -race,
# over shared memory and TCP under mpirun, in two network-namespace hosts,
# over the MPI backend (Open MPI, MPICH), the fault tests in separate
# processes, and the fuzz targets.
test: deps vet
	$(GO) test -race -timeout 30m ./...
	$(GO) test -race -tags mpi -timeout 20m ./collective/mpi/
	$(MAKE) fuzz FUZZTIME=10s

test-short: vet
	$(GO) test -short ./...

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	CGO_ENABLED=0 $(GO) vet ./...
	if pkg-config --exists ompi-c 2>/dev/null; then $(GO) vet -tags mpi ./...; fi
	if pkg-config --exists mpich 2>/dev/null; then $(GO) vet -tags mpi,mpich ./collective/mpi/; fi

FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzHeader$$' -fuzztime $(FUZZTIME) ./internal/wire
	$(GO) test -run '^$$' -fuzz '^FuzzHandshake$$' -fuzztime $(FUZZTIME) ./internal/wire
	$(GO) test -run '^$$' -fuzz '^FuzzExpandHostlist$$' -fuzztime $(FUZZTIME) ./internal/launch
	$(GO) test -run '^$$' -fuzz '^FuzzApply$$' -fuzztime $(FUZZTIME) ./internal/reduce
	$(GO) test -run '^$$' -fuzz '^FuzzParseFile$$' -fuzztime $(FUZZTIME) ./internal/rendezvous
	$(GO) test -run '^$$' -fuzz '^FuzzNativeEqualsGo$$' -fuzztime $(FUZZTIME) ./internal/reduce
	$(GO) test -run '^$$' -fuzz '^FuzzHello$$' -fuzztime $(FUZZTIME) ./collective/transport/shm
	$(GO) test -run '^$$' -fuzz '^FuzzEdgeList$$' -fuzztime $(FUZZTIME) ./internal/ingest
	$(GO) test -run '^$$' -fuzz '^FuzzNpy$$' -fuzztime $(FUZZTIME) ./internal/ingest
	$(GO) test -run '^$$' -fuzz '^FuzzIDX$$' -fuzztime $(FUZZTIME) ./graph
	$(GO) test -run '^$$' -fuzz '^FuzzOpen$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s ./hdf5io

bench:
	$(GO) test -run '^$$' -bench . -benchtime 200ms ./internal/reduce ./collective/

bench-vs-mpi: deps build
	scripts/bench-vs-mpi.sh

clean:
	rm -rf bin
