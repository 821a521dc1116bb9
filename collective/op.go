package collective

import (
	"fmt"

	"github.com/weft-hpc/weft/internal/reduce"
)

// Op is a reduction operation. The zero value is Sum.
type Op uint8

const (
	Sum  Op = Op(reduce.Sum)
	Prod Op = Op(reduce.Prod)
	Min  Op = Op(reduce.Min)
	Max  Op = Op(reduce.Max)
	// Avg is Sum divided by the number of ranks; floating types only.
	Avg Op = Op(reduce.Avg)
)

// Ops lists every reduction operation.
var Ops = []Op{Sum, Prod, Min, Max, Avg}

func (o Op) String() string { return reduce.Op(o).String() }

// Valid reports whether o is a known operation.
func (o Op) Valid() bool { return reduce.Op(o).Valid() }

// ParseOp parses an operation name ("sum", "prod", "min", "max", "avg").
func ParseOp(s string) (Op, error) {
	for _, o := range Ops {
		if o.String() == s {
			return o, nil
		}
	}
	return 0, fmt.Errorf("collective: unknown reduction %q (want sum, prod, min, max or avg)", s)
}
