// Package partition splits a graph's nodes into k parts for distributed
// GNN training, and measures how good a split is for that job.
//
// One interface, Partitioner: a *graph.CSR, k, the training nodes and
// Options (seed, progress) in; one part id per node ([]int32) out; an
// error wrapping ErrInvalid for impossible requests (empty graph, k < 1,
// k > nodes, a training node out of range). Three implementations: BGL,
// METIS and Random, listed by Algorithms and found by ByName. Every one
// is deterministic for a given seed and independent of GOMAXPROCS. Run
// wraps a call with its wall time and peak memory growth; Evaluate
// computes Metrics.
//
// # BGL
//
// After BGL ("BGL: GPU-Efficient GNN
// Training by Optimizing Graph Data I/O and Preprocessing", NSDI 2023),
// on the undirected view of the graph (a directed CSR is symmetrised, self
// loops are dropped):
//
//  1. Blocks by multi-source BFS. Node v is a source when
//     hash(seed, v) < SourceFraction (default 2/MaxBlockSize); sources
//     are numbered in id order. The BFS is level-synchronous and parallel
//     over fixed chunks of the frontier; an uncoloured node reached in a
//     level takes the smallest block id among the frontier nodes that
//     reach it (an atomic minimum, so the result does not depend on
//     scheduling: "first colour that reaches it" with a deterministic
//     tie). Blocks stop growing at MaxBlockSize nodes (default
//     max(8, N/(64k)): 64 full blocks per part); a block that would pass
//     it in a level keeps its new nodes of lowest id and releases the
//     rest, which stay uncoloured for other blocks. The BFS stops after
//     Hops levels (default 3). Leftover nodes are taken by a sequential
//     BFS over uncoloured nodes in id order (connected components),
//     packed into blocks of at most MaxBlockSize, so isolated nodes and
//     small components share blocks.
//  2. Block graph: per block its node and training-node counts and its
//     neighbour blocks with the number of edges to each, built in
//     parallel over fixed ranges of blocks with per-worker scratch.
//  3. Assignment, largest block first (ties by block id), each to the
//     part i maximising
//     S_i * (1 - A_i/C)^0.5 * (1 - (L_i + L_B)/C_L)
//     with A_i the part's nodes, C = 1.1|V|/k, L_i its training nodes,
//     L_B the block's, C_L = |V_train|/k (the priority and constants of
//     the paper's block assignment). A part the block does not fit
//     (A_i + |B| > C or L_i + L_B > C_L) is skipped; a part under 1% of C
//     gets priority at least 1 (cold start); when no part fits, or every
//     score is 0, the block goes to the least loaded part (by
//     max(A_i/C, L_i/C_L)). S_i departs from the paper: it is the number
//     of edges between the block and the blocks already in part i. The
//     paper's S1_i + S2_i (node counts of the 1-hop and 2-hop neighbour
//     blocks in part i, kept as BGL.ThesisScore, after the HKU thesis of
//     2023 that collects BGL, "Exploiting characteristics of data
//     parallelism for efficient distributed machine learning systems")
//     measured far worse here: on an SBM of 100k nodes, k = 8, it cut 58%
//     of the edges after refinement against 35% with edge counts (METIS
//     30%). The 2-hop term spreads over every part in graphs of small
//     diameter, and node counts reward big neighbours over strongly
//     connected ones.
//  4. Refinement (the "uncoarsen" step), up to RefinePasses passes
//     (default 64; it was 8, which stopped a 1M-node SBM of 20 communities
//     at a 42% cut where it converges to 26% within about 30 passes, 1.8
//     s more; METIS 16%)
//     over nodes: each node proposes, against the assignment at the start
//     of the pass (computed in parallel), the part holding most of its
//     neighbours; opposite moves between two parts are applied in pairs
//     by gain (a swap keeps both loads), the rest while the target stays
//     within 1.1x the mean node count and 1.03x the mean training-node
//     count. It stops early when under 1 node in 2000 moves.
//
// Edges are not balanced by BGL: on power-law graphs the hubs' blocks
// make edge balance (max/mean adjacency per part) 2-5 (METIS: about 2.2
// to 2.4 on R-MAT too).
//
// Memory beyond the graph: the symmetric copy for a directed graph; 8
// bytes a node (block, claim), the block graph (at most the adjacency, 12
// bytes per block edge) and k float64s per block.
//
// # METIS
//
// METIS calls METIS_PartGraphKway of the system libmetis through cgo
// (metis_cgo.go; Debian libmetis-dev 5.1.0, 32-bit idx_t, so at most
// 2^31-1 adjacency entries) with ncon = 2 vertex weights (1 per node, 1
// per training node) so both are balanced, no edge weights, the edge-cut
// objective, METIS_OPTION_SEED from Options.Seed (mod 2^31-1) and C
// numbering; UFactor sets -ufactor (default 30, 1.03). A directed graph is
// symmetrised and self loops are dropped first. METIS's status codes
// become MetisError values. Without cgo (metis_stub.go) METIS returns
// ErrNotBuilt.
//
// # Random
//
// Random puts node v in part hash(seed, v) mod k.
//
// # Metrics
//
// Edge cut (undirected edges once), balance as max/mean over parts of
// nodes, adjacency entries and training nodes, the HaloHops-hop halo each
// part needs (nodes outside it within that many hops, DistDGL's HALO),
// and the figure that matters, cross-partition sampling traffic
// (SamplingTraffic): each part shuffles its training nodes into
// mini-batches of BatchSize (default 1000); from each batch, hop h samples
// up to Fanouts[h] (default 15, 10, 5) out-neighbours of every node first
// reached at hop h-1, uniformly without replacement (Floyd's algorithm),
// as PyG's NeighborLoader; the distinct nodes of the batch's subgraph
// that live on another part are remote, and remote × FeatBytes is the
// feature traffic. Figures are per epoch, averaged over SampleSeeds
// epochs (default 3), each batch with its own seeded generator, computed
// in parallel over batches.
//
// Run measures peak memory as the growth of the resident set (from
// /proc/self/statm, sampled every 2 ms, after a GC that returns free
// memory to the OS) over its level before the call, so libmetis's C heap
// counts as well as Go's; spikes shorter than 2 ms may be missed.
// `weft partition --compare` runs the three in one process one after the
// other; scripts/bench-partition.sh also runs each in a fresh process
// under GNU time for the process-wide peak.
//
// # Concurrency and build
//
// Partition, Evaluate and the metric functions block until done and use
// up to GOMAXPROCS goroutines; they never modify their inputs. Progress
// callbacks come from the calling goroutine only. METIS needs cgo and
// libmetis (`#cgo LDFLAGS: -lmetis`); everything else is pure Go. The
// package reads no environment variables.
package partition
