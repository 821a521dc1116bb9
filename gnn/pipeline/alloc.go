package pipeline

import "time"

// MaxMin splits cores among stages as BGL's resource isolation does:
// stage s processes 1/perBatch[s] batches per second per core, and the
// pipeline runs at the pace of its slowest stage, so choose integer cores
// c_s >= 1 with sum c_s <= cores maximising min_s c_s/perBatch[s]. Starting
// from one core each, every further core goes to the current bottleneck,
// which is optimal for this objective (each step raises the minimum as much
// as any allocation with one more core can). With fewer cores than stages
// it returns one core each (the caller must share them).
func MaxMin(perBatch []time.Duration, cores int) []int {
	c := make([]int, len(perBatch))
	for i := range c {
		c[i] = 1
	}
	for left := cores - len(c); left > 0; left-- {
		best := 0
		for s := range c {
			if rate(c[s], perBatch[s]) < rate(c[best], perBatch[best]) {
				best = s
			}
		}
		c[best]++
	}
	return c
}

func rate(c int, t time.Duration) float64 {
	if t <= 0 {
		t = 1
	}
	return float64(c) / float64(t)
}
