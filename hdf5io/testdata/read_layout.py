"""Read a Weft graph file with h5py and print it as JSON.

Usage: /usr/bin/python3 read_layout.py FILE.h5
interop_test.go compares the output with the graph it wrote.
"""
import json
import sys

import h5py

out = {}
with h5py.File(sys.argv[1], "r") as f:
    out["attrs"] = {k: int(v) for k, v in f.attrs.items()}
    out["dtypes"] = {}

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            out["dtypes"][name] = [obj.dtype.str, list(obj.shape)]
            out[name] = obj[()].ravel().tolist()

    f.visititems(visit)
    p = f["partition/bgl"]
    out["partition/bgl attrs"] = {k: float(v) for k, v in p.attrs.items()}
json.dump(out, sys.stdout)
