#!/usr/bin/python3
"""The PyTorch peer of `weft train gnn` for scripts/bench-gnn.sh.

A plain PyTorch CPU GraphSAGE (mean aggregator) trained by mini-batches
with neighbour sampling done in numpy, as a user without DGL would write it:
the same model (SAGE layers y = W_self h_d + W_neigh mean(h_N(d)) + b,
ReLU and dropout between), fanouts (first hop first, as `weft train gnn`
and PyG take them), batch, optimizer (Adam) and thread count as Weft's run. Sampling is
uniform without replacement (every neighbour when the degree is at most the
fanout), vectorised per layer.

Reads the graph from Weft's HDF5 layout with h5py. Prints one line of
key=value pairs: training nodes/s over the epochs (sampling included) and
the final test accuracy (sampled with the same fanouts).

usage: torch_sage.py FILE.h5 [--fanout 10,5] [--batch 512] [--hidden 128]
                     [--epochs 2] [--lr 0.003] [--dropout 0.5] [--threads 1]
"""
import argparse
import time

import h5py
import numpy as np
import torch
import torch.nn as tnn


def load(path):
    with h5py.File(path, "r") as f:
        g = {k: f[k][()] for k in ("graph/indptr", "graph/indices", "node/feat", "node/label")}
        g["train"], g["test"] = f["split/train"][()], f["split/test"][()]
    return g


def sample_layer(indptr, indices, dst, fanout, rng):
    """Neighbours of each dst (up to fanout, without replacement): the
    flattened (dst position, neighbour id) pairs."""
    lo, hi = indptr[dst], indptr[dst + 1]
    deg = hi - lo
    take = deg if fanout < 0 else np.minimum(deg, fanout)
    # Every neighbour entry with a random key; keep the take smallest keys
    # of each row.
    row = np.repeat(np.arange(len(dst)), deg)
    pos = np.arange(deg.sum()) - np.repeat(np.cumsum(deg) - deg, deg)
    key = rng.random(len(row))
    order = np.lexsort((key, row))
    rank = np.empty_like(order)
    rank[order] = pos
    keep = rank < np.repeat(take, deg)
    ent = np.repeat(lo, deg) + pos
    return row[keep], indices[ent[keep]]


def sample_blocks(g, seeds, fanouts, rng):
    """DGL-style blocks, input layer first: (num_src, num_dst, dst_pos,
    src_pos) per layer, and the input nodes."""
    blocks, dst = [], seeds
    for fanout in fanouts:
        rows, nbrs = sample_layer(g["graph/indptr"], g["graph/indices"], dst, fanout, rng)
        allnodes = np.concatenate([dst, nbrs])
        uniq, first, inv = np.unique(allnodes, return_index=True, return_inverse=True)
        # Local ids in order of first appearance, so dst come first.
        order = np.argsort(first, kind="stable")
        local = np.empty_like(order)
        local[order] = np.arange(len(order))
        src_nodes = uniq[order]
        src_pos = local[inv[len(dst):]]
        blocks.append((len(src_nodes), len(dst), torch.from_numpy(rows), torch.from_numpy(src_pos)))
        dst = src_nodes
    blocks.reverse()
    return blocks, dst


class SAGE(tnn.Module):
    def __init__(self, fin, fout):
        super().__init__()
        self.self_ = tnn.Linear(fin, fout)
        self.neigh = tnn.Linear(fin, fout, bias=False)

    def forward(self, x, block):
        _, num_dst, dst_pos, src_pos = block
        agg = torch.zeros(num_dst, x.shape[1]).index_add_(0, dst_pos, x[src_pos])
        deg = torch.zeros(num_dst).index_add_(0, dst_pos, torch.ones(len(dst_pos))).clamp(min=1)
        return self.self_(x[:num_dst]) + self.neigh(agg / deg[:, None])


class Model(tnn.Module):
    def __init__(self, fin, hidden, classes, layers, dropout):
        super().__init__()
        dims = [fin] + [hidden] * (layers - 1) + [classes]
        self.convs = tnn.ModuleList(SAGE(a, b) for a, b in zip(dims, dims[1:]))
        self.drop = tnn.Dropout(dropout)

    def forward(self, x, blocks):
        for i, (conv, b) in enumerate(zip(self.convs, blocks)):
            x = conv(x, b)
            if i < len(self.convs) - 1:
                x = self.drop(torch.relu(x))
        return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--fanout", default="10,5")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=0.003)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    g = load(a.data)
    fanouts = [int(f) for f in a.fanout.split(",")]
    feat, label = torch.from_numpy(g["node/feat"]), torch.from_numpy(g["node/label"].astype(np.int64))
    m = Model(feat.shape[1], a.hidden, int(label.max()) + 1, len(fanouts), a.dropout)
    opt = torch.optim.Adam(m.parameters(), lr=a.lr)
    lossf = tnn.CrossEntropyLoss()
    train = g["train"]
    seen, t0, tsample = 0, time.perf_counter(), 0.0
    for _ in range(a.epochs):
        m.train()
        perm = rng.permutation(train)
        for i in range(0, len(perm), a.batch):
            seeds = perm[i:i + a.batch]
            ts = time.perf_counter()
            blocks, inputs = sample_blocks(g, seeds, fanouts, rng)
            tsample += time.perf_counter() - ts
            out = m(feat[inputs], blocks)
            loss = lossf(out, label[seeds])
            opt.zero_grad()
            loss.backward()
            opt.step()
            seen += len(seeds)
    elapsed = time.perf_counter() - t0
    m.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(g["test"]), a.batch):
            seeds = g["test"][i:i + a.batch]
            blocks, inputs = sample_blocks(g, seeds, fanouts, rng)
            correct += int((m(feat[inputs], blocks).argmax(1) == label[seeds]).sum())
    print(f"nodes_per_s={seen / elapsed:.0f} seconds={elapsed:.2f} sampling_s={tsample:.2f} "
          f"train_only_nodes_per_s={seen / (elapsed - tsample):.0f} test_acc={correct / len(g['test']):.4f} loss={float(loss):.4f}")


if __name__ == "__main__":
    main()
