#!/usr/bin/python3
"""The PyTorch peer of `weft train gnn` for scripts/bench-gnn.sh.

A CPU GraphSAGE (mean aggregator) in PyTorch + numpy, trained by
mini-batches with neighbour sampling, written as a competent user without
DGL writes it: nothing in Python runs once per node or per edge.

Same as Weft's run: the model (SAGE layers y = W_self h_d + W_neigh
mean(h_N(d)) + b, weights U(-1/sqrt(in), 1/sqrt(in)), zero bias, ReLU and
dropout between), fanouts (first hop first, as `weft train gnn` and PyG
take them), batch, Adam and its learning rate, cross-entropy, the thread
count (torch.set_num_threads), and the sampling: each destination draws
min(fanout, degree) distinct neighbours uniformly (every neighbour when the
degree is at most the fanout), as Weft's gnn/sample does with Floyd's
algorithm.

The sampler is vectorised: per hop, Floyd's algorithm runs over all the
hop's destinations at once (fanout steps of array expressions, one draw
per row each), the neighbours are read by one fancy index into the CSR,
the new nodes are numbered through a node-indexed scratch array (no sort,
no hash), and the input features are gathered by one index_select. The
mean aggregation is --agg: "spmm" (a sparse COO matrix of 1/deg weights
times the source rows, torch.sparse.mm; the fastest here, by about 15%
of the model's step over the next), "csr" (the same matrix in CSR, whose
columns must be sorted first), "scatter" (index_select + index_add_) or
"gather" (a dense destinations x fanout index, padded with weight 0).
One thread means one for OpenBLAS and OpenMP too: Debian's torch leaves
OpenBLAS's threads alone, and they spun on the second core.

Reads the graph from Weft's HDF5 layout with h5py. Prints one line of
key=value pairs: training nodes/s over the epochs (sampling included),
the seconds spent sampling, and the final test accuracy (sampled with the
same fanouts).

usage: torch_sage.py FILE.h5 [--fanout 10,5] [--batch 512] [--hidden 128]
                     [--epochs 2] [--lr 0.003] [--dropout 0.5] [--threads 1]
                     [--seed 1] [--agg spmm|csr|scatter|gather] [--eval-each-epoch]
"""
import argparse
import os
import sys
import time
import warnings


def parse_args():
    ap = argparse.ArgumentParser(description="PyTorch GraphSAGE peer of weft train gnn")
    ap.add_argument("data")
    ap.add_argument("--fanout", default="10,5")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=0.003)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--agg", choices=("spmm", "csr", "scatter", "gather"), default="spmm")
    ap.add_argument("--eval-each-epoch", action="store_true",
                    help="valid and test accuracy after every epoch, with the epoch's CPU seconds, one line each")
    a = ap.parse_args()
    try:
        a.fanouts = [int(f) for f in a.fanout.split(",")]
    except ValueError:
        ap.error(f"--fanout {a.fanout!r}: want comma-separated integers")
    if any(f == 0 or f < -1 for f in a.fanouts):
        ap.error(f"--fanout {a.fanout!r}: each fanout must be positive or -1 (all neighbours)")
    for k in ("batch", "hidden", "epochs", "threads"):
        if getattr(a, k) < 1:
            ap.error(f"--{k} {getattr(a, k)}: want a positive count")
    if not 0 <= a.dropout < 1:
        ap.error(f"--dropout {a.dropout}: want a rate in [0, 1)")
    return a


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS:
    # numpy's and torch's OpenBLAS read their thread count when loaded;
    # torch.set_num_threads does not reach Debian's OpenBLAS, whose
    # spinning threads otherwise take a second core.
    for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ.setdefault(v, str(ARGS.threads))

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as tnn  # noqa: E402


def load(path):
    try:
        with h5py.File(path, "r") as f:
            g = {k: f[k][()] for k in ("graph/indptr", "graph/indices", "node/feat", "node/label",
                                       "split/train", "split/valid", "split/test")}
    except (OSError, KeyError) as e:
        sys.exit(f"torch_sage.py: {path}: {e}")
    g["graph/indptr"] = g["graph/indptr"].astype(np.int64)
    return g


