package graph

import (
	"slices"
	"strings"
	"testing"
)

// RandomSplits cuts 0..n-1 into 60/20/20 disjoint ascending lists, the
// same for the same seed and another for another.
func TestRandomSplits(t *testing.T) {
	for _, n := range []int64{0, 1, 10, 1001} {
		s := RandomSplits(n, 7)
		if len(s) != len(SplitNames) {
			t.Fatalf("n %d: keys %v, want %v", n, len(s), SplitNames)
		}
		if a, b := n*6/10, n*8/10; int64(len(s["train"])) != a || int64(len(s["valid"])) != b-a || int64(len(s["test"])) != n-b {
			t.Errorf("n %d: sizes %d/%d/%d", n, len(s["train"]), len(s["valid"]), len(s["test"]))
		}
		var all []int64
		for _, name := range SplitNames {
			if !slices.IsSorted(s[name]) {
				t.Errorf("n %d: %s not ascending", n, name)
			}
			all = append(all, s[name]...)
		}
		slices.Sort(all)
		for i, v := range all {
			if v != int64(i) {
				t.Fatalf("n %d: the splits do not cover 0..n-1 once: %v", n, all)
			}
		}
		if again := RandomSplits(n, 7); !slices.Equal(again["train"], s["train"]) || !slices.Equal(again["test"], s["test"]) {
			t.Errorf("n %d: the same seed gave another split", n)
		}
	}
	if a, b := RandomSplits(1001, 7), RandomSplits(1001, 8); slices.Equal(a["train"], b["train"]) {
		t.Error("seeds 7 and 8 gave the same training split")
	}
}

// LabelledPerClass keeps n training nodes of each class, ascending, a
// subset of train, seeded; 0 keeps train; too few in a class, a negative
// n and an id outside labels are errors that say which.
func TestLabelledPerClass(t *testing.T) {
	labels := make([]int64, 300)
	for v := range labels {
		labels[v] = int64(v % 3)
	}
	train := RandomSplits(300, 1)["train"]
	keep := slices.Clone(train)
	if got, err := LabelledPerClass(train, labels, 0, 1); err != nil || !slices.Equal(got, train) {
		t.Fatalf("n 0: %v, %v", len(got), err)
	}
	got, err := LabelledPerClass(train, labels, 20, 1)
	if err != nil {
		t.Fatal(err)
	}
	count := map[int64]int{}
	for _, v := range got {
		if _, ok := slices.BinarySearch(train, v); !ok {
			t.Errorf("node %d is not in the training split", v)
		}
		count[labels[v]]++
	}
	if len(got) != 60 || count[0] != 20 || count[1] != 20 || count[2] != 20 || !slices.IsSorted(got) {
		t.Errorf("per class %v, %d nodes, ascending %v", count, len(got), slices.IsSorted(got))
	}
	if !slices.Equal(train, keep) {
		t.Error("train was modified")
	}
	if again, _ := LabelledPerClass(train, labels, 20, 1); !slices.Equal(again, got) {
		t.Error("the same seed chose other nodes")
	}
	if other, _ := LabelledPerClass(train, labels, 20, 2); slices.Equal(other, got) {
		t.Error("seeds 1 and 2 chose the same nodes")
	}
	for _, c := range []struct {
		train []int64
		n     int
		want  string
	}{
		{train, 100, "graph: class 0 has only"},
		{train, -1, "graph: -1 labelled nodes per class"},
		{[]int64{3, 300}, 1, "graph: training node 300 outside the 300 labelled nodes"},
	} {
		if _, err := LabelledPerClass(c.train, labels, c.n, 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("n %d: %v, want %q", c.n, err, c.want)
		}
	}
}
