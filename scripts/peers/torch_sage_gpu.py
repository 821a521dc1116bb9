#!/usr/bin/python3
"""The PyTorch GPU peer of `weft train gnn --device cuda`.

GraphSAGE (mean aggregator) as a competent PyTorch user writes it for a
GPU without DGL or PyG: the graph (CSR), the features and the labels live
in device memory, and with --sample-on device so does the sampling, with
no Python loop over nodes or edges and no copy to the host per batch:

- neighbour draws: each frontier node's neighbours get one key from
  torch.rand; the keys sorted within each node's row (one sort of row id
  plus key) keep the first min(fanout, degree) of each row, which is a
  uniform draw without replacement, as Weft's gnn/sample makes;
- relabelling: torch.unique over the destinations and the drawn
  neighbours, reordered so that the destinations come first (the layer
  reads h_dst as the first rows of h_src);
- the mean: torch.nn.functional.embedding_bag over each destination's
  drawn sources (mode "mean", offsets from the row counts), or
  index_select + index_add_ (--agg scatter).

--sample-on cpu draws the same way on the host (the graph in host memory,
the blocks copied to the device per batch): the form with sampling on the
CPU and the model on the GPU, to compare with Weft's pipeline.

Same model as scripts/peers/torch_sage.py and `weft train gnn`: SAGE
layers y = W_self h_d + W_neigh mean(h_N(d)) + b, weights
U(-1/sqrt(in), 1/sqrt(in)), zero bias, ReLU and dropout between, Adam,
cross-entropy, fanouts first hop first.

--device cpu runs the same code on the CPU, so that the script is tested
where there is no GPU; its speed there says nothing.

Prints one line of key=value pairs: training nodes/s over the epochs
(sampling included, after a cuda synchronize), seconds, and the final test
accuracy (sampled with the same fanouts).

usage: torch_sage_gpu.py FILE.h5 [--device cuda|cpu] [--sample-on device|cpu]
                         [--fanout 10,5] [--batch 512] [--hidden 128]
                         [--epochs 2] [--lr 0.003] [--dropout 0.5]
                         [--seed 1] [--agg bag|scatter]
"""
import argparse
import sys
import time


def parse_args():
    ap = argparse.ArgumentParser(description="PyTorch GPU GraphSAGE peer of weft train gnn --device cuda")
    ap.add_argument("data")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--sample-on", choices=("device", "cpu"), default="device")
    ap.add_argument("--fanout", default="10,5")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=0.003)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--agg", choices=("bag", "scatter"), default="bag")
    ap.add_argument("--self-check", action="store_true",
                    help="check the sampler on the training nodes' batches (distinct true neighbours, "
                         "min(fanout, degree) of them, destinations first) and exit")
    a = ap.parse_args()
    try:
        a.fanouts = [int(f) for f in a.fanout.split(",")]
    except ValueError:
        ap.error(f"--fanout {a.fanout!r}: want comma-separated integers")
    if any(f < 1 for f in a.fanouts):
        ap.error(f"--fanout {a.fanout!r}: each fanout must be positive")
    for k in ("batch", "hidden", "epochs"):
        if getattr(a, k) < 1:
            ap.error(f"--{k} {getattr(a, k)}: want a positive count")
    if not 0 <= a.dropout < 1:
        ap.error(f"--dropout {a.dropout}: want a rate in [0, 1)")
    return a


import h5py  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as tnn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def load(path):
    try:
        with h5py.File(path, "r") as f:
            return {k: f[k][()] for k in ("graph/indptr", "graph/indices", "node/feat", "node/label",
                                          "split/train", "split/test")}
    except (OSError, KeyError) as e:
        sys.exit(f"torch_sage_gpu.py: {path}: {e}")


