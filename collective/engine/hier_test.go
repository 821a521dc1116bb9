package engine

import (
	"testing"

	"github.com/weft-hpc/weft/collective/driver"
)

// TestHierarchicalChosen: the hierarchical algorithms are chosen exactly
// when the ranks span hosts with several ranks on one of them.
func TestHierarchicalChosen(t *testing.T) {
	for _, tc := range []struct {
		hosts []int
		want  bool
	}{{nil, false}, {[]int{0, 0, 0, 0}, false}, {[]int{0, 1, 2, 3}, false}, {[]int{0, 0, 1, 1}, true}, {[]int{1, 0, 0, 2}, true}} {
		cs, err := NewLocal(4, &driver.Config{Hosts: tc.hosts, Settings: map[string]string{"WEFT_CHUNK_BYTES": "512K"}})
		if err != nil {
			t.Fatal(err)
		}
		c := cs[1].(*conn)
		a := &driver.Call{DType: driver.Float32, Count: 1 << 20}
		for _, op := range []driver.Kind{driver.AllReduce, driver.Broadcast, driver.AllGather} {
			if got := c.ep.pick(op, c, a).name == "hier"; got != tc.want {
				t.Errorf("hosts %v, %v: hierarchical = %v, want %v", tc.hosts, op, got, tc.want)
			}
		}
		if tc.want {
			tp := c.topo()
			if tp.local == nil || tp.local.size != 2 {
				t.Errorf("hosts %v: local communicator %+v", tc.hosts, tp.local)
			}
			// Rails where every host has as many ranks: 2x2 yes, 1+2+1 no.
			if uniform := tc.hosts[0] == 0; (tp.rail != nil) != uniform {
				t.Errorf("hosts %v: rail %v, want one: %v", tc.hosts, tp.rail, uniform)
			} else if uniform && (tp.rail.size != 2 || tp.rail.world[0] != 1 || tp.rail.world[1] != 3) {
				t.Errorf("hosts %v: rank 1's rail is %v, want ranks 1 and 3", tc.hosts, tp.rail.world)
			}
		}
		for _, c := range cs {
			c.Close()
		}
	}
}
