"""Write a Weft graph file with h5py, the way a Python user would.

Usage: /usr/bin/python3 write_layout.py OUT.h5

The values follow formulas that interop_test.go recomputes in Go:
  N = 40, F = 3; node v links to (v*7 + k) % N for k in 0 .. v%3 - 1
  (int64 indices: h5py's default for Python ints);
  feat[v][j] = v + j/4; label[v] = v % 5 (stored as int32: readers accept
  it); splits train = 0,2,..,38 and test = 1,5,9,.. (no valid split);
  partition "halves": assign[v] = v // 20, num_parts 2, edge_cut 17.5.
Compression differs per dataset (gzip with shuffle, plain chunks,
contiguous) to cover what h5py users write.
"""
import sys

import h5py
import numpy as np

N, F = 40, 3
indptr = [0]
indices = []
for v in range(N):
    for k in range(v % 3):
        indices.append((v * 7 + k) % N)
    indptr.append(len(indices))

with h5py.File(sys.argv[1], "w") as f:
    f.attrs["format_version"] = np.int64(1)
    f.attrs["num_nodes"] = np.int64(N)
    f.attrs["num_edges"] = np.int64(len(indices))
    f.attrs["directed"] = np.int64(1)
    f.attrs["source"] = "write_layout.py"  # extra attributes are allowed
    g = f.create_group("graph")
    g.create_dataset("indptr", data=np.array(indptr, dtype=np.int64), chunks=(16,), compression="gzip", shuffle=True)
    g.create_dataset("indices", data=np.array(indices, dtype=np.int64))
    feat = np.array([[v + j / 4 for j in range(F)] for v in range(N)], dtype=np.float32)
    f.create_dataset("node/feat", data=feat, chunks=(8, F), compression="gzip", compression_opts=1)
    f.create_dataset("node/label", data=np.arange(N, dtype=np.int32) % 5)
    f.create_dataset("split/train", data=np.arange(0, N, 2, dtype=np.int64))
    f.create_dataset("split/test", data=np.arange(1, N, 4, dtype=np.int64))
    p = f.create_group("partition/halves")
    p.create_dataset("assign", data=(np.arange(N) // 20).astype(np.int32))
    p.attrs["num_parts"] = np.int64(2)
    p.attrs["edge_cut"] = np.float64(17.5)
    f.create_dataset("extra/unknown", data=np.zeros(3))  # unknown objects are ignored
