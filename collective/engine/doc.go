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
//   - endpoint.go: one rank's attachment to a transport. A reader goroutine
//     per peer matches incoming frames to posted receives by exact key
//     (communicator, sequence, tag; point-to-point messages by their
//     number on a (peer, tag) pair), keeps frames that arrive early, and
//     detects mismatches from the description every frame carries. The
//     polling wait (pollWait) lets the goroutine that waits for a message
//     read the link itself instead of being woken by the reader.
//     Heartbeats keep idle links alive; a peer silent for the timeout, a
//     broken link or a mismatch fails the endpoint, and an abort frame
//     tells every peer. A collective also blames a peer that has not
//     joined it for the timeout; a point-to-point receive waits for its
//     message as long as its context allows while the sender is alive.
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
//   - conn.go: a communicator's part of the endpoint (the world, a split,
//     or one the hierarchical algorithms derive): Run, Start, Split, and
//     the primitives the algorithms use (send, recv, reducing receive,
//     wait).
//   - algo.go and one file per algorithm: the shared-segment allreduce
//     for a communicator on one host (allreduce_shm.go, over
//     transport/shm's Group; it compares every rank's call in the
//     segment's first step), ring and recursive-doubling allreduce, tree
//     and chain broadcast and reduce, ring and recursive doubling
//     allgather and reduce-scatter, pairwise all-to-all, dissemination
//     barrier, linear gather and scatter, chain scan, and hier.go's
//     hierarchical allreduce, broadcast and allgather for ranks that span
//     hosts, and the rank-ordered reduce for reductions that do not
//     commute (reduce_ordered.go, which says which algorithms keep rank
//     order). docs/ALGORITHMS.md gives each one's cost and when it is
//     chosen.
//
// # Concurrency
//
// The front end runs the collectives of one conn one at a time; their
// state (sequence number, scratch buffers, the running operation) needs no
// lock. Point-to-point calls run beside them and number their messages
// under the conn's mutex. Every frame of a link is written under the
// peer's write lock and read by one goroutine at a time (the read token).
package engine
