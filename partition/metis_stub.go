//go:build !cgo

package partition

const metisBuilt = false

func metisKway(xadj, adjncy, vwgt []int32, ncon, k, ufactor int, seed int32, part []int32) error {
	return ErrNotBuilt
}