class Sampler:
    """Uniform neighbour sampling without replacement over a CSR graph held
    as tensors on one device; every step is a tensor expression."""

    def __init__(self, indptr, indices, gen):
        self.indptr, self.indices, self.gen = indptr, indices, gen

    def hop(self, dst, fanout):
        """(row, nbr): the destination position and node id of every drawn
        edge, rows ascending."""
        lo = self.indptr[dst]
        deg = self.indptr[dst + 1] - lo
        n = len(dst)
        row = torch.repeat_interleave(torch.arange(n, device=dst.device), deg)
        start = torch.cumsum(deg, 0) - deg
        pos = torch.arange(len(row), device=dst.device) - start[row]
        key = torch.rand(len(row), generator=self.gen, device=dst.device)
        order = torch.argsort(row.to(torch.float64) + key.to(torch.float64))
        # rank of each edge within its row after the shuffle
        keep = order[(torch.arange(len(row), device=dst.device) - start[row]) < fanout]
        keep, _ = torch.sort(keep)
        return row[keep], self.indices[lo[row[keep]] + pos[keep]]

    @staticmethod
    def block(dst, nbr):
        """The block's sources (dst first, then the other nodes) and each
        edge's source position, by torch.unique."""
        n = len(dst)
        uniq, inv = torch.unique(torch.cat([dst, nbr]), return_inverse=True)
        is_dst = torch.zeros(len(uniq), dtype=torch.bool, device=dst.device)
        is_dst[inv[:n]] = True
        order = torch.cat([inv[:n], torch.nonzero(~is_dst).squeeze(1)])
        newpos = torch.empty_like(order)
        newpos[order] = torch.arange(len(order), device=dst.device)
        return uniq[order], newpos[inv[n:]]

    def sample(self, seeds, fanouts):
        """Blocks, input layer first, as (num_dst, row, src_pos, counts),
        and the input nodes."""
        blocks, dst = [], seeds
        for fanout in fanouts:
            row, nbr = self.hop(dst, fanout)
            src, src_pos = self.block(dst, nbr)
            counts = torch.bincount(row, minlength=len(dst))
            blocks.append((len(dst), row, src_pos, counts))
            dst = src
        blocks.reverse()
        return blocks, dst


class SAGE(tnn.Module):
    def __init__(self, fin, fout, agg):
        super().__init__()
        self.self_ = tnn.Linear(fin, fout)
        self.neigh = tnn.Linear(fin, fout, bias=False)
        self.agg = agg
        bound = 1 / fin ** 0.5
        with torch.no_grad():
            self.self_.weight.uniform_(-bound, bound)
            self.neigh.weight.uniform_(-bound, bound)
            self.self_.bias.zero_()

    def forward(self, x, block):
        num_dst, row, src_pos, counts = block
        if self.agg == "bag":
            offsets = torch.cumsum(counts, 0) - counts
            m = F.embedding_bag(src_pos, x, offsets, mode="mean")
        else:
            inv = (1.0 / counts.clamp(min=1).to(x.dtype)).unsqueeze(1)
            m = torch.zeros(num_dst, x.shape[1], device=x.device, dtype=x.dtype).index_add_(
                0, row, x.index_select(0, src_pos)) * inv
        return torch.addmm(self.self_(x[:num_dst]), m, self.neigh.weight.t())


class Model(tnn.Module):
    def __init__(self, fin, hidden, classes, layers, dropout, agg):
        super().__init__()
        dims = [fin] + [hidden] * (layers - 1) + [classes]
        self.convs = tnn.ModuleList(SAGE(a, b, agg) for a, b in zip(dims, dims[1:]))
        self.drop = tnn.Dropout(dropout)

    def forward(self, x, blocks):
        for i, (conv, b) in enumerate(zip(self.convs, blocks)):
            x = conv(x, b)
            if i < len(self.convs) - 1:
                x = self.drop(torch.relu(x))
        return x


