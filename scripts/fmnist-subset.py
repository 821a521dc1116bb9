#!/usr/bin/python3
"""Writes the first N training images and M test images of Fashion-MNIST
(the four gzipped IDX files, as published) into OUT, as the same four
files, for a machine that has no copy of the data set: `make gpu-check`
packs the subset with the binaries it carries to a GPU machine.

usage: fmnist-subset.py SRC_DIR OUT_DIR N_TRAIN N_TEST
"""
import gzip
import os
import struct
import sys


def subset(src, dst, n):
    with gzip.open(src, "rb") as f:
        head = f.read(8)
        magic, count = struct.unpack(">II", head)
        dims = magic & 0xFF
        shape = struct.unpack(f">{dims - 1}I", f.read(4 * (dims - 1))) if dims > 1 else ()
        if n > count:
            sys.exit(f"fmnist-subset.py: {src} holds {count} items, fewer than {n}")
        size = 1
        for d in shape:
            size *= d
        body = f.read(n * size)
    tmp = dst + ".tmp"
    with gzip.open(tmp, "wb", compresslevel=6) as out:
        out.write(struct.pack(">II", magic, n))
        out.write(struct.pack(f">{len(shape)}I", *shape))
        out.write(body)
    os.replace(tmp, dst)


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__.strip().splitlines()[-1])
    src, out = sys.argv[1], sys.argv[2]
    try:
        ntrain, ntest = int(sys.argv[3]), int(sys.argv[4])
    except ValueError:
        sys.exit(f"fmnist-subset.py: N_TRAIN {sys.argv[3]!r} and N_TEST {sys.argv[4]!r}: want counts")
    os.makedirs(out, exist_ok=True)
    for stem, n in (("train", ntrain), ("t10k", ntest)):
        for kind in ("images-idx3", "labels-idx1"):
            name = f"{stem}-{kind}-ubyte.gz"
            try:
                subset(os.path.join(src, name), os.path.join(out, name), n)
            except OSError as e:
                sys.exit(f"fmnist-subset.py: {e}")


if __name__ == "__main__":
    main()
