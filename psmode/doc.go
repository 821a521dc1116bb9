// Package psmode is Weft's parameter-server mode: workers push gradients
// and pull parameters by key, servers aggregate the pushes of a step, apply
// a server-side optimizer and serve the pulls, and PSLD (Elastic Parameter
// Server Load Distribution, SoCC 2020) moves keys between servers while
// training runs, to work around slow servers.
//
// # Roles from one launch
//
// Every rank calls Run with the same Config on a world communicator
// (collective.Open under mpirun, or collective.NewLocal for in-process
// ranks). Ranks [0, Workers) are workers; worker 0 also runs the scheduler
// (ps-lite's scheduler role, inside rank 0). Ranks [Workers,
// Workers+Servers) are the active servers, then Standby idle server ranks
// that scale-out can activate. All traffic goes through collective's
// point-to-point Send and Recv, so parameter-server traffic runs on
// whichever backend the world communicator has, like every other byte
// Weft moves between ranks.
//
// Job is a whole training job on top of Run: the workers train nn's
// Fashion-MNIST MLP (nn.MLP, its forward, backward and loss) through the
// servers, its parameters padded to a model-sized vector; `weft ps` runs
// it under a launcher, package psmode/psbench (`weft ps bench`) on
// in-process ranks under stragglers.
//
// # Workers on a GPU
//
// A worker whose model lives on an nn.Device pushes and pulls through
// Staging: its Step copies each key's gradient from device memory into
// pinned host memory and sends it, and copies each pulled key into the
// parameters in device memory, with two pinned buffers per direction so
// that the copies of one key overlap the network transfer of the next;
// a key is sent only after the event recorded behind its copy completes.
// Job.OnDevice trains the MLP so (nn's device path). The servers, the
// table and PSLD see the same messages from a device worker as from a CPU
// worker: the results are the same bits (TestDeviceWorker, with
// migrations, scale-out, scale-in and a straggler).
//
// # Keys, table, versions
//
// Tensors (Config.Sizes, float32) are laid end to end and cut into keys of
// at most PartitionBytes (BytePS's 4096000 by default); a key never spans
// two tensors, and keys are numbered in order, so they are sorted and cut
// into server ranges. The shard Table maps each key to a server index and
// carries a version. The static assignment (UniformTable) gives the active
// servers contiguous key ranges of equal bytes (ps-lite's ranges, balanced
// by bytes as BytePS accounts them).
//
// A key's version counts the updates applied to it. In synchronous mode a
// push carries the step it was computed at, the server sums the pushes of
// all workers for that step, applies the optimizer to the mean, and the
// key moves to version step+1; a pull asks for a minimum version and waits
// on the server until the key reaches it. So Step(t) returns the parameters
// after update t on every worker. In asynchronous mode (Config.Async,
// WEFT_PS_ASYNC=1) every push is applied on arrival with the gradient
// divided by the number of workers, and pulls return the current value.
//
// # Equality with allreduce
//
// The servers' update rules are nn's optimizers: Optimizer.ForKey gives a
// key nn.SGD ("sgd", "momentum") or nn.Adam ("adam") over its parameters,
// stepped on the gradient g*scale (+ WeightDecay*w), with T the key's
// version + 1 (TestOptimizerIsNN). The state (nn's State) migrates with
// the key between servers.
//
// The servers compute ForKey(n).Apply(w, sum of pushes, 1/W, ...), the
// function a worker calls after an allreduce of the same gradients, with
// the same per-key state. The only difference is the order of the sum:
// the server adds pushes in arrival order, the allreduce in its own.
// Integer-valued gradients give bit-identical parameters; in general the
// parameters agree to a relative 1e-5 over a few steps (TestAllReduceEquality,
// SGD, momentum and Adam), the rounding of one float32 sum per step.
//
// # Wire protocol
//
// A worker sends a fixed header (int64 words: op, key, step, version,
// table version, payload length, statistics) and, for pushes and the
// initial values, a float32 payload on a second tag. A server has one
// receiving goroutine per worker, which takes each header and its payload
// from that worker as a pair (an AnySource receive would have to look the
// payload's sender up), and one loop that handles requests one at a time. Responses come
// back the same way; the response to worker 0's pull of a key carries the
// key's measurements since the last report. Migrations use one pair of
// tags per key between the two servers.
//
// # Measurements
//
// Per server and key, the servers measure each step: the queueing time of
// pushes and pulls (arrival to the start of handling) and their service
// time (a push: summing and, for the last push of the step, the
// optimizer; a pull: from the start of the send to its completion). The
// scheduler sums them per server and step (Record.Steps) with worker 0's
// iteration time.
//
// # PSLD: the method and its parameters (PSLDConfig)
//
// The paper (Chen et al., "Elastic Parameter Server Load Distribution in
// Deep Learning Clusters", ACM SoCC 2020) names the causes of PS
// stragglers: imbalanced parameter distribution, bandwidth contention,
// computation interference. Its abstract, and that of the HKU thesis that
// collects it ("Exploiting characteristics of data parallelism for
// efficient distributed machine learning systems", 2023), give the method:
// an exploitation-exploration search that scales servers in and out and
// moves parameters between them while training runs, through an elastic
// scaling module that barely interrupts training, for up to 2.86x faster
// training under stragglers. The detection signal, reward, exploration
// rate and migration protocol are not in the material available to us
// (the abstracts and the authors' released code), so the design here is
// Weft's own:
//
//   - Signal. For each server, its push service time per byte in a step;
//     an EWMA (Alpha 0.3) after Warmup (2) steps, skipping the step after
//     every table change (it pays the migration and first touches of
//     buffers). Two samples in a row more than Straggler (1.5) times away
//     from the average are a change point: the average restarts from the
//     sample and the scheduler marks the step as a regime change.
//   - Detection. A server whose cost per byte is above Straggler (1.5) times
//     the median of the other active servers is a straggler (an Event;
//     nothing is configured: stragglers come only from measurements).
//   - Exploitation. The predicted time of server s is load_s * cost_s. When
//     the largest exceeds the balanced time (total load / sum of 1/cost_s)
//     by more than Imbalance (25%), keys move one at a time from the
//     predicted slowest server to the predicted fastest while that lowers
//     their maximum, at most MaxMoves (8) keys per decision.
//   - Exploration. After ExploreEvery (20) quiet steps, with probability
//     ExploreProb (0.5), one of: scale-out (a standby server joins, cost
//     assumed the median, and the exploitation rule balances onto it) or
//     scale-in of a detected straggler (all its keys go, one by one, to the
//     server predicted fastest; it stays as a standby). With no standby and
//     no straggler there is nothing to explore, so a healthy job pays only
//     the table agreement.
//   - Trial. Every change runs for Window (5) steps, measured from the
//     second step after the switch. The baseline is the median iteration
//     time of up to Window steps before the decision, none before the last
//     change point nor carrying a migration. A rebalance is kept unless the
//     trial's median is worse by more than Keep (2%); a scale-out or
//     scale-in is kept only if it is better by at least Gain (3%).
//     Otherwise the previous table comes back (a rollback, itself a
//     migration). A change point during a trial ends it without a verdict
//     (the comparison would mean nothing) and the table stays.
//   - Cool-down. Cooldown (3) steps after each verdict; it doubles after
//     each rollback, up to 16 times, and resets when a change is kept.
//
// # Migration
//
// At the end of every step under PSLD the workers run one small allreduce
// over their own communicator: worker 0 contributes the new table (or
// nothing), the others zeros. It also proves that every worker has
// finished its pulls of the step, so every key is quiescent: all pushes of
// the step applied, no pull waiting. Every worker switches to the new table
// there, before it pushes again. Worker 0 then sends, for each moving key,
// MigrateOut to the old server and MigrateIn to the new one. The old
// server sends the key's parameters, optimizer state and version and drops
// it; the new one installs them and then handles the requests that arrived
// for the key before it did (they wait in a queue: the freeze covers only
// moving keys). Nothing is applied twice or lost: the step's pushes were
// all applied on the old server before the copy, and every later push
// goes to the new one (TestMigration checks the exact sums). The pause
// of a key (MigrateIn to installed) is reported to worker 0
// (Record.Pauses). Scale-out is a move onto a standby server, scale-in
// moves every key off a server, which stays in its loop as a standby.
//
// # Failures
//
// A server that dies fails the world communicator: every worker's pending
// and later operations return an error that names the server ("psmode:
// server 1 (rank 3) failed: ...") within WEFT_TIMEOUT, and the workers'
// Step returns it (TestServerCrash, TestKilledServer). The job cannot go
// on: recreate the communicator and restart from a checkpoint.
//
// # Straggler injection and emulated links
//
// WEFT_PS_SLOWDOWN=server:factor[@step][,...] makes a server (index among
// server ranks) wait (factor-1) times each service time, from the given
// step; WEFT_PS_SLOWDOWN_MODE=cpu burns that time in a busy loop on the
// server's goroutine (computation interference) instead of sleeping.
// WEFT_PS_LINK_RATE (bytes per second) emulates each server's network
// link: a server spends bytes/rate on every push it receives and every
// value it sends. In-process ranks move bytes with memcpy on shared cores
// that no server owns; the emulated link gives each server the bandwidth
// bottleneck a real one has, which is what PS stragglers slow down.
//
// # Environment
//
// Read once, in params.go; Config fields override them:
//
//	WEFT_PS_PARTITION_BYTES  bytes per key (default 4096000)
//	WEFT_PS_ASYNC            1: asynchronous mode
//	WEFT_PS_BALANCE          static (default) or psld
//	WEFT_PS_SLOWDOWN         server:factor[@step], comma-separated
//	WEFT_PS_SLOWDOWN_MODE    sleep (default) or cpu
//	WEFT_PS_LINK_RATE        emulated per-server link, bytes/s (default 0: none)
//
// # Concurrency
//
// Run blocks until the rank's part is done. A Worker's Push and Pull may
// be called from several goroutines (one pending Pull per key); Step, Init
// and Close must not run concurrently with anything else on the Worker.
// Push's gradient and Pull's destination belong to the operation until its
// Op completes. A Staging's Init and Step count as the Worker's Init and Step;
// its Step runs the pushes and the pulls on two goroutines of its own.
package psmode
