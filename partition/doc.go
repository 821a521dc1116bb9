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
// made multilevel (the scheme of METIS, Karypis and Kumar 1998, with
// BGL's blocks as its first level), on the undirected view of the graph
// (a directed CSR is symmetrised, self loops are dropped):
//
//  1. Blocks by multi-source BFS. Node v is a source when
//     hash(seed, v) < SourceFraction (default 2/MaxBlockSize); sources
//     are numbered in id order. The BFS is level-synchronous and parallel
//     over fixed chunks of the frontier; an uncoloured node reached in a
//     level takes the smallest block id among the frontier nodes that
//     reach it (an atomic minimum, so the result does not depend on
//     scheduling: "first colour that reaches it" with a deterministic
//     tie). Blocks stop growing at MaxBlockSize nodes (default
//     SmallBlockSize, 8); a block that would pass it in a level keeps its
//     new nodes of lowest id and releases the rest, which stay uncoloured
//     for other blocks. The BFS stops after Hops levels (default 3).
//     Leftover nodes are taken by a sequential BFS over uncoloured nodes
//     in id order (connected components), packed into blocks of at most
//     MaxBlockSize, so isolated nodes and small components share blocks.
//  2. Locality test: the graph has locality when the block graph of these
//     blocks (distinct neighbour blocks summed over blocks, counted in
//     parallel without building it) has at most LocalityShare (0.65) of
//     the adjacency's entries: the Fashion-MNIST 10-NN graph keeps 0.46
//     (20,000 images) and 0.53 (70,000), an SBM 0.85, R-MAT 0.72 at
//     scale 16 and 0.87 at scale 20. Without locality (and MaxBlockSize
//     unset) the blocks are replaced by clusters of size-constrained label
//     propagation: every node starts alone; for up to 5 rounds (until
//     under 1 node in 100 moves) the nodes, in a seeded random order,
//     join the cluster they have most edges into if it then holds at most
//     1.5|V|/(64k) nodes; nodes left alone next to a full cluster (the
//     leaves of a hub) are grouped by that cluster, and isolated nodes
//     packed together. BFS blocks of a random or power-law graph cut
//     through its communities and leave the refinement a random start
//     (on a 1M-node SBM, k = 4, 27% of the edges cut against 20.5% from
//     the clusters; METIS 24.5%).
//  3. Block graph: per block its node and training-node counts and its
//     neighbour blocks with the number of edges to each, built in
//     parallel over fixed ranges of blocks with per-worker scratch.
//  4. Coarsening, level by level, to about |B|/(5 log2 k) vertices with
//     locality (at least 30k) and 64k without: with locality by
//     heavy-edge matching (vertices in a seeded random order, each paired
//     with the unmatched neighbour of heaviest edge), without by the
//     label propagation of step 2 on the weighted graph; a level that
//     shrinks the graph by under 5% switches to the other scheme, and
//     coarsening stops when both stall. Coarse vertices hold at most 1.5x
//     the mean of the target level's nodes and training nodes.
//  5. Initial partition of the coarsest graph, the better (lower cut
//     after step 6 on that level) of nine: BGL's greedy assignment and
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
//  6. Refinement on every level from the coarsest down to the nodes,
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
//     1 vertex in 1000 or lowers the cut by under 0.1%. A part left empty
//     (k near |V|) then takes the node of the fullest part with the fewest
//     edges inside it.
//
// Edges are not balanced by BGL: on power-law graphs the hubs' clusters
// make edge balance (max/mean adjacency per part) 2.4-3.8 (METIS: about
// 2.2 to 2.4 on R-MAT too).
//
// Memory beyond the graph: the symmetric copy for a directed graph; about
// 40 bytes a node (blocks, clusters, parts, refinement scratch); the block
// graph and the coarse levels at 8 bytes per entry (capacity reserved once
// per level: pages never written stay out of the resident set), which on
// graphs without locality shrink fast under label propagation (a 1M-node
// R-MAT's 31M adjacency entries give a 6.8M-entry cluster graph), and the
// coarsest graph's per-try copies for the bisections.
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
