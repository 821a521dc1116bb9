package collective

import (
	"context"
	"fmt"

	"github.com/weft-hpc/weft/collective/driver"
)

// SplitShared partitions the communicator by host, as
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) does: the ranks that share
// this rank's host (they can share memory) form a new communicator,
// ordered by key, ties by rank (pass Rank() to keep c's order). Every rank
// gets the communicator of its host. SplitShared is collective.
//
// Which ranks share a host: on Weft's transports, those whose host name
// and boot id matched at the bootstrap (the ranks shared memory joins;
// the pretended hosts of a local world); on the mpi backend, the MPI
// library's answer (MPI_Comm_split_type).
func (c *Comm) SplitShared(ctx context.Context, key int) (*Comm, error) {
	switch conn := c.conn.(type) {
	case driver.SharedSplitter:
		return c.split(ctx, 0, key, func(ctx context.Context) (driver.Conn, []int, error) {
			return conn.SplitShared(ctx, key)
		})
	case driver.HostMap:
		return c.split(ctx, conn.Host(c.rank), key, nil)
	}
	return nil, c.opError(driver.Split, &driver.Failure{Kind: ErrNotBuilt, Culprit: -1, Origin: c.me,
		Msg: fmt.Sprintf("SplitShared: the %s backend cannot tell which ranks share a host", c.backend)})
}
