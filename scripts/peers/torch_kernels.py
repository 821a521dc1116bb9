#!/usr/bin/python3
"""The PyTorch peer of `weft bench kernels`.

The operations Weft's CUDA kernels do, as a PyTorch user writes them, on
the same sizes: vectors of N elements (64 Mi: 256 MiB of float32) of random
normal data, made on the device with a seeded generator:

  copy            y.copy_(x)                       float32, read + write
  f32_to_f16      h.copy_(x)      f16_to_f32   x.copy_(h)
  f32_to_bf16     b.copy_(x)      bf16_to_f32  x.copy_(b)
  sum_f32         torch.add(a, b, out=c), and in float16 and bfloat16
  dcsgd_momentum  delay-compensated SGD with momentum, in place on w and v:
                  d = w - w_stale; g' = g + lambda*(g*g*d); v = mu*v + g';
                  w = w - lr*v, one function through torch.compile (one
                  fused kernel); eager when compile is missing or fails,
                  and the output says which
  gather_mean     F.embedding_bag(indices, feat, offsets, mode="mean"):
                  N/256 rows of 128 features, 8 random neighbours each

Each operation runs --warmup times, then --reps times each between its own
pair of CUDA events (time.perf_counter on the CPU); the median gives
GB/s = bytes / time / 1e9, with the bytes `weft bench kernels` counts for
the same operation. The JSON (--out FILE, else stdout) is keyed by the same
kernel names, for `weft bench kernels --peer FILE`.

usage: torch_kernels.py [--device cuda|cpu] [-n N] [--reps R] [--warmup W]
                        [--seed S] [--no-compile] [--out FILE] [--dry-run]

--dry-run runs on the CPU with N = 4096 (unless -n), 3 reps and 1 warm-up:
a check of the script and its JSON where there is no GPU (make test runs
it); its times mean nothing.
"""
import argparse
import json
import os
import statistics
import sys
import time

KERNELS = ["copy", "f32_to_f16", "f16_to_f32", "f32_to_bf16", "bf16_to_f32",
           "sum_f32", "sum_f16", "sum_bf16", "dcsgd_momentum", "gather_mean"]
GATHER_DIM, GATHER_DEGREE = 128, 8
LR, MU, LAMBDA = 0.01, 0.9, 0.04


def dcsgd(w, v, g, w_stale):
    """SAPipe's compensated step, in place on w and v."""
    d = w - w_stale
    gp = g + LAMBDA * (g * g * d)
    v.mul_(MU).add_(gp)
    w.sub_(LR * v)


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default=None, help="cuda (the default) or cpu")
    ap.add_argument("-n", type=int, default=None, help="elements per vector (default 64 Mi, 4096 with --dry-run)")
    ap.add_argument("--reps", type=int, default=None, help="timed runs per operation (default 20, 3 with --dry-run)")
    ap.add_argument("--warmup", type=int, default=None, help="untimed runs first (default 3, 1 with --dry-run)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-compile", action="store_true", help="run the DC-SGD update eagerly")
    ap.add_argument("--out", default=None, help="write the JSON here (default: stdout)")
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny sizes: check the script, not the machine")
    a = ap.parse_args(argv)
    dry = a.dry_run
    a.device = a.device or ("cpu" if dry else "cuda")
    a.n = a.n if a.n is not None else (4096 if dry else 64 << 20)
    a.reps = a.reps if a.reps is not None else (3 if dry else 20)
    a.warmup = a.warmup if a.warmup is not None else (1 if dry else 3)
    if a.n < 256:
        ap.error("-n %d: want at least 256 (the gather needs a row of 128 features per 256 elements)" % a.n)
    if a.reps < 1 or a.warmup < 1:
        ap.error("--reps and --warmup: want at least 1")
    if a.device not in ("cuda", "cpu"):
        ap.error("--device %r: want cuda or cpu" % a.device)
    return a


