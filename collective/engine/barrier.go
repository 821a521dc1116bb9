package engine

import "github.com/weft-hpc/weft/collective/driver"

// barrierDissemination is the dissemination barrier (agree.go).
func barrierDissemination(x *exec, a *driver.Call) error { return dissemination(x, 0) }