class Sampler:
    """Uniform neighbour sampling without replacement over a CSR graph,
    vectorised per hop."""

    def __init__(self, indptr, indices, rng):
        self.indptr, self.indices, self.rng = indptr, indices, rng
        # local id of each node in the block being built, -1 elsewhere
        self.loc = np.full(len(indptr) - 1, -1, dtype=np.int64)

    def positions(self, deg, fanout):
        """Positions in [0, deg) of the neighbours each row draws: a rows x
        fanout matrix whose first min(deg, fanout) columns are valid.
        Floyd's algorithm over all rows at once for the rows with more
        neighbours than fanout."""
        n = len(deg)
        pos = np.broadcast_to(np.arange(fanout, dtype=np.int64), (n, fanout)).copy()
        big = np.flatnonzero(deg > fanout)
        if len(big):
            d = deg[big]
            out = np.empty((len(big), fanout), dtype=np.int64)
            for i in range(fanout):
                j = d - fanout + i
                t = (self.rng.random(len(big)) * (j + 1)).astype(np.int64)
                t = np.where((out[:, :i] == t[:, None]).any(1), j, t)
                out[:, i] = t
            pos[big] = out
        return pos

    def hop(self, dst, fanout):
        """One hop from dst: (row, nbr), the destination position and the
        node id of every sampled edge, rows ascending."""
        lo = self.indptr[dst]
        deg = self.indptr[dst + 1] - lo
        if fanout < 0:
            row = np.repeat(np.arange(len(dst)), deg)
            start = np.repeat(lo - (np.cumsum(deg) - deg), deg)
            return row, self.indices[start + np.arange(len(row))]
        pos = self.positions(deg, fanout)
        valid = np.arange(fanout) < np.minimum(deg, fanout)[:, None]
        row = np.nonzero(valid)[0]
        return row, self.indices[(lo[:, None] + pos)[valid]]

    def block(self, dst, nbr):
        """The block's sources (dst first, then the new nodes in order of
        first appearance) and each edge's source position."""
        loc, n = self.loc, len(dst)
        loc[dst] = np.arange(n)
        new = nbr[loc[nbr] < 0]
        # one slot per new node: the position whose write survived
        k = np.arange(len(new))
        loc[new] = k
        uniq = new[loc[new] == k]
        loc[uniq] = n + np.arange(len(uniq))
        src_pos = loc[nbr]
        src = np.concatenate([dst, uniq])
        loc[src] = -1
        return src, src_pos

    def sample(self, seeds, fanouts):
        """Blocks, outermost (input) layer first, as (num_dst, row, src_pos,
        deg) numpy arrays, and the input nodes."""
        blocks, dst = [], seeds
        for fanout in fanouts:
            row, nbr = self.hop(dst, fanout)
            src, src_pos = self.block(dst, nbr)
            blocks.append((len(dst), len(src), row, src_pos))
            dst = src
        blocks.reverse()
        return blocks, dst


def to_torch(block, agg, fanout):
    """What the layer's aggregation needs, as tensors."""
    num_dst, num_src, row, src_pos = block
    deg = np.bincount(row, minlength=num_dst)
    inv = (1.0 / np.maximum(deg, 1)).astype(np.float32)
    if agg == "spmm":
        idx = torch.from_numpy(np.stack([row, src_pos]))
        a = torch.sparse_coo_tensor(idx, torch.from_numpy(inv[row]), (num_dst, num_src))
        return num_dst, a
    if agg == "csr":
        # CSR wants each row's columns ascending
        o = np.argsort(row * num_src + src_pos)
        row, src_pos = row[o], src_pos[o]
        crow = np.concatenate([[0], np.cumsum(deg)])
        a = torch.sparse_csr_tensor(torch.from_numpy(crow), torch.from_numpy(src_pos),
                                    torch.from_numpy(inv[row]), (num_dst, num_src))
        return num_dst, a
    if agg == "scatter":
        return num_dst, (torch.from_numpy(row), torch.from_numpy(src_pos), torch.from_numpy(inv[:, None]))
    # gather: row-major rows x fanout, edges in row order, padded with
    # source 0 at weight 0
    f = max(fanout, int(deg.max(initial=0)))
    col = np.arange(len(row)) - np.repeat(np.cumsum(deg) - deg, deg)
    idx = np.zeros((num_dst, f), dtype=np.int64)
    w = np.zeros((num_dst, f), dtype=np.float32)
    idx[row, col] = src_pos
    w[row, col] = inv[row]
    return num_dst, (torch.from_numpy(idx), torch.from_numpy(w))


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
        num_dst, a = block
        if self.agg in ("spmm", "csr"):
            m = torch.sparse.mm(a, x)
        elif self.agg == "scatter":
            row, src, inv = a
            m = torch.zeros(num_dst, x.shape[1]).index_add_(0, row, x.index_select(0, src)) * inv
        else:
            idx, w = a
            m = torch.bmm(w.unsqueeze(1), x[idx]).squeeze(1)
        # y = x_d W_self^T + b, then y += m W_neigh^T in the same GEMM call
        return torch.addmm(self.self_(x[:num_dst]), m, self.neigh.weight.t())


