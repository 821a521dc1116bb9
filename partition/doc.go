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
// made multilevel (the scheme of METIS, Karypis and Kumar 1998), on the
// undirected view of the graph (a directed CSR is symmetrised, self loops
// are dropped), then refined for the sampling traffic itself:
//
//  1. Clusters by size-constrained label propagation: every node starts
//     alone; for up to 5 rounds (until under 1 node in 100 moves) the
//     nodes, in a seeded random order, join the cluster they have most
//     edges into if it then holds at most 1.5|V|/(64k) nodes; nodes left
//     alone next to a full cluster (the leaves of a hub) are grouped by
//     that cluster, and isolated nodes packed together. A round runs in
//     about 64 sub-rounds, fixed slices of the order: the nodes of a
//     sub-round propose their cluster in parallel against the labels at
//     its start, then the proposals are applied in order, each re-checked
//     against the cap and dropped when its cluster has emptied meanwhile
//     (so two neighbours cannot swap clusters, which is what kept a
//     fully synchronous parallel version from shrinking R-MAT's graph);
//     after the first round only the nodes next to a move propose. The
//     result depends on the slices, fixed by |V|, not on scheduling.
//     With MaxBlockSize set, the paper's blocks replace the clusters: a
//     multi-source BFS from the nodes v with hash(seed, v) <
//     SourceFraction (default 2/MaxBlockSize), level-synchronous and
//     parallel, an uncoloured node taking the smallest block id among the
//     frontier nodes that reach it (an atomic minimum), blocks capped at
//     MaxBlockSize nodes (a block that would pass it keeps its new nodes
//     of lowest id), Hops levels (default 3), leftovers packed into
//     blocks by a sequential BFS in id order. Issue 21 used BFS blocks of
//     8 nodes on graphs with locality (the k-NN graphs): their sampled
//     traffic stayed at 1.20x METIS's at k = 8, against 0.93-1.13x from
//     the clusters over seeds 1-5 (before step 6), the blocks being
//     too crude a start for the refinement (the cut at the first level
//     was twice the final one).
//  2. Block graph: per cluster its node and training-node counts and its
//     neighbour clusters with the number of edges to each, built in
//     parallel over fixed ranges of clusters with per-worker scratch.
//  3. Coarsening, level by level, to about 64k vertices by the label
//     propagation of step 1 on the weighted graph; a level that shrinks
//     the graph by under 5% switches to heavy-edge matching (vertices in
//     a seeded random order, each paired with the unmatched neighbour of
//     heaviest edge), and coarsening stops when both stall. Coarse
//     vertices hold at most 1.5x the mean of the target level's nodes and
//     training nodes.
//  4. Initial partition of the coarsest graph, the better (lower cut
//     after step 5 on that level) of nine: BGL's greedy assignment and
//     8 recursive bisections (seeded, in parallel). The assignment takes
//     blocks largest first (ties by block id), each to the part i
//     maximising
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
//     30%). Each bisection (METIS's initial partitioning) coarsens its
//     part of the graph by matching to about 100 vertices, grows one side
//     from a random vertex taking the neighbour that adds least cut until
//     it holds its share (k1/k) of nodes plus training nodes (4 tries),
//     and refines it by Fiduccia-Mattheyses passes (moves by gain from a
//     heap, side 0 within 3% of its share, roll back to the best prefix)
//     on every level back up.
//  5. Refinement on every level from the coarsest down to the nodes,
//     after projecting the parts: first a balancing step when a part holds
//     more than C = 1.1|V|/k nodes or 1.03|V_train|/k training nodes
//     (vertices of the overfull part, cheapest first, each re-targeted
//     when it moves to the neighbouring part with room it is most
//     connected to, or the emptiest with room); then greedy k-way
//     boundary refinement (METIS's scheme), up to RefinePasses passes
//     (default 64): every candidate vertex (all in the first pass, then
//     those next to a move) proposes, against the assignment at the start
//     of the pass and in parallel over fixed chunks, the part it has most
//     edge weight into within the bounds, when that lowers the cut or
//     keeps it and evens the node counts; proposals are applied one by
//     one, highest gain first (ties by id), each re-checked against the
//     current assignment and bounds. A level stops when a pass moves under
//     1 vertex in 1000 or lowers the cut by under 0.1%.
//  6. Sampling-aware refinement of the nodes, when the partition cuts at
//     most SampleRefineCut (15%) of the edges (the k-NN graphs cut 2-8%,
//     where the parts have interiors; the SBMs and R-MAT 20-60%, where it
//     gained under 1% for about 9 sparse products over the graph per
//     part and round), up to SampleRounds rounds (default 3). The
//     traffic of a part is the nodes its mini-batches sample that live
//     elsewhere, and what a part samples depends only on where its
//     training nodes are; equal cuts can differ by 20% in that traffic,
//     which follows how compact a part is three hops out. Under the
//     sampling of SamplingTraffic (BGL.Fanouts, BGL.BatchSize; defaults
//     15,10,5 and 1000), one part q at a time, in parallel over fixed
//     ranges of nodes: the probability that a batch of q reaches each
//     node is propagated hop by hop from q's training nodes (node u keeps
//     a given neighbour with probability min(1, fanout/deg u); a node's
//     reach is 1 - the product over its neighbours of missing it); then,
//     backwards, A_q(t), the expected number of nodes that training node
//     t's sampled tree reaches which are in q or which a batch of q
//     samples anyway. A round first moves training nodes t to the part q
//     of largest A_q(t), the moves that gain more than half a node per
//     epoch over t's own part, within both bounds, best first (a move
//     that does not fit swaps with a waiting one the other way); then,
//     the propagation redone, the other nodes, which change only whether
//     they are remote themselves, each to the part whose batches sample
//     it most (expected batches per epoch), by the same rule within the
//     node bound. Smaller gains are within the model's error and cost cut
//     only. Memory: six floats or ids per node, whatever k. A part left
//     empty (k near |V|) then takes the node of the fullest part with the
//     fewest edges inside it.
//
// Edges are not balanced by BGL: on power-law graphs the hubs' clusters
// make edge balance (max/mean adjacency per part) 2.4-3.8 (METIS: about
// 2.2 to 2.4 on R-MAT too).
//
// Memory beyond the graph: the symmetric copy for a directed graph; about
// 40 bytes a node (clusters, parts, refinement scratch, one count array
// per worker in label propagation) and 24 more in the sampling-aware
// refinement; the cluster graph and the coarse levels at 8 bytes per
// entry (capacity reserved once per level: pages never written stay out
// of the resident set), which shrink fast under label propagation (a
// 1M-node R-MAT's 31M adjacency entries give a 6.8M-entry cluster
// graph), and the coarsest graph's per-try copies for the bisections.
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
// up to GOMAXPROCS goroutines (the one parallel loop of internal/par,
// shared with package graph); they never modify their inputs. Progress
// callbacks come from the calling goroutine only. METIS needs cgo and
// libmetis (`#cgo LDFLAGS: -lmetis`); everything else is pure Go. The
// package reads no environment variables.
package partition
