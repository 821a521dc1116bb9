package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weft-hpc/weft/collective"
)

func infoCmd() *cobra.Command {
	var quick bool
	cmd := &cobra.Command{
		Use:   "info [FILE.h5]",
		Short: "Summarise a graph dataset file, or show how this rank was launched",
		Long: `With a file: print a summary of a graph dataset in Weft's HDF5 layout (sizes,
degree statistics, node data, splits, partitions present, and each dataset
with its type, shape, size and compression). Then every value is read (a
slab at a time) and what ReadGraph and train would refuse is listed under
"problems": neighbour ids out of range, non-finite features or encodings,
split ids or assignments out of range, broken splits and partitions; the
exit status is 1 when there is any. Objects under /split and /partition that
are not splits or partitions are listed as "ignored", as the format says.
--quick skips reading the values.

Without: detect the launcher, meet the other ranks and connect to every one
of them, then print one line per rank (in rank order): launcher, rank, size,
local rank, host, address, backend, rendezvous, and the transport to each
peer (self, shm or tcp). A quick check of a new launch setup.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				return fileInfo(cmd.OutOrStdout(), args[0], quick)
			}
			ctx := cmd.Context()
			c, err := collective.Open(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			line := launchLine(c)
			const width = 512
			mine := make([]byte, width)
			copy(mine, line)
			all := make([]byte, width*c.Size())
			if err := c.AllGather(ctx, collective.Buf(mine), collective.Buf(all)); err != nil {
				return err
			}
			if c.Rank() == 0 {
				for r := range c.Size() {
					b := all[r*width : (r+1)*width]
					n := 0
					for n < len(b) && b[n] != 0 {
						n++
					}
					fmt.Println(string(b[:n]))
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&quick, "quick", false, "with a file: summarise only, without reading every value")
	return cmd
}

// launchLine is what weft info prints for a rank: how it was launched, where
// it runs, and how it reaches its peers, whatever the backend.
func launchLine(c *collective.Comm) string {
	l := c.Launch()
	orNone := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	peers := "-"
	if l.PeerTransports != nil {
		peers = strings.Join(l.PeerTransports, ",")
	}
	return fmt.Sprintf("rank %d/%d local %d/%d launcher %s host %s addr %s backend %s rendezvous %s job %q peers %s",
		c.Rank(), c.Size(), l.LocalRank, l.LocalSize, l.Launcher, l.Host, orNone(l.AdvertisedAddr), c.Backend(),
		orNone(l.Rendezvous), l.JobID, peers)
}
