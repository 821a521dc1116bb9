// Package sapipe is SAPipe (NeurIPS 2022, "SAPipe: Staleness-Aware Pipeline
// for Data Parallel DNN Training"): a data-parallel trainer over a
// *collective.Comm with three ways of meeting gradients and
// updates, bucketed gradient reduction that overlaps compute, and the
// staleness compensation fused into the optimizer's single pass.
//
// # Data parallel
//
// Every rank holds a replica of an nn.Sequential. Step t on rank i computes
// the local gradient g_t^i on the rank's own samples (see Shard); the
// averaged gradient G_t = mean_i g_t^i is obtained by allreduce (Avg); every
// rank applies the same updates, so the real parameters are identical on
// every rank, bit for bit, after every step. O(w, g) is one step of the
// nn.Optimizer.
//
// # Buckets
//
// The parameters are one flat vector in layer order. Backward produces
// gradients from the last layer to the first; the trainer cuts the layers,
// in that reverse order, into buckets that close once they hold
// Config.BucketBytes (whole layers, Horovod's tensor fusion) and at the
// border between stale and fresh layers. A bucket's allreduce is issued
// (IAllReduce, running on the communicator's goroutine) as soon as backward
// has finished the bucket's first layer, so it overlaps the rest of
// backward. Collectives of one communicator run in issue order. Local
// gradients and reduced gradients are double-buffered by step parity, so a
// reduction may stay in flight while the next step's backward writes the
// other buffer.
//
// # Modes
//
// With the weights w_t that step t computes with:
//
//   - BSP (non-stale, BytePS): w_{t+1} = O(w_t, G_t). At the end of step t the
//     trainer waits for every bucket of step t and applies it. Communication
//     overlaps only the rest of step t's backward.
//   - PipeSGD (staleness 1, no compensation): w_{t+1} = O(w_t, G_{t-1}). At the
//     start of step t+1 the trainer waits for the buckets of step t-1 and
//     applies them; the reduction of step t overlaps all of step t+1.
//   - SAPipe (partial staleness): the first Config.StaleLayers layers that
//     have parameters (default 1) are stale as in PipeSGD; every other layer
//     is fresh: just before its forward in step t+1, the trainer waits for
//     the reduced gradient of its bucket from step t and applies it, so its
//     communication overlaps the backward of the layers before it in step t
//     and their forward in step t+1. Stale layers get the compensation below
//     (each part on or off, for ablation). These layers' gradients come last
//     in backward and are needed first in forward, which is why their
//     communication cannot be hidden without staleness.
//
// PipeSGD and SAPipe first take Config.Warmup steps as BSP. The first stale
// step t0 = Warmup issues gradients that are applied at the start of step
// t0+2, so the stale layers take no update at the start of step t0+1 (the
// pipeline's bubble). Flush drains: it applies every pending reduction
// without compensation.
//
// # Staleness compensation (SAPipe, stale layers only)
//
// The update at the start of step t+1 applies G_{t-1}, computed at step
// t-1, to the real weights w_t. It is one pass over the bucket's
// parameters (nn.Update), per parameter:
//
//  1. delay compensation (Config.Compensate; DC-ASGD's first-order Taylor
//     correction with a diagonal Hessian approximation), with
//     dw = w_t - w_{t-1}, the real weights now and one update back:
//     G' = G + lambda*G*G*dw, or with Config.Adaptive
//     G' = G + lambda*G*G*dw/sqrt(G*G + 1e-7); lambda is Config.Lambda
//     (default 0.04). dw is taken on the real weights even with weight
//     prediction: the predicted ones differ between ranks, and a
//     correction computed from them would make the real weights drift
//     apart;
//  2. w_{t-1} := w_t, kept for the next compensation. Optimizers that
//     know their last step from their state (nn.DeltaFromState: SGD, whose
//     last step moved the weights by -lr*v) need no copy: dw comes from
//     the momentum, and the first update after a step start without one
//     (the bubble, after a Flush) goes uncompensated, as dw is then zero;
//  3. the real update w_{t+1} = O(w_t, G'), advancing the optimizer's
//     state;
//  4. weight prediction (Config.Predict): a throw-away step from the new
//     real weights with an estimate of the gradient G_t still in flight,
//     w^_{t+2} = O(w_{t+1}, G^_t), the optimizer's state change discarded.
//     Step t+1 computes with w^_{t+2}, the estimate of the weights its
//     gradient will be applied to. Estimators: Local (default,
//     G^_t = g_t^i, this rank's own gradient of step t) and PrevSync
//     (G^_t = G_{t-1}, the gradient just applied).
//
// Without prediction the model computes with the real weights. With
// prediction the stale layers' real weights live in a second vector and
// the weights the model computes with differ between ranks; only the real
// ones are kept identical. The fresh layers are updated plainly, in the
// model's own weights, which are their real ones (Trainer.Real gathers the
// whole real vector when asked). When a stale layer has no update due
// (warm-up, the bubble, after a Flush) step 2 alone runs, as a copy of the
// real weights (nothing, with dw from the optimizer's state). An update
// without compensation (warm-up, Flush) sets a stale layer's live weights
// to its real ones.
//
// # Cost
//
// Compensation and prediction are the same single pass as a plain
// optimizer step with up to three more vectors read or written (w_{t-1},
// the live weights, the estimate); with SGD's dw from the momentum, two
// (the estimate read, the live weights written): seven streams against a
// plain step's five. With cgo on amd64, nn.SGD's pass (dw from the
// momentum, compensation not Adaptive) is csrc/nn's SGD, a vectorised loop, with
// the Go loop's bits; it is bound by memory, not arithmetic. The fresh
// layers pay nothing for prediction. Stats.Update measures the
// passes.
//
// # On a device
//
// A model placed on a CUDA device (nn's Sequential.To; Job.Device) trains
// there: the live and real weights, delay compensation's copy, the
// double-buffered local and reduced gradients and the optimizer's state
// (nn's SGD and Adam, InitOn) are device tensors, and every kernel of a
// step (forward, backward, the updates with the compensation and the
// prediction fused in: nn's weft_sgd and weft_adam, the copies) queues on
// the nn.Device's stream in the order the host path runs them. BSP,
// PipeSGD and SAPipe run the same device way.
//
// A bucket's reduction is ordered by a CUDA event: when backward has
// queued the bucket's gradients, the trainer records the bucket's event
// on the stream, and a goroutine waits for it (the gradients are then in
// device memory, as collective.DeviceBuf requires at issue), then for the
// reduction before it to be issued (every rank issues in the same order),
// and issues an IAllReduce (Avg) on the device buffers. The communicator
// runs it off the compute stream: through NCCL on a stream of its own
// when each rank has its own GPU, else staged through pinned host memory
// on copy streams of its own. The update that consumes the reduced
// gradients is queued once the reduction has completed (its result is
// then visible to every stream). Step returns once its reductions are
// issued, that is once the device has run the step's backward, so that a
// collective the caller issues next comes after them on every rank; step
// t's reductions then run while step t+1 computes. Collectives of the
// package's front end order device calls on the host (the input complete
// at issue, the result at completion), so the producing side is an event
// and the consuming side the request's completion.
//
// The device computes what the CPU computes but for the GEMMs' summation
// order (cuBLAS's, or the host-memory fake's), so a run on a device
// follows the CPU's within float32 rounding (the tests state the
// bounds), and every rank's real weights are the same bits. On a device
// the statistics are the host's: Update is the time to queue the update
// kernels (their run time is part of Compute), and Exposed the time the
// host waited for a reduction, while the device may still have been
// running kernels queued before. Real reads the real weights back. Close
// frees what the trainer placed on the device.
//
// # Jobs
//
// Job is the epoch loop around a Trainer that `weft train mlp|cnn` and
// `weft bench sapipe` run on every rank: it builds nn's Fashion-MNIST MLP
// (784-256-256-10) or CNN and nn's SGD or Adam from names, trains
// Job.Epochs epochs of Trainer.Epoch (on Job.Device when set) (Shard's samples, at most
// Job.MaxSteps steps each), evaluates the test accuracy on rank 0 after
// each epoch while the other ranks wait in a barrier, flushes, and returns
// the Result: the statistics of the steps after Job.Skip, the accuracy
// curve and the final accuracy. Report's functions receive the progress on
// rank 0; printing it is the caller's. Package collective/ranks runs Run on
// goroutine ranks or on the launched world.
//
// # Time
//
// Each Step returns Stats: wall time; compute (wall minus exposed);
// communication (the time the step's consumed reductions occupied the
// communicator, from issue or the end of the reduction before to
// completion); exposed communication (the time the step blocked waiting for
// a reduction). A communicator opened with collective.WithEmulatedLink is
// as slow as a link of a given bandwidth, so that a single machine can
// show what overlap buys when communication is as long as compute.
//
// # Concurrency
//
// A Trainer, and a Job's Run, is driven by one goroutine per rank. Its reductions run on the
// communicator's goroutines and on one waiting goroutine per bucket and
// step (on a device, it first waits for the bucket's event and issues
// the reduction). The context given to Step bounds the waits; when it ends the
// communicator is aborted, since a reduction in flight owns the gradient
// buffers and cannot be withdrawn from the peers.
package sapipe
