package nccl

import (
	"crypto/rand"
	"fmt"
	"os"
	"reflect"
	"sort"
	"sync"
	"unsafe"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/internal/dl"
	"github.com/weft-hpc/weft/internal/reduce"
)

// The fake NCCL: what this package loads when the device layer is the
// host-memory fake (cuda.UseFake, WEFT_FAKE_GPUS), whose memory a real
// NCCL cannot reach. It is an NCCL for ranks that are goroutines of one
// process, over the fake's device memory and streams: each operation is
// queued on its stream (cuda.FakeEnqueue) and, when the stream reaches it,
// waits for the same operation of every rank, computes this rank's result
// from every rank's buffers with internal/reduce, waits until every rank
// has read what it needs, and writes it. Point-to-point calls queue their
// message, copied when the sender's stream reaches it, and the receive
// waits for it. ncclCommAbort ends the waits of a communicator's
// operations. A unique id names the process, so ranks of other processes
// never join (the front end does not ask for NCCL across processes on fake
// devices). The orchestration above NCCL (package collective's device
// path, Conn) is thereby tested on every commit.
type fakeNCCL struct {
	mu     sync.Mutex
	cond   *sync.Cond
	next   uintptr
	comms  map[uintptr]*fcomm
	worlds map[UniqueID]*fworld
	groups map[int]*fgroup // per OS thread, between ncclGroupStart and ncclGroupEnd
}

type fworld struct {
	size    int
	aborted bool // a rank aborted: every rank's operations end (NCCL: a remote error)
	joined  int
	ops     map[uint64]*fop
	mail    map[[2]int][][]byte // (src, dst) -> messages in order
	splits  map[uint64]*fsplit
}

type fcomm struct {
	w       *fworld
	rank    int
	seq     uint64 // collectives issued
	splits  uint64
	aborted bool
	err     Result
}

// fop is one collective of a world: each rank's arguments, and how far
// the ranks are.
type fop struct {
	kind          string
	args          []fargs
	arrived, read int
	bad           bool // ranks called different collectives
}

type fargs struct {
	send, recv uintptr
	count      int
	dt         driver.DType
	op         driver.Op
	root       int
	ok         bool
}

type fsplit struct {
	color, key []int32
	arrived    int
	news       map[int32]*fworld
}

type fgroup struct {
	depth int
	ops   []func() Result
	sends []func() Result
}

var theFake = &fakeNCCL{comms: map[uintptr]*fcomm{}, worlds: map[UniqueID]*fworld{}, groups: map[int]*fgroup{}}

func init() { theFake.cond = sync.NewCond(&theFake.mu) }

// fakeLib is the fake's one library.
type fakeLib struct{ f *fakeNCCL }

func (f *fakeNCCL) Open(path string) (dl.Library, error) { return fakeLib{f}, nil }

func (fakeLib) Sym(name string) (unsafe.Pointer, error) {
	return nil, fmt.Errorf("the fake NCCL supplies Go functions only: %s", name)
}
func (fakeLib) Close() error { return nil }

func (l fakeLib) GoSym(key string, typ reflect.Type) any { return l.f.table()[key] }

func (f *fakeNCCL) handle() uintptr {
	f.next += 0x10
	return f.next
}

// comm returns a live communicator of the fake, or the result to return.
func (f *fakeNCCL) comm(h uintptr) (*fcomm, Result) {
	c, ok := f.comms[h]
	switch {
	case !ok:
		return nil, InvalidArgument
	case c.aborted:
		return nil, InvalidUsage
	}
	return c, Success
}

// queue runs enqueue now, or at the end of this thread's group.
func (f *fakeNCCL) queue(send bool, enqueue func() Result) Result {
	f.mu.Lock()
	g := f.groups[gettid()]
	f.mu.Unlock()
	if g != nil && g.depth > 0 {
		if send {
			g.sends = append(g.sends, enqueue)
		} else {
			g.ops = append(g.ops, enqueue)
		}
		return Success
	}
	return enqueue()
}

