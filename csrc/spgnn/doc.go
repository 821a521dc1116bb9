// Package spgnn holds the C kernel of gnn/spgnn (which imports it as
// cspgnn): Aggregate and AggregateBackward (spgnn.c, weft_spgnn.h), the
// fused hot path of the SP-GNN layer,
//
//	z[d] = self*x[d] + sum_e w[e]*x[idx[e]]
//
// over each destination's neighbour list in one pass, and its transpose.
// They are plain C compiled at -O3 (the compiler vectorises the row
// loops), add edges in order and never fuse a multiply with an add
// (fp-contract off), so they return the bits of gnn/spgnn's Go reference
// (its TestFusedMatchesGo compares them). The wrappers check every index in
// Go first (O(edges)) and report the accesses to the race detector;
// without cgo on amd64 they return csrc.ErrNotBuilt and gnn/spgnn runs its
// Go loop. Calls may run concurrently as each function's doc says.
package spgnn
