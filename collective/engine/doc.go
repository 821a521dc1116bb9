// Package engine is Weft's own backend under package collective: the
// "tcp" and "local" backends of collective.Open and collective.NewLocal.
// Programs use package collective; this package implements its driver
// interface (collective/driver) over Weft's transports.
//
// # What is here
//
//   - bootstrap.go: Open, the world of a multi-process job. Rank 0 serves a
//     key-value store (internal/rendezvous) at the master address, or
//     publishes its address in a file, for the life of the world; every
//     rank joins it with its listener's address (the store refuses a rank
//     taken twice or a world size other than rank 0's, and every rank then
//     fails at once), connects to every other over TCP (transport/tcp)
//     with the job token and the session nonce only joined ranks learn,
//     and the pairs on one host (same host name and boot id) move to
//     shared memory (transport/shm) unless WEFT_SHM is off. The
//     token is cfg.Token, else derived from the launcher's job secret,
//     else made by rank 0 and carried by a file only this user can read.
//     NewLocal: goroutine ranks over transport/inproc.
//   - endpoint.go: one rank's attachment to a transport, its life and its
//     failure: a peer silent for the timeout, a broken link or a mismatch
//     fails the endpoint, and an abort frame tells every peer. A
//     collective also blames a peer that has not joined it for the
//     timeout; a point-to-point receive waits for its message as long as
//     its context allows while the sender is alive. Its parts, one file
//     each: read.go, a reader goroutine per peer that hands each frame to
//     its posted receive or keeps it, and the polling wait (pollWait) that
//     lets the goroutine that waits for a message read the link itself
//     instead of being woken by the reader; match.go, matching by exact
//     key (communicator, sequence, tag; point-to-point messages by their
//     number on a (peer, tag) pair, p2p.go) and the mismatches told from
//     the description every frame carries; post.go, posted receives;
//     write.go, the writes, and the heartbeats that keep idle links alive;
//     pool.go, the buffers of frames that arrive early and of partial sums.
//   - agree.go: the rule that makes a mismatch fail on every rank. Every
//     collective ends in agreement: a rank returns success only once
//     every rank's call has reached it, directly or through other ranks,
//     in frames each receiver checked against its own call (the
//     collective's kind, element type, count, reduction, root and
//     algorithm, and for a step of a hierarchical collective a hash of
//     that call; frames match by communicator and operation number, and
//     a message must fit its receive). The allreduces, allgathers,
//     reduce-scatters, all-to-alls and the barrier agree through their
//     data; the broadcast and reduce trees run on the dissemination
//     barrier's rounds (every rank sends and hears in each); the chains
//     send an acknowledgement against their data; gather, scatter, scan
//     and calls without elements end with a dissemination barrier
//     (agree). So no rank returns success for a call that fails
//     elsewhere; the price is that a broadcast root or a reduce leaf
//     waits for the others, as in an allreduce (docs/BENCHMARKS.md).
//     A rank that has waited 10 ms on a peer sends it a probe with its
//     call, so that ranks waiting for each other in different calls (one
//     in a receive, one on the shared segment) learn of it in bounded
//     time. Calls on two communicators in different orders are not a
//     mismatch one can tell from a late rank: they time out, and the
//     error names the other communicator's operation.
//   - vote.go: who is blamed. Every rank that fails with a mismatch sends
//     its call; the lowest rank of the communicator collects the calls
//     (up to 500 ms), blames the lowest rank of the smallest group of
//     ranks that made the same call (of two ranks, the higher one), and
//     sends the verdict to every rank, which returns it and logs it: every
//     rank names the same culprit.
//   - recover.go: after a failure, the survivors' agreement (Agree, Shrink):
//     a failed endpoint keeps reading and beating on its live links; a
//     coordinator, the lowest rank not counted failed, collects every
//     rank's flag and failed set and decides, ranks promise the highest
//     coordinator that asked them and tell a later one the result they
//     were told, so a coordinator's death leaves all with one result; the
//     shrunk world is a new endpoint whose links are tunnels through the
//     old ones.
//   - conn.go: a communicator's part of the endpoint (the world, a split,
//     or one the hierarchical algorithms derive): Run, Start, Split, and
//     the primitives the algorithms use (send, recv, reducing receive,
//     wait).
//   - p2p.go: point-to-point matching (for the Send and Recv that conn.go
//     runs, and Probe), as MPI matches: a sender numbers its messages to
//     each destination in the order it starts them, and a receive (a
//     source or AnySource, a tag or AnyTag) takes the earliest unmatched
//     message it matches.
//   - params.go: every WEFT_* setting the engine reads, one line each;
//     options_cpu.go: the spin setting for the ranks a host holds.
//   - algo.go: the algorithms of each collective in order of preference,
//     which one a call runs, and WEFT_ALGO.
//   - steps.go: the steps the algorithms share: cutting a buffer into
//     blocks and chunks, the reduction with nothing to exchange (alone),
//     recursive doubling, and the pipelined ring step (ring: post the
//     next step's receive, wait for this one's chunk, forward it) that
//     the ring allreduce, reduce-scatter and allgather run.
//   - One file per algorithm (or per collective with its algorithms):
//     allreduce_shm.go, the shared-segment allreduce for a communicator
//     on one host (over transport/shm's Group; it compares every rank's
//     call in the segment's first step); allreduce_rd.go, recursive
//     doubling; allreduce_rh.go, Rabenseifner's (recursive halving, then
//     doubling); allreduce_ring.go, the ring; broadcast.go, the binomial
//     tree and the pipelined chain; reduce_tree.go, the reduce's binomial
//     tree and chain; allgather.go, ring (also allgatherv and the
//     exchange of a Split) and recursive doubling; reducescatter.go, ring
//     and recursive doubling; alltoall.go, pairwise all-to-all and
//     all-to-allv; barrier.go, the dissemination barrier (its rounds are
//     agree.go's); rooted.go, linear Gather/GatherV and Scatter/ScatterV,
//     and the chain of Scan and Exscan; hier.go, the hierarchical
//     allreduce, broadcast and allgather for ranks that span hosts;
//     reduce_ordered.go, the rank-ordered reduce for reductions that do
//     not commute (it says which algorithms keep rank order).
//     docs/ALGORITHMS.md gives each one's cost and when it is chosen.
//
// # Concurrency
//
// The front end runs the collectives of one conn one at a time; their
// state (sequence number, scratch buffers, the running operation) needs no
// lock. Point-to-point calls run beside them and number their messages
// under the conn's mutex. Every frame of a link is written under the
// peer's write lock and read by one goroutine at a time (the read token).
package engine