// collective queues a collective of communicator h on stream s: when the
// stream reaches it, compute gets every rank's arguments and returns this
// rank's result, written to recv once every rank has computed.
func (f *fakeNCCL) collective(kind string, h, s uintptr, a fargs, out func(all []fargs, me int) ([]byte, error)) Result {
	if a.dt == 0 {
		return InvalidArgument
	}
	return f.queue(false, func() Result {
		f.mu.Lock()
		c, r := f.comm(h)
		if r != Success {
			f.mu.Unlock()
			return r
		}
		seq := c.seq
		c.seq++
		w := c.w
		op := w.ops[seq]
		if op == nil {
			op = &fop{kind: kind, args: make([]fargs, w.size)}
			w.ops[seq] = op
		}
		f.mu.Unlock()
		err := cuda.FakeEnqueue(s, func() {
			f.mu.Lock()
			if op.kind != kind {
				op.bad = true // NCCL would hang or corrupt; the fake fails every rank
			}
			a.ok = true
			op.args[c.rank] = a
			op.arrived++
			f.cond.Broadcast()
			for op.arrived < w.size && !w.aborted {
				f.cond.Wait()
			}
			if w.aborted {
				c.err = RemoteError
				f.mu.Unlock()
				return
			}
			bad := op.bad
			f.mu.Unlock()
			var res []byte
			if !bad {
				res, _ = out(op.args, c.rank)
			}
			f.mu.Lock()
			if bad {
				c.err = InvalidUsage
			}
			op.read++
			f.cond.Broadcast()
			for op.read < w.size && !w.aborted {
				f.cond.Wait()
			}
			if op.read == w.size && c.rank == 0 {
				delete(w.ops, seq)
			}
			f.mu.Unlock()
			if res != nil && !w.aborted {
				if dst, err := cuda.FakeBytes(cuda.DevicePtr(a.recv), len(res)); err == nil {
					copy(dst, res)
				}
			}
		})
		if err != nil {
			return UnhandledCudaError
		}
		return Success
	})
}

func bytesAt(p uintptr, n int) []byte {
	b, err := cuda.FakeBytes(cuda.DevicePtr(p), n)
	if err != nil {
		panic(err) // an illegal address: the fake stream turns it into CUDA's sticky error
	}
	return b
}

var fakeTypes = map[int32]driver.DType{0: driver.Uint8, 1: driver.Uint8, 2: driver.Int32, 4: driver.Int64,
	6: driver.Float16, 7: driver.Float32, 8: driver.Float64, 9: driver.BFloat16}

var fakeOps = map[int32]driver.Op{0: driver.Sum, 1: driver.Prod, 2: driver.Max, 3: driver.Min, 4: driver.Avg}

