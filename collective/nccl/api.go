package nccl

import (
	"fmt"
	"sync"

	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/internal/dl"
)

// UniqueID is an ncclUniqueId: 128 opaque bytes that rank 0 creates and
// every rank passes to communicator creation.
type UniqueID [128]byte

// ncclAPI is NCCL's entry points as Go functions (handles and device
// pointers are uintptr); bindNCCL fills it through a dl.Binder, from the
// trampolines of cfunc_cgo.go or a fake's Go functions. Field keys name
// the C symbol.
type ncclAPI struct {
	getVersion         func(v *int32) Result
	getUniqueID        func(id *UniqueID) Result
	commInitRankConfig func(comm *uintptr, nranks int32, id *UniqueID, rank int32, blocking bool) Result
	commSplit          func(comm uintptr, color, key int32, newcomm *uintptr, blocking bool) Result // optional (2.18+)
	commGetAsyncError  func(comm uintptr, async *Result) Result
	commCount          func(comm uintptr, n *int32) Result
	commUserRank       func(comm uintptr, rank *int32) Result
	commAbort          func(comm uintptr) Result
	commFinalize       func(comm uintptr) Result
	commDestroy        func(comm uintptr) Result
	getLastError       func(comm uintptr) string // optional (2.13+)
	allReduce          func(send, recv uintptr, count uint64, dt, op int32, comm, stream uintptr) Result
	broadcast          func(send, recv uintptr, count uint64, dt, root int32, comm, stream uintptr) Result
	reduce             func(send, recv uintptr, count uint64, dt, op, root int32, comm, stream uintptr) Result
	allGather          func(send, recv uintptr, count uint64, dt int32, comm, stream uintptr) Result
	reduceScatter      func(send, recv uintptr, count uint64, dt, op int32, comm, stream uintptr) Result
	send               func(buf uintptr, count uint64, dt, peer int32, comm, stream uintptr) Result
	recv               func(buf uintptr, count uint64, dt, peer int32, comm, stream uintptr) Result
	groupStart         func() Result
	groupEnd           func() Result
}

func bindNCCL(b *dl.Binder) *ncclAPI {
	a := &ncclAPI{}
	b.Fn("ncclGetVersion", &a.getVersion, false)
	b.Fn("ncclGetUniqueId", &a.getUniqueID, false)
	b.Fn("ncclCommInitRankConfig", &a.commInitRankConfig, false) // 2.14+
	b.Fn("ncclCommSplit", &a.commSplit, true)
	b.Fn("ncclCommGetAsyncError", &a.commGetAsyncError, false)
	b.Fn("ncclCommCount", &a.commCount, false)
	b.Fn("ncclCommUserRank", &a.commUserRank, false)
	b.Fn("ncclCommAbort", &a.commAbort, false)
	b.Fn("ncclCommFinalize", &a.commFinalize, false)
	b.Fn("ncclCommDestroy", &a.commDestroy, false)
	b.Fn("ncclGetLastError", &a.getLastError, true)
	b.Fn("ncclAllReduce", &a.allReduce, false)
	b.Fn("ncclBroadcast", &a.broadcast, false)
	b.Fn("ncclReduce", &a.reduce, false)
	b.Fn("ncclAllGather", &a.allGather, false)
	b.Fn("ncclReduceScatter", &a.reduceScatter, false)
	b.Fn("ncclSend", &a.send, false)
	b.Fn("ncclRecv", &a.recv, false)
	b.Fn("ncclGroupStart", &a.groupStart, false)
	b.Fn("ncclGroupEnd", &a.groupEnd, false)
	return a
}

var ncclSpec = dl.Spec{Lib: "libnccl.so.2", Names: []string{"libnccl.so.2", "libnccl.so"}, Env: "WEFT_LIBNCCL",
	Hint: "install NCCL (pip install nvidia-nccl-cu13) and add its lib directory to LD_LIBRARY_PATH: " +
		`export LD_LIBRARY_PATH=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))')/lib:$LD_LIBRARY_PATH` +
		", or set WEFT_LIBNCCL to the file"}

// library is NCCL, loaded on first use through a loader: the package has
// one (std) over dlopen, tests make their own over a fake.
type library struct {
	ld dl.Loader

	mu     sync.Mutex
	lib    *dl.Lib
	api    *ncclAPI
	err    error
	closed bool
}

// std is the process's NCCL: dlopen, or the fake NCCL when the device
// layer is the host-memory fake (decided on first use).
var std = &library{}

// load loads and binds NCCL once; the outcome, error included, is kept.
func (l *library) load() (*ncclAPI, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, fmt.Errorf("nccl: library unloaded: %w", ErrClosed)
	}
	if l.api != nil || l.err != nil {
		return l.api, l.err
	}
	if l.ld == nil {
		l.ld = dl.Loader(dl.Dlopen{})
		if cuda.IsFake() {
			l.ld = theFake
		}
	}
	d, err := dl.Load(l.ld, ncclSpec, ncclSpec.Candidates(envLib(ncclSpec.Env), cudaHome()))
	if err == nil {
		b := &dl.Binder{Lib: d, Tramp: cfunc}
		a := bindNCCL(b)
		if err = b.Err; err != nil {
			d.Close()
		} else {
			l.lib, l.api = d, a
		}
	}
	if err != nil {
		err = fmt.Errorf("nccl: %w", err)
	}
	l.err = err
	return l.api, l.err
}

// close unloads NCCL; a second call returns an error wrapping ErrClosed.
// Only tests call it.
func (l *library) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	l.api = nil
	if l.lib != nil {
		return l.lib.Close()
	}
	return nil
}

// Version returns NCCL's version as it encodes it (22809 is 2.28.9), or
// the error that says what to install.
func Version() (int, error) {
	api, err := std.load()
	if err != nil {
		return 0, err
	}
	var v int32
	if r := api.getVersion(&v); r != Success {
		return 0, fmt.Errorf("nccl: ncclGetVersion: %w", r)
	}
	return int(v), nil
}

// Available reports whether NCCL can be used here: nil when it loads (the
// fake NCCL when the device layer is the fake), else the error that says
// what to install.
func Available() error {
	_, err := std.load()
	return err
}
