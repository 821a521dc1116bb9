package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/weft-hpc/weft/collective/driver"
)

var (
	_ driver.HostMap      = (*conn)(nil)
	_ driver.GroupCreator = (*conn)(nil)
)

// Host is the host index of rank r (host name and boot id, as the
// bootstrap numbered them; the pretended hosts of a local world); 0 for
// every rank of a world on one host.
func (c *conn) Host(r int) int {
	if c.ep.hosts == nil {
		return 0
	}
	return c.ep.hosts[c.world[r]]
}

// CreateGroup makes the conn of members without a word to anyone: a conn
// is a name every member computes alike (from this conn's id, the members,
// the tag, and how many such conns this rank made before), and frames
// that arrive for a conn a member has not made yet wait for it as any
// early frame does.
func (c *conn) CreateGroup(_ context.Context, members []int, tag int) (driver.Conn, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "group/%d", tag)
	for _, m := range members {
		fmt.Fprintf(&b, "/%d", m)
	}
	k := b.String()
	c.groupMu.Lock()
	if c.groups == nil {
		c.groups = make(map[string]uint64)
	}
	n := c.groups[k]
	c.groups[k]++
	c.groupMu.Unlock()
	return c.sub(fmt.Sprintf("%s#%d", k, n), members, nil), nil
}