def self_check(smp, train, fanouts, batch):
    """Every block of every training batch holds, for each destination,
    min(fanout, degree) distinct true neighbours, with the destinations as
    the first sources; exits with a message naming the first violation."""
    indptr, indices = smp.indptr.cpu().numpy(), smp.indices.cpu().numpy()
    rows = 0
    for i in range(0, len(train), batch):
        dst = train[i:i + batch]
        for fanout in fanouts:
            row, nbr = smp.hop(dst, fanout)
            src, src_pos = smp.block(dst, nbr)
            d, r, nb = dst.cpu().numpy(), row.cpu().numpy(), nbr.cpu().numpy()
            if not np.array_equal(src[:len(dst)].cpu().numpy(), d) or not np.array_equal(src[src_pos].cpu().numpy(), nb):
                sys.exit(f"torch_sage_gpu.py: self-check: relabelling wrong at batch {i // batch}")
            for k, v in enumerate(d):
                got = nb[r == k]
                true = indices[indptr[v]:indptr[v + 1]]
                if len(got) != min(fanout, len(true)) or len(set(got.tolist())) != len(got) or not np.isin(got, true).all():
                    sys.exit(f"torch_sage_gpu.py: self-check: node {v}: drew {sorted(got.tolist())} "
                             f"of neighbours {sorted(true.tolist())} with fanout {fanout}")
            rows += len(d)
            dst = src
    print(f"self_check=ok rows={rows}")


def main(a):
    try:
        dev = torch.device(a.device)
        torch.empty(1, device=dev)
    except (RuntimeError, AssertionError) as e:
        sys.exit(f"torch_sage_gpu.py: --device {a.device}: {e}")
    sdev = dev if a.sample_on == "device" else torch.device("cpu")
    torch.manual_seed(a.seed)
    gen = torch.Generator(device=sdev)
    gen.manual_seed(a.seed)
    g = load(a.data)
    indptr = torch.from_numpy(g["graph/indptr"].astype(np.int64)).to(sdev)
    indices = torch.from_numpy(g["graph/indices"].astype(np.int64)).to(sdev)
    smp = Sampler(indptr, indices, gen)
    feat = torch.from_numpy(np.ascontiguousarray(g["node/feat"], dtype=np.float32)).to(dev)
    label = torch.from_numpy(g["node/label"].astype(np.int64)).to(dev)
    m = Model(feat.shape[1], a.hidden, int(label.max()) + 1, len(a.fanouts), a.dropout, a.agg).to(dev)
    opt = torch.optim.Adam(m.parameters(), lr=a.lr)
    lossf = tnn.CrossEntropyLoss()

    def batch(seeds):
        blocks, inputs = smp.sample(seeds, a.fanouts)
        if sdev != dev:
            blocks = [(n, r.to(dev, non_blocking=True), s.to(dev, non_blocking=True), c.to(dev, non_blocking=True))
                      for n, r, s, c in blocks]
            inputs = inputs.to(dev, non_blocking=True)
        return blocks, feat.index_select(0, inputs)

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    def accuracy(split):
        m.eval()
        correct = torch.zeros((), dtype=torch.int64, device=dev)
        with torch.no_grad():
            for i in range(0, len(split), a.batch):
                seeds = split[i:i + a.batch]
                blocks, x = batch(seeds)
                correct += (m(x, blocks).argmax(1) == label[seeds.to(dev)]).sum()
        return int(correct) / max(1, len(split))

    train = torch.from_numpy(g["split/train"].astype(np.int64)).to(sdev)
    if a.self_check:
        self_check(smp, train, a.fanouts, a.batch)
        return
    test = torch.from_numpy(g["split/test"].astype(np.int64)).to(sdev)
    seen, loss = 0, torch.zeros(())
    sync()
    t0 = time.perf_counter()
    for _ in range(a.epochs):
        m.train()
        perm = train[torch.randperm(len(train), generator=gen, device=sdev)]
        for i in range(0, len(perm), a.batch):
            seeds = perm[i:i + a.batch]
            blocks, x = batch(seeds)
            loss = lossf(m(x, blocks), label[seeds.to(dev)])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            seen += len(seeds)
    sync()
    elapsed = time.perf_counter() - t0
    acc = accuracy(test)
    print(f"nodes_per_s={seen / elapsed:.0f} seconds={elapsed:.2f} device={dev} sample_on={a.sample_on} "
          f"test_acc={acc:.4f} loss={float(loss):.4f}")


if __name__ == "__main__":
    main(parse_args())
