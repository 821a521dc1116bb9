package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weft-hpc/weft/collective"
)

func infoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "info",
		Short: "Show how this rank was launched and check that every rank connects",
		Long: `Detect the launcher, meet the other ranks and connect to every one of them,
then print one line per rank (in rank order): launcher, rank, size, local
rank, host, address, backend, rendezvous, and the transport to each peer
(self, shm or tcp). A quick check of a new launch setup.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := collective.Open(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			line := fmt.Sprintf("rank %d/%d %s", c.Rank(), c.Size(), describe(c))
			if wc, ok := c.(*collective.Comm); ok && wc.Launch() != nil {
				l := wc.Launch()
				host, _ := os.Hostname()
				line = fmt.Sprintf("rank %d/%d local %d launcher %s host %s addr %s backend %s rendezvous %s job %q peers %s",
					c.Rank(), c.Size(), l.LocalRank, l.Launcher, host, l.AdvertisedAddr, wc.Backend(), l.Rendezvous, l.JobID,
					strings.Join(l.PeerTransports, ","))
			}
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
}
