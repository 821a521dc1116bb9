package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/weft-hpc/weft/gpu"
)

// gpusCmd is `weft gpus`: the NVIDIA GPUs of this host and their topology,
// or one line saying why there are none (exit status 0 either way, so
// scripts can run it anywhere).
func gpusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "gpus",
		Short: "List this host's NVIDIA GPUs (NVML): memory, PCIe bus ids, NVLink/P2P topology",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			sys, err := gpu.Discover()
			switch {
			case errors.Is(err, gpu.ErrNoDriver), errors.Is(err, gpu.ErrNotBuilt):
				fmt.Fprintln(out, err)
				return nil
			case err != nil:
				return err
			case len(sys.Devices) == 0:
				fmt.Fprintf(out, "NVIDIA driver %s, no GPUs\n", sys.Driver)
				return nil
			}
			return gpu.WriteTable(out, sys)
		},
	}
}
