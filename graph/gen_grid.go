package graph

import "fmt"

// Grid2D returns the rows x cols 4-neighbour grid: node r*cols+c is joined
// to its up, down, left and right neighbours, each edge in both
// directions. Interior nodes have degree 4, border nodes 3, corners 2. It
// panics on negative sizes.
func Grid2D(rows, cols int) *EdgeList {
	if rows < 0 || cols < 0 {
		panic(fmt.Sprintf("graph: grid: negative size %dx%d", rows, cols))
	}
	r, c := int64(rows), int64(cols)
	ne := 2 * (r*max(c-1, 0) + c*max(r-1, 0))
	el := &EdgeList{NumNodes: r * c, Src: make([]int64, 0, ne), Dst: make([]int64, 0, ne)}
	add := func(u, v int64) {
		el.Src = append(el.Src, u, v)
		el.Dst = append(el.Dst, v, u)
	}
	for i := range r {
		for j := range c {
			u := i*c + j
			if j+1 < c {
				add(u, u+1)
			}
			if i+1 < r {
				add(u, u+c)
			}
		}
	}
	return el
}
