package spgnn

import (
	"fmt"
	"math"
	"slices"
)

// ROCAUC returns the area under the ROC curve of scores for the binary
// labels positive: the probability that a random positive scores above a
// random negative, ties counting one half. It is the Mann-Whitney
// statistic, computed from ranks (tied scores share their mean rank):
//
//	AUC = (sum of the positives' ranks - P(P+1)/2) / (P N)
//
// in O(n log n). It returns an error when the lengths differ, when either
// class is empty, or when a score is NaN.
func ROCAUC(scores []float32, positive []bool) (float64, error) {
	if len(scores) != len(positive) {
		return 0, fmt.Errorf("spgnn: auc: %d scores for %d labels", len(scores), len(positive))
	}
	order := make([]int, len(scores))
	for i := range order {
		if math.IsNaN(float64(scores[i])) {
			return 0, fmt.Errorf("spgnn: auc: score %d is NaN", i)
		}
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case scores[a] < scores[b]:
			return -1
		case scores[a] > scores[b]:
			return 1
		}
		return 0
	})
	var rankSum float64
	var np, nn int
	for i := 0; i < len(order); {
		j := i
		for j < len(order) && scores[order[j]] == scores[order[i]] {
			j++
		}
		mid := float64(i+j+1) / 2 // mean of the 1-based ranks i+1..j
		for _, k := range order[i:j] {
			if positive[k] {
				rankSum += mid
				np++
			} else {
				nn++
			}
		}
		i = j
	}
	if np == 0 || nn == 0 {
		return 0, fmt.Errorf("spgnn: auc: %d positives and %d negatives: need both", np, nn)
	}
	p, n := float64(np), float64(nn)
	return (rankSum - p*(p+1)/2) / (p * n), nil
}
