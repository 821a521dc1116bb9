#!/usr/bin/python3
"""The numpy + h5py peer of `weft convert` for scripts/bench-convert.sh.

Reads a whitespace edge list (comments # and %), drops self loops, sorts
and deduplicates the edges, builds the CSR and writes the layout of
docs/FORMAT.md with the same chunking and compression as Weft's default
(1 MiB chunks, shuffle + deflate level 1), to a temporary file renamed at
the end. A straightforward script, as a competent numpy user writes it:
the text is parsed by numpy's C number reader (np.fromstring with a
whitespace separator, 3-4x faster than np.loadtxt on 10M edges here), with
np.loadtxt kept for files whose lines are ragged.

usage: convert_numpy.py EDGES.txt OUT.h5
"""
import os
import sys
import warnings

import h5py
import numpy as np


def chunk_rows(itemsize, width=1):
    return max(1, (1 << 20) // (itemsize * width))


def read_edges(path):
    """The first two columns of a whitespace edge list as an (m, 2) int64
    array; comment lines (# or %) dropped, further columns ignored."""
    # comment lines at the top (a header) are skipped; comments further
    # down send the file to the general reader
    with open(path, "rb") as f:
        while f.peek(1)[:1] in (b"#", b"%"):
            f.readline()
        data = f.read()
    if b"#" in data or b"%" in data:
        return loadtxt(path)
    first = data[:data.find(b"\n")] if b"\n" in data else data
    cols = len(first.split())
    rows = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        a = np.fromstring(data, dtype=np.int64, sep=" ")
    if cols >= 2 and a.size == rows * cols:
        return a.reshape(rows, cols)[:, :2]
    # blank or ragged lines, or something that is not an integer: the
    # general reader, which says where
    return loadtxt(path)


def loadtxt(path):
    return np.loadtxt(path, dtype=np.int64, comments=("#", "%"), usecols=(0, 1), ndmin=2)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: convert_numpy.py EDGES.txt OUT.h5")
    src_path, out = sys.argv[1], sys.argv[2]
    edges = read_edges(src_path)
    src, dst = edges[:, 0], edges[:, 1]
    del edges
    n = int(max(src.max(), dst.max())) + 1 if len(src) else 0
    keep = src != dst
    key = np.unique(src[keep] * n + dst[keep])
    del src, dst, keep
    src = key // n
    indices = (key % n).astype(np.int32 if n <= 2**31 - 1 else np.int64)
    del key
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    del src
    tmp = out + ".tmp"
    with h5py.File(tmp, "w") as f:
        f.attrs["format_version"] = np.int64(1)
        f.attrs["num_nodes"] = np.int64(n)
        f.attrs["num_edges"] = np.int64(len(indices))
        f.attrs["directed"] = np.int64(1)
        for name, a in (("graph/indptr", indptr), ("graph/indices", indices)):
            f.create_dataset(name, data=a, chunks=(min(len(a), chunk_rows(a.itemsize)),),
                             shuffle=True, compression="gzip", compression_opts=1)
    os.rename(tmp, out)


if __name__ == "__main__":
    main()
