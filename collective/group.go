package collective

import (
	"context"
	"fmt"

	"github.com/weft-hpc/weft/collective/driver"
)

// Group is an ordered set of processes, as an MPI_Group: the ranks of a
// communicator (Comm.Group) or a selection of them (Incl, Excl, Union,
// Intersection, Difference). Rank i of a group is its i-th process. A
// Group is a value made and used locally: nothing on it communicates,
// and there is nothing to free. The zero Group is empty
// (MPI_GROUP_EMPTY).
type Group struct {
	world []int // the world rank of each member
	me    int   // this process's world rank
}

// Group returns the group of c's ranks, in c's order (MPI_Comm_group).
func (c *Comm) Group() Group {
	w := make([]int, c.size)
	for i := range w {
		w[i] = c.WorldRank(i)
	}
	return Group{world: w, me: c.me}
}

// Size is the number of processes in g (MPI_Group_size).
func (g Group) Size() int { return len(g.world) }

// Rank is this process's rank in g, or Undefined when it is not a member
// (MPI_Group_rank).
func (g Group) Rank() int { return g.index(g.me) }

// WorldRank is the world rank of rank r of g.
func (g Group) WorldRank(r int) int { return g.world[r] }

func (g Group) index(w int) int {
	for i, x := range g.world {
		if x == w {
			return i
		}
	}
	return Undefined
}

// groupInvalid is the error of a group call with a bad argument.
func groupInvalid(format string, a ...any) error {
	return &driver.Failure{Kind: ErrInvalid, Culprit: -1, Origin: -1, Msg: "collective: " + fmt.Sprintf(format, a...)}
}

// check reports the first of ranks that is not a distinct rank of g.
func (g Group) check(call string, ranks []int) error {
	seen := make(map[int]bool, len(ranks))
	for i, r := range ranks {
		if r < 0 || r >= len(g.world) {
			return groupInvalid("Group.%s: ranks[%d] = %d outside [0, %d)", call, i, r, len(g.world))
		}
		if seen[r] {
			return groupInvalid("Group.%s: ranks[%d] = %d appears twice", call, i, r)
		}
		seen[r] = true
	}
	return nil
}

// Incl returns the group of ranks of g, in the order given
// (MPI_Group_incl); they must be distinct ranks of g.
func (g Group) Incl(ranks []int) (Group, error) {
	if err := g.check("Incl", ranks); err != nil {
		return Group{}, err
	}
	w := make([]int, len(ranks))
	for i, r := range ranks {
		w[i] = g.world[r]
	}
	return Group{world: w, me: g.me}, nil
}

// Excl returns g without ranks, in g's order (MPI_Group_excl); they must
// be distinct ranks of g.
func (g Group) Excl(ranks []int) (Group, error) {
	if err := g.check("Excl", ranks); err != nil {
		return Group{}, err
	}
	out := make([]bool, len(g.world))
	for _, r := range ranks {
		out[r] = true
	}
	var w []int
	for i, x := range g.world {
		if !out[i] {
			w = append(w, x)
		}
	}
	return Group{world: w, me: g.me}, nil
}

// Translate maps ranks of g to the ranks of the same processes in to
// (MPI_Group_translate_ranks): Undefined for a process that is not in
// to, ProcNull for ProcNull.
func (g Group) Translate(ranks []int, to Group) ([]int, error) {
	out := make([]int, len(ranks))
	for i, r := range ranks {
		switch {
		case r == ProcNull:
			out[i] = ProcNull
		case r < 0 || r >= len(g.world):
			return nil, groupInvalid("Group.Translate: ranks[%d] = %d outside [0, %d)", i, r, len(g.world))
		default:
			out[i] = to.index(g.world[r])
		}
	}
	return out, nil
}

// Union is g's processes, then h's that are not in g (MPI_Group_union).
func (g Group) Union(h Group) Group {
	w := append([]int(nil), g.world...)
	for _, x := range h.world {
		if g.index(x) == Undefined {
			w = append(w, x)
		}
	}
	return Group{world: w, me: g.me}
}

// Intersection is g's processes that are in h, in g's order
// (MPI_Group_intersection).
func (g Group) Intersection(h Group) Group {
	var w []int
	for _, x := range g.world {
		if h.index(x) != Undefined {
			w = append(w, x)
		}
	}
	return Group{world: w, me: g.me}
}

// Difference is g's processes that are not in h, in g's order
// (MPI_Group_difference).
func (g Group) Difference(h Group) Group {
	var w []int
	for _, x := range g.world {
		if h.index(x) == Undefined {
			w = append(w, x)
		}
	}
	return Group{world: w, me: g.me}
}

// CreateGroup returns the communicator of the processes of g, in g's
// order (MPI_Comm_create_group). Only g's members call it, every one of
// them with the same g and tag; the other ranks of c take no part, and it
// is not ordered with c's collectives (calls over the same members are
// told apart by their order, calls that may run at the same time by their
// tags). g must be made of ranks of c and hold this rank; tag is in [0,
// the backend's largest tag].
//
// On Weft's transports no message is exchanged: each member names the new
// communicator alike (from c, the members, the tag and how many such it
// made before), so it returns at once; a member's first operation on it
// waits for the others as any operation does. The mpi backend calls
// MPI_Comm_create_group, which waits for every member.
func (c *Comm) CreateGroup(ctx context.Context, g Group, tag int) (*Comm, error) {
	const op = "creategroup"
	invalid := func(format string, a ...any) error { return c.invalidOp(op, format, a...) }
	if err := c.usable(driver.Split); err != nil {
		return nil, err
	}
	if tag < 0 || tag > c.maxTag {
		return nil, invalid("tag %d outside [0, %d]", tag, c.maxTag)
	}
	mine := c.Group()
	members := make([]int, len(g.world))
	for i, w := range g.world {
		if members[i] = mine.index(w); members[i] == Undefined {
			return nil, invalid("rank %d of the group (world rank %d) is not in the communicator", i, w)
		}
	}
	if g.index(c.me) == Undefined {
		return nil, invalid("this rank (world rank %d) is not in the group of %d: only members call CreateGroup", c.me, len(g.world))
	}
	gc, ok := c.conn.(driver.GroupCreator)
	if !ok {
		return nil, &OpError{Op: op, Backend: c.backend, Rank: c.me, Peer: -1, Err: &driver.Failure{Kind: ErrNotBuilt,
			Culprit: -1, Origin: c.me, Msg: fmt.Sprintf("the %s backend cannot make a communicator of a group", c.backend)}}
	}
	sub, err := gc.CreateGroup(ctx, members, tag)
	if err != nil {
		err = c.dom.fail(err)
		return nil, &OpError{Op: op, Backend: c.backend, Rank: c.me, Peer: driver.Culprit(err), Err: err}
	}
	return c.child(sub, members), nil
}
