package collective

import (
	"fmt"

	"github.com/weft-hpc/weft/collective/driver"
)

// Op is a reduction: Sum, Prod, Min, Max, Avg. The zero value is Sum.
type Op = driver.Op

// The reductions. Avg is Sum divided by the number of ranks, for floating
// types only.
const (
	Sum  = driver.Sum
	Prod = driver.Prod
	Min  = driver.Min
	Max  = driver.Max
	Avg  = driver.Avg
)

// Ops lists every reduction.
var Ops = []Op{Sum, Prod, Min, Max, Avg}

// ParseOp parses a reduction's name ("sum", "prod", "min", "max", "avg").
func ParseOp(s string) (Op, error) {
	for _, o := range Ops {
		if o.String() == s {
			return o, nil
		}
	}
	return 0, fmt.Errorf("collective: unknown reduction %q (want sum, prod, min, max or avg)", s)
}
