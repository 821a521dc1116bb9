package partition

import "github.com/weft-hpc/weft/internal/par"

// multilevel.go calls internal/par's loop by the names it had when this
// package kept its own copy.
var (
	forWorkers = par.ForWorkers
	workers    = par.Workers
)
