//go:build cgo && amd64

package csrc

/*
#cgo noescape weft_sgd
#cgo nocallback weft_sgd
#include "weft_sgd.h"
*/
import "C"

// SGD is one step of momentum SGD over the vectors (nn.SGD's pass, with
// its bits), at Current's level:
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
	isa := Current()
	if isa == None {
		return ErrNotBuilt
	}
	if len(w) == 0 {
		return nil
	}
	raceRead(f32bytes(w))
	raceRead(f32bytes(g))
	raceRead(f32bytes(v))
	raceWrite(f32bytes(w))
	raceWrite(f32bytes(v))
	var pl, pe *C.float
	if live != nil {
		raceRead(f32bytes(est))
		raceWrite(f32bytes(live))
		pl, pe = fptr(live), fptr(est)
	}
	C.weft_sgd(C.int(isa), fptr(w), fptr(g), fptr(v), pl, pe, C.int64_t(len(w)), C.float(lr), C.float(mu), C.float(lambda))
	return nil
}
