//go:build !cgo

package gpu

import "fmt"

// stubNVML is NVML in a build without cgo: nothing can be loaded.
type stubNVML struct{}

func newNVML() nvmlLib { return stubNVML{} }

func (stubNVML) init() error {
	return fmt.Errorf("gpu: this binary was built without cgo (CGO_ENABLED=0) and cannot load libnvidia-ml.so.1: %w", ErrNotBuilt)
}
func (stubNVML) shutdown()                         {}
func (stubNVML) driverVersion() string             { return "" }
func (stubNVML) count() (int, error)               { return 0, ErrNotBuilt }
func (stubNVML) device(int) (Device, error)        { return Device{}, ErrNotBuilt }
func (stubNVML) link(int, int) (string, bool, int) { return "", false, 0 }
