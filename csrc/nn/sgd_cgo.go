//go:build cgo && amd64

package nn

/*
#cgo noescape weft_sgd
#cgo nocallback weft_sgd
#include "weft_sgd.h"
*/
import "C"

import (
	"github.com/weft-hpc/weft/csrc"
	"github.com/weft-hpc/weft/csrc/internal/race"
)

// SGD is one step of momentum SGD over the vectors (nn.SGD's pass, with
// its bits), at csrc.Current's level:
//
//	g' = g + c*g*g*v with c = -lambda*lr when lambda != 0, else g
//	v = mu*v + g';  w -= lr*v
//	live = w - lr*(mu*v + est) when live is not nil
//
// The correction is SAPipe's delay compensation with the weight difference
// -lr*v taken from the momentum; live and est are its weight prediction. The
// vectors have one length; w, v and live must not overlap any other. It
// blocks until done and keeps no reference to the slices.
func SGD(w, g, v, live, est []float32, lr, mu, lambda float32) error {
	if err := checkSGD(w, g, v, live, est); err != nil {
		return err
	}
	isa := csrc.Current()
	if isa == csrc.None {
		return csrc.ErrNotBuilt
	}
	if len(w) == 0 {
		return nil
	}
	race.Read(w)
	race.Read(g)
	race.Read(v)
	race.Write(w)
	race.Write(v)
	var pl, pe *C.float
	if live != nil {
		race.Read(est)
		race.Write(live)
		pl, pe = fptr(live), fptr(est)
	}
	C.weft_sgd(C.int(isa), fptr(w), fptr(g), fptr(v), pl, pe, C.int64_t(len(w)), C.float(lr), C.float(mu), C.float(lambda))
	return nil
}
