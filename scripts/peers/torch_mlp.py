#!/usr/bin/python3
"""The PyTorch peer of Weft's nn for scripts/bench-nn.sh.

The same models as nn.MLP(784, 256, 256, 10) and nn.CNN, the same batch,
optimizer (SGD with momentum, no dampening) and thread count, with the
settings PyTorch's CPU performance guide gives: the CNN's weights and
inputs in channels_last memory format (oneDNN's convolutions then skip
their layout reorders: 1.4-1.7x faster steps here than the default NCHW),
OpenBLAS and OpenMP held to the thread count. Two measurements:

  step   training steps (forward, loss, backward, update) on one fixed
         batch, after a warm-up: samples/s of the step alone, the figure
         nn's BenchmarkMLPStep / BenchmarkCNNStep give;
  train  EPOCHS epochs of Fashion-MNIST (shuffled, drop-last), then the
         test accuracy and the samples/s of the whole loop.

usage: torch_mlp.py {step|train} [--model mlp|cnn] [--threads N]
                    [--batch B] [--steps S] [--epochs E] [--lr LR]
                    [--format channels_last|nchw]
Prints one line: key=value pairs.
"""
import argparse
import gzip
import os
import sys
import time


def _threads(argv):
    """--threads N from the command line, before numpy and torch load."""
    for i, v in enumerate(argv):
        if v == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if v.startswith("--threads="):
            return v.split("=", 1)[1]
    return "1"


# numpy's and torch's OpenBLAS read their thread count when loaded.
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_v, _threads(sys.argv))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as tnn  # noqa: E402

DATA = "/usr/share/datasets/fashion-mnist"


def idx(path, offset):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def load():
    x = idx(os.path.join(DATA, "train-images-idx3-ubyte.gz"), 16).reshape(-1, 784).astype(np.float32) / 255
    y = idx(os.path.join(DATA, "train-labels-idx1-ubyte.gz"), 8).astype(np.int64)
    tx = idx(os.path.join(DATA, "t10k-images-idx3-ubyte.gz"), 16).reshape(-1, 784).astype(np.float32) / 255
    ty = idx(os.path.join(DATA, "t10k-labels-idx1-ubyte.gz"), 8).astype(np.int64)
    return torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(tx), torch.from_numpy(ty)


def model(name):
    if name == "mlp":
        return tnn.Sequential(tnn.Linear(784, 256), tnn.ReLU(), tnn.Linear(256, 256), tnn.ReLU(), tnn.Linear(256, 10)), (784,)
    return tnn.Sequential(
        tnn.Conv2d(1, 16, 5), tnn.ReLU(), tnn.MaxPool2d(2, 2),
        tnn.Conv2d(16, 32, 5), tnn.ReLU(), tnn.MaxPool2d(2, 2),
        tnn.Flatten(), tnn.Linear(512, 128), tnn.ReLU(), tnn.Dropout(0.25), tnn.Linear(128, 10)), (1, 28, 28)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["step", "train"])
    ap.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--format", choices=["channels_last", "nchw"], default="channels_last",
                    help="the CNN's memory format (nchw: PyTorch's default)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    m, shape = model(a.model)
    fmt = torch.channels_last if a.model == "cnn" and a.format == "channels_last" else torch.contiguous_format
    m = m.to(memory_format=fmt)
    opt = torch.optim.SGD(m.parameters(), lr=a.lr, momentum=0.9)
    lossf = tnn.CrossEntropyLoss()

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = lossf(m(x), y)
        loss.backward()
        opt.step()
        return loss

    if a.what == "step":
        x = torch.rand((a.batch,) + shape).contiguous(memory_format=fmt)
        y = torch.randint(0, 10, (a.batch,))
        for _ in range(20):
            step(x, y)
        t, c = time.perf_counter(), time.process_time()
        for _ in range(a.steps):
            step(x, y)
        dt, cpu = time.perf_counter() - t, time.process_time() - c
        print(f"peer=torch-{torch.__version__} model={a.model} format={a.format} threads={a.threads} batch={a.batch} "
              f"cpu_ms={1e3 * cpu / a.steps:.3f} step_ms={1e3 * dt / a.steps:.3f} samples_per_s={a.batch * a.steps / dt:.0f}")
        return
    x, y, tx, ty = load()
    g = torch.Generator().manual_seed(a.seed)
    n = x.shape[0] // a.batch * a.batch
    t = time.perf_counter()
    for _ in range(a.epochs):
        m.train()
        perm = torch.randperm(x.shape[0], generator=g)[:n]
        for i in range(0, n, a.batch):
            b = perm[i:i + a.batch]
            step(x[b].view((-1,) + shape).contiguous(memory_format=fmt), y[b])
    dt = time.perf_counter() - t
    m.eval()
    with torch.no_grad():
        acc = (m(tx.view((-1,) + shape).contiguous(memory_format=fmt)).argmax(1) == ty).float().mean().item()
    print(f"peer=torch-{torch.__version__} model={a.model} threads={a.threads} batch={a.batch} epochs={a.epochs} "
          f"train_s={dt:.2f} samples_per_s={a.epochs * n / dt:.0f} test_acc={acc:.4f}")


if __name__ == "__main__":
    main()
