//go:build mpi

package mpi

// Communicators by host and by group: MPI_Comm_split_type and
// MPI_Comm_create_group.

/*
#include "weft_mpi.h"
*/
import "C"

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"

	"github.com/weft-hpc/weft/collective/driver"
)

var (
	_ driver.SharedSplitter = (*conn)(nil)
	_ driver.GroupCreator   = (*conn)(nil)
)

// SplitShared is MPI_Comm_split_type with MPI_COMM_TYPE_SHARED: the ranks
// of c on this node, ordered by key (ties by rank). The front end runs it
// in collective order, as Split.
func (c *conn) SplitShared(_ context.Context, key int) (driver.Conn, []int, error) {
	var nc C.MPI_Comm
	lib.active.Add(1)
	rc := C.weft_comm_split_shared(c.comm, C.int(key), &nc)
	lib.active.Add(-1)
	if rc != 0 {
		return nil, nil, failure("MPI_Comm_split_type", rc)
	}
	c.splits++
	members, err := c.membersOf(nc)
	if err != nil {
		C.weft_comm_free(&nc)
		return nil, nil, err
	}
	// The node's first member in c names it, as a color would.
	id := mix(c.key ^ mix(uint64(c.splits)<<32|uint64(uint32(members[0]))))
	lib.mu.Lock()
	defer lib.mu.Unlock()
	sub, err := newConnLocked(nc, c.w, id)
	if err != nil {
		C.weft_comm_free(&nc)
		return nil, nil, err
	}
	return sub, members, nil
}

// membersOf is the rank in c of each rank of nc, a communicator made from
// c.
func (c *conn) membersOf(nc C.MPI_Comm) ([]int, error) {
	var rank, size, ub C.int
	if rc := C.weft_comm_info(nc, &rank, &size, &ub); rc != 0 {
		return nil, failure("MPI_Comm_rank or MPI_Comm_size", rc)
	}
	ws, err := worldRanks(nc, size)
	if err != nil {
		return nil, err
	}
	of := make(map[int]int, c.size)
	for i, w := range c.world {
		of[w] = i
	}
	members := make([]int, len(ws))
	for i, w := range ws {
		r, ok := of[w]
		if !ok {
			return nil, &driver.Failure{Kind: driver.ErrInvalid, Culprit: -1, Origin: -1,
				Msg: fmt.Sprintf("MPI_Comm_split_type gave world rank %d, which is not in the communicator", w)}
		}
		members[i] = r
	}
	return members, nil
}

// groups counts the CreateGroups over each (communicator, members, tag),
// so that each communicator they make gets a key of its own.
var groups struct {
	mu sync.Mutex
	n  map[string]uint64
}

// CreateGroup is MPI_Comm_create_group over the group of members (ranks
// of c, MPI_Group_incl): only the members call it. It runs on the
// caller's goroutine, beside c's collectives.
func (c *conn) CreateGroup(ctx context.Context, members []int, tag int) (driver.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, &driver.Failure{Kind: driver.ErrAborted, Culprit: -1, Origin: -1,
			Msg: "the context ended before MPI_Comm_create_group", Cause: err}
	}
	ms := make([]C.int, len(members))
	h := fnv.New64a()
	fmt.Fprintf(h, "%x/%d", c.key, tag)
	for i, m := range members {
		ms[i] = C.int(m)
		fmt.Fprintf(h, "/%d", m)
	}
	k := fmt.Sprintf("%x", h.Sum64())
	groups.mu.Lock()
	if groups.n == nil {
		groups.n = make(map[string]uint64)
	}
	n := groups.n[k]
	groups.n[k]++
	groups.mu.Unlock()
	var nc C.MPI_Comm
	lib.active.Add(1)
	rc := C.weft_comm_create_group(c.comm, C.int(len(ms)), &ms[0], C.int(tag), &nc)
	lib.active.Add(-1)
	if rc != 0 {
		return nil, failure("MPI_Comm_create_group", rc)
	}
	lib.mu.Lock()
	defer lib.mu.Unlock()
	sub, err := newConnLocked(nc, c.w, mix(h.Sum64()^mix(n)))
	if err != nil {
		C.weft_comm_free(&nc)
		return nil, err
	}
	return sub, nil
}
