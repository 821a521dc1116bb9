package collective

import "testing"

// TestHierarchicalChosen: the hierarchical algorithms are chosen exactly
// when the ranks span hosts with several ranks on one of them.
func TestHierarchicalChosen(t *testing.T) {
	for _, tc := range []struct {
		hosts []int
		want  bool
	}{{nil, false}, {[]int{0, 0, 0, 0}, false}, {[]int{0, 1, 2, 3}, false}, {[]int{0, 0, 1, 1}, true}, {[]int{1, 0, 0, 2}, true}} {
		cs, err := NewLocal(4, WithHosts(tc.hosts))
		if err != nil {
			t.Fatal(err)
		}
		a := &args{dt: Float32, count: 1 << 20}
		for _, op := range []opKind{opAllReduce, opBroadcast, opAllGather} {
			if got := cs[1].ep.pick(op, cs[1], a).name == "hier"; got != tc.want {
				t.Errorf("hosts %v, %v: hierarchical = %v, want %v", tc.hosts, op, got, tc.want)
			}
		}
		if tc.want {
			tp := cs[1].topo()
			if tp.local == nil || tp.local.size != 2 {
				t.Errorf("hosts %v: local communicator %+v", tc.hosts, tp.local)
			}
		}
		for _, c := range cs {
			c.Close()
		}
	}
}