func (f *fakeNCCL) table() map[string]any {
	reduceAll := func(all []fargs, n int) []byte {
		dt, op := all[0].dt, all[0].op
		acc := append([]byte(nil), bytesAt(all[0].send, n*dt.Size())...)
		for _, x := range all[1:] {
			reduce.Apply(dt, op, acc, acc, bytesAt(x.send, n*dt.Size()))
		}
		if op == driver.Avg {
			reduce.Scale(dt, acc, len(all))
		}
		return acc
	}
	return map[string]any{
		"ncclGetVersion": func(v *int32) Result { *v = 22809; return Success },
		"ncclGetUniqueId": func(id *UniqueID) Result {
			rand.Read(id[:])
			copy(id[:], fmt.Sprintf("weft fake nccl %d ", os.Getpid()))
			return Success
		},
		"ncclCommInitRankConfig": func(comm *uintptr, nranks int32, id *UniqueID, rank int32, blocking bool) Result {
			if blocking || rank < 0 || rank >= nranks {
				return InvalidArgument
			}
			if string(id[:len(fmt.Sprintf("weft fake nccl %d ", os.Getpid()))]) != fmt.Sprintf("weft fake nccl %d ", os.Getpid()) {
				return InvalidUsage // an id of another process: the fake is one process
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			w := f.worlds[*id]
			if w == nil {
				w = &fworld{size: int(nranks), ops: map[uint64]*fop{}, mail: map[[2]int][][]byte{}, splits: map[uint64]*fsplit{}}
				f.worlds[*id] = w
			}
			w.joined++
			*comm = f.handle()
			f.comms[*comm] = &fcomm{w: w, rank: int(rank)}
			return InProgress
		},
		"ncclCommSplit": func(h uintptr, color, key int32, newcomm *uintptr, blocking bool) Result {
			f.mu.Lock()
			defer f.mu.Unlock()
			c, r := f.comm(h)
			if r != Success {
				return r
			}
			w := c.w
			seq := c.splits
			c.splits++
			sp := w.splits[seq]
			if sp == nil {
				sp = &fsplit{color: make([]int32, w.size), key: make([]int32, w.size)}
				w.splits[seq] = sp
			}
			sp.color[c.rank], sp.key[c.rank] = color, key
			sp.arrived++
			f.cond.Broadcast()
			for sp.arrived < w.size && !w.aborted {
				f.cond.Wait() // ncclCommSplit blocks until every rank calls it
			}
			if w.aborted {
				return InvalidUsage
			}
			if sp.news == nil {
				sp.news = map[int32]*fworld{}
			}
			*newcomm = 0
			if color == NoColor {
				return Success
			}
			type member struct{ key, rank int }
			var ms []member
			for r := range w.size {
				if sp.color[r] == color {
					ms = append(ms, member{int(sp.key[r]), r})
				}
			}
			sort.SliceStable(ms, func(i, j int) bool { return ms[i].key < ms[j].key })
			nw := sp.news[color]
			if nw == nil {
				nw = &fworld{size: len(ms), joined: len(ms), ops: map[uint64]*fop{}, mail: map[[2]int][][]byte{}, splits: map[uint64]*fsplit{}}
				sp.news[color] = nw
			}
			for i, m := range ms {
				if m.rank == c.rank {
					*newcomm = f.handle()
					f.comms[*newcomm] = &fcomm{w: nw, rank: i}
				}
			}
			return InProgress
		},
		"ncclCommGetAsyncError": func(h uintptr, async *Result) Result {
			f.mu.Lock()
			defer f.mu.Unlock()
			c, ok := f.comms[h]
			switch {
			case !ok:
				return InvalidArgument
			case c.aborted:
				*async = InvalidUsage
			case c.err != Success:
				*async = c.err
			case c.w.joined < c.w.size:
				*async = InProgress
			default:
				*async = Success
			}
			return Success
		},
		"ncclCommCount": func(h uintptr, n *int32) Result {
			f.mu.Lock()
			defer f.mu.Unlock()
			c, r := f.comm(h)
			if r == Success {
				*n = int32(c.w.size)
			}
			return r
		},
		"ncclCommUserRank": func(h uintptr, rank *int32) Result {
			f.mu.Lock()
			defer f.mu.Unlock()
			c, r := f.comm(h)
			if r == Success {
				*rank = int32(c.rank)
			}
			return r
		},
		"ncclCommAbort": func(h uintptr) Result {
			f.mu.Lock()
			defer f.mu.Unlock()
			if c, ok := f.comms[h]; ok {
				c.aborted, c.w.aborted = true, true
				f.cond.Broadcast()
			}
			return Success
		},
		"ncclCommFinalize": func(h uintptr) Result {
			f.mu.Lock()
			defer f.mu.Unlock()
			_, r := f.comm(h)
			return r
		},
		"ncclCommDestroy": func(h uintptr) Result {
			f.mu.Lock()
			defer f.mu.Unlock()
			if _, ok := f.comms[h]; !ok {
				return InvalidArgument
			}
			delete(f.comms, h)
			return Success
		},
		"ncclGetLastError": func(h uintptr) string { return "the fake NCCL" },
		"ncclAllReduce": func(send, recv uintptr, count uint64, dt, op int32, comm, s uintptr) Result {
			a := fargs{send: send, recv: recv, count: int(count), dt: fakeTypes[dt], op: fakeOps[op]}
			return f.collective("allreduce", comm, s, a, func(all []fargs, me int) ([]byte, error) {
				return reduceAll(all, all[me].count), nil
			})
		},
		"ncclReduceScatter": func(send, recv uintptr, count uint64, dt, op int32, comm, s uintptr) Result {
			a := fargs{send: send, recv: recv, count: int(count), dt: fakeTypes[dt], op: fakeOps[op]}
			return f.collective("reducescatter", comm, s, a, func(all []fargs, me int) ([]byte, error) {
				n := all[me].count
				full := reduceAll(all, n*len(all))
				es := all[me].dt.Size()
				return full[me*n*es : (me+1)*n*es], nil
			})
		},
		"ncclBroadcast": func(send, recv uintptr, count uint64, dt, root int32, comm, s uintptr) Result {
			a := fargs{send: send, recv: recv, count: int(count), dt: fakeTypes[dt], root: int(root)}
			return f.collective("broadcast", comm, s, a, func(all []fargs, me int) ([]byte, error) {
				r := all[me].root
				return append([]byte(nil), bytesAt(all[r].send, all[r].count*all[r].dt.Size())...), nil
			})
		},
		"ncclReduce": func(send, recv uintptr, count uint64, dt, op, root int32, comm, s uintptr) Result {
			a := fargs{send: send, recv: recv, count: int(count), dt: fakeTypes[dt], op: fakeOps[op], root: int(root)}
			return f.collective("reduce", comm, s, a, func(all []fargs, me int) ([]byte, error) {
				if me != all[me].root {
					return nil, nil
				}
				return reduceAll(all, all[me].count), nil
			})
		},
		"ncclAllGather": func(send, recv uintptr, count uint64, dt int32, comm, s uintptr) Result {
			a := fargs{send: send, recv: recv, count: int(count), dt: fakeTypes[dt]}
			return f.collective("allgather", comm, s, a, func(all []fargs, me int) ([]byte, error) {
				var out []byte
				for _, x := range all {
					out = append(out, bytesAt(x.send, x.count*x.dt.Size())...)
				}
				return out, nil
			})
		},
		"ncclSend": func(buf uintptr, count uint64, dt, peer int32, comm, s uintptr) Result {
			return f.queue(true, func() Result {
				f.mu.Lock()
				c, r := f.comm(comm)
				f.mu.Unlock()
				if r != Success {
					return r
				}
				n := int(count) * fakeTypes[dt].Size()
				key := [2]int{c.rank, int(peer)}
				if cuda.FakeEnqueue(s, func() {
					msg := append([]byte(nil), bytesAt(buf, n)...)
					f.mu.Lock()
					c.w.mail[key] = append(c.w.mail[key], msg)
					f.cond.Broadcast()
					f.mu.Unlock()
				}) != nil {
					return UnhandledCudaError
				}
				return Success
			})
		},
		"ncclRecv": func(buf uintptr, count uint64, dt, peer int32, comm, s uintptr) Result {
			return f.queue(false, func() Result {
				f.mu.Lock()
				c, r := f.comm(comm)
				f.mu.Unlock()
				if r != Success {
					return r
				}
				n := int(count) * fakeTypes[dt].Size()
				key := [2]int{int(peer), c.rank}
				if cuda.FakeEnqueue(s, func() {
					f.mu.Lock()
					for len(c.w.mail[key]) == 0 && !c.w.aborted {
						f.cond.Wait()
					}
					if c.w.aborted {
						c.err = RemoteError
						f.mu.Unlock()
						return
					}
					msg := c.w.mail[key][0]
					c.w.mail[key] = c.w.mail[key][1:]
					f.mu.Unlock()
					if len(msg) != n {
						f.mu.Lock()
						c.err = InvalidUsage // NCCL needs equal counts
						f.mu.Unlock()
						return
					}
					copy(bytesAt(buf, n), msg)
				}) != nil {
					return UnhandledCudaError
				}
				return Success
			})
		},
		"ncclGroupStart": func() Result {
			f.mu.Lock()
			defer f.mu.Unlock()
			g := f.groups[gettid()]
			if g == nil {
				g = &fgroup{}
				f.groups[gettid()] = g
			}
			g.depth++
			return Success
		},
		"ncclGroupEnd": func() Result {
			f.mu.Lock()
			g := f.groups[gettid()]
			if g == nil || g.depth == 0 {
				f.mu.Unlock()
				return InvalidUsage
			}
			g.depth--
			if g.depth > 0 {
				f.mu.Unlock()
				return Success
			}
			delete(f.groups, gettid())
			f.mu.Unlock()
			// Sends first: a group's receives may wait for its own sends.
			for _, q := range append(g.sends, g.ops...) {
				if r := q(); r != Success {
					return r
				}
			}
			return Success
		},
	}
}