def main(argv):
    a = parse(argv)
    import torch
    import torch.nn.functional as F

    if a.device == "cuda" and not torch.cuda.is_available():
        print("torch_kernels.py: --device cuda: torch %s sees no GPU (use --device cpu or --dry-run)" % torch.__version__,
              file=sys.stderr)
        return 2
    dev = torch.device(a.device)
    n = a.n
    gen = torch.Generator(device=dev)
    gen.manual_seed(a.seed)

    def randn():
        x = torch.randn(n, generator=gen, device=dev)
        return x.masked_fill_(x == 0, 1.0)  # never zero

    xa, xb, xc = randn(), randn(), randn()
    ha, hb = xa.half(), xb.half()
    ba, bb = xa.bfloat16(), xb.bfloat16()
    y32 = torch.empty(n, device=dev)
    y16 = torch.empty(n, dtype=torch.float16, device=dev)
    yb = torch.empty(n, dtype=torch.bfloat16, device=dev)
    w, v = xa.clone(), xb.clone()
    rows = n // 256
    feat = xa[:rows * GATHER_DIM].view(rows, GATHER_DIM)
    indices = torch.randint(rows, (rows * GATHER_DEGREE,), generator=gen, device=dev)
    offsets = torch.arange(0, rows * GATHER_DEGREE, GATHER_DEGREE, device=dev)
    nnz = rows * GATHER_DEGREE

    step, mode = dcsgd, "eager (--no-compile)"
    if not a.no_compile:
        if not hasattr(torch, "compile"):
            mode = "eager (torch %s has no torch.compile)" % torch.__version__
        else:
            compiled = torch.compile(dcsgd, fullgraph=True)
            try:
                compiled(w, v, xc, xb)  # compiles here
                step, mode = compiled, "torch.compile"
            except Exception as e:  # noqa: BLE001 -- any failure means eager, said so
                msg = str(e).strip().splitlines()
                mode = "eager (torch.compile failed: %s: %s)" % (type(e).__name__, msg[0] if msg else "")
            w.copy_(xa)
            v.copy_(xb)

    ops = {
        "copy": ("y.copy_(x)", 8 * n, lambda: y32.copy_(xa)),
        "f32_to_f16": ("h.copy_(x)", 6 * n, lambda: y16.copy_(xa)),
        "f16_to_f32": ("x.copy_(h)", 6 * n, lambda: y32.copy_(ha)),
        "f32_to_bf16": ("b.copy_(x)", 6 * n, lambda: yb.copy_(xa)),
        "bf16_to_f32": ("x.copy_(b)", 6 * n, lambda: y32.copy_(ba)),
        "sum_f32": ("torch.add(a, b, out=c)", 12 * n, lambda: torch.add(xa, xb, out=y32)),
        "sum_f16": ("torch.add(a, b, out=c), float16", 6 * n, lambda: torch.add(ha, hb, out=y16)),
        "sum_bf16": ("torch.add(a, b, out=c), bfloat16", 6 * n, lambda: torch.add(ba, bb, out=yb)),
        "dcsgd_momentum": ("dcsgd(w, v, g, w_stale), " + mode, 24 * n, lambda: step(w, v, xc, xb)),
        "gather_mean": ('F.embedding_bag(indices, feat, offsets, mode="mean")',
                        4 * rows * GATHER_DIM + 8 * (rows + 1) + 8 * nnz + 4 * nnz * GATHER_DIM,
                        lambda: F.embedding_bag(indices, feat, offsets, mode="mean")),
    }
    assert list(ops) == KERNELS

    cuda = dev.type == "cuda"
    out = {}
    for name, (op, nbytes, run) in ops.items():
        for _ in range(a.warmup):
            run()
        times = []  # seconds
        if cuda:
            torch.cuda.synchronize()
            ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(a.reps)]
            for start, end in ev:
                start.record()
                run()
                end.record()
            torch.cuda.synchronize()
            times = [start.elapsed_time(end) / 1e3 for start, end in ev]
        else:
            for _ in range(a.reps):
                t0 = time.perf_counter()
                run()
                times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        gbs = nbytes / med / 1e9 if med > 0 else 0.0
        out[name] = {"op": op, "bytes": nbytes, "median_us": med * 1e6, "gbs": gbs}
        print("%-16s %12d B %11.2f us %10.1f GB/s  %s" % (name, nbytes, med * 1e6, gbs, op), file=sys.stderr)

    doc = {
        "tool": "scripts/peers/torch_kernels.py",
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(dev) if cuda else "cpu",
        "n": n,
        "reps": a.reps,
        "warmup": a.warmup,
        "seed": a.seed,
        "timing": "CUDA events, median" if cuda else "time.perf_counter, median",
        "dcsgd_momentum_mode": mode,
        "kernels": out,
    }
    text = json.dumps(doc, indent=1) + "\n"
    if a.out:
        tmp = "%s.tmp-%d" % (a.out, os.getpid())
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, a.out)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