class Dropout(tnn.Module):
    """nn.Dropout with the mask drawn by numpy's PCG64 (uniform floats
    compared with p): torch 1.13's CPU bernoulli_ took 7-10 ms of a batch's
    30 for one 5,600 x 128 mask, this 2.3 ms."""

    def __init__(self, p, rng):
        super().__init__()
        self.p, self.rng = p, rng

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        m = self.rng.random(x.shape, dtype=np.float32)
        np.greater_equal(m, self.p, out=m)
        m *= 1 / (1 - self.p)
        return x * torch.from_numpy(m)


class Model(tnn.Module):
    def __init__(self, fin, hidden, classes, layers, dropout, agg, rng):
        super().__init__()
        dims = [fin] + [hidden] * (layers - 1) + [classes]
        self.convs = tnn.ModuleList(SAGE(a, b, agg) for a, b in zip(dims, dims[1:]))
        self.drop = Dropout(dropout, rng)

    def forward(self, x, blocks):
        for i, (conv, b) in enumerate(zip(self.convs, blocks)):
            x = conv(x, b)
            if i < len(self.convs) - 1:
                x = self.drop(torch.relu(x))
        return x


def main(a):
    fanouts = a.fanouts
    torch.set_num_threads(a.threads)
    warnings.filterwarnings("ignore", "Sparse CSR tensor support is in beta")
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    g = load(a.data)
    smp = Sampler(g["graph/indptr"], g["graph/indices"], rng)
    feat = torch.from_numpy(np.ascontiguousarray(g["node/feat"], dtype=np.float32))
    label = torch.from_numpy(g["node/label"].astype(np.int64))
    m = Model(feat.shape[1], a.hidden, int(label.max()) + 1, len(fanouts), a.dropout, a.agg, rng)
    opt = torch.optim.Adam(m.parameters(), lr=a.lr)
    lossf = tnn.CrossEntropyLoss()
    fo = fanouts[::-1]  # blocks come outermost first

    def batch(seeds):
        blocks, inputs = smp.sample(seeds, fanouts)
        blocks = [to_torch(b, a.agg, f) for b, f in zip(blocks, fo)]
        return blocks, feat.index_select(0, torch.from_numpy(inputs))

    def accuracy(split):
        m.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, len(split), a.batch):
                seeds = split[i:i + a.batch]
                blocks, x = batch(seeds)
                correct += int((m(x, blocks).argmax(1) == label[seeds]).sum())
        return correct / max(1, len(split))

    train = g["split/train"]
    seen, t0, tsample, teval = 0, time.perf_counter(), 0.0, 0.0
    for ep in range(a.epochs):
        c0 = time.process_time()
        m.train()
        perm = rng.permutation(train)
        for i in range(0, len(perm), a.batch):
            seeds = perm[i:i + a.batch]
            ts = time.perf_counter()
            blocks, x = batch(seeds)
            y = torch.from_numpy(g["node/label"][seeds].astype(np.int64))
            tsample += time.perf_counter() - ts
            loss = lossf(m(x, blocks), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            seen += len(seeds)
        if a.eval_each_epoch:
            # as weft train gnn does: valid and test accuracy after every
            # epoch, outside the training time, and the CPU seconds the
            # process spent on the epoch (training and accuracy)
            c1, te = time.process_time(), time.perf_counter()
            va, ta = accuracy(g["split/valid"]), accuracy(g["split/test"])
            teval += time.perf_counter() - te
            c2 = time.process_time()
            print(f"epoch={ep} train_cpu_s={c1 - c0:.3f} eval_cpu_s={c2 - c1:.3f} cpu_s={c2 - c0:.3f} "
                  f"valid_acc={va:.4f} test_acc={ta:.4f}", flush=True)
    elapsed = time.perf_counter() - t0 - teval
    test = accuracy(g["split/test"])
    print(f"nodes_per_s={seen / elapsed:.0f} seconds={elapsed:.2f} sampling_s={tsample:.2f} "
          f"train_only_nodes_per_s={seen / (elapsed - tsample):.0f} test_acc={test:.4f} loss={float(loss):.4f}")


if __name__ == "__main__":
    main(ARGS)
