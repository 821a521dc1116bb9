//go:build cgo

package hdf5io

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// h5pyFiles is run by /usr/bin/python3 with a folder: it writes a small
// valid graph file the way a Python user would, varied per case, and
// prints a JSON list of the cases: the file, what was varied, and for an
// attribute the numpy kind h5py actually stored.
const h5pyFiles = `
import json, sys, h5py, numpy as np
d = sys.argv[1]
N = 6
cases = []

def base(path, attrs=None, extra=None, ints=np.int64):
    with h5py.File(path, "w") as f:
        f.attrs["format_version"] = 1              # plain Python ints
        f.attrs["num_nodes"] = N
        f.attrs["num_edges"] = 6
        f.attrs["directed"] = 1
        for k, v in (attrs or {}).items():
            f.attrs[k] = v
        f["graph/indptr"] = np.arange(N + 1).astype(ints)
        f["graph/indices"] = ((np.arange(N) + 1) % N).astype(ints)
        f["node/feat"] = np.ones((N, 2), dtype=np.float32)
        f["node/label"] = (np.arange(N) % 2).astype(ints)
        f["node/orig_id"] = (np.arange(N) * 3).astype(ints)
        f["node/graph_id"] = np.zeros(N).astype(ints)
        f["split/train"] = np.array([0, 1, 2]).astype(ints)
        g = f.create_group("partition/halves")
        g["assign"] = (np.arange(N) // 3).astype(ints)
        g.attrs["num_parts"] = ints(2) if ints is not bool else 2
        g.attrs["edge_cut"] = 2.0
        if extra:
            extra(f)

# Every numpy scalar type as the num_nodes attribute.
for t in sorted(set(np.sctypeDict.values()), key=lambda t: t.__name__):
    name = t.__name__
    for arg in (6, "6"):
        try:
            v = t(arg)
            break
        except Exception:
            v = None
    if v is None:
        continue
    p = "%s/attr_%s.h5" % (d, name)
    try:
        base(p, attrs={"num_nodes": v})
    except Exception as e:   # h5py cannot store it (datetime64, str_)
        cases.append({"file": p, "case": "attr " + name, "skip": str(e)})
        continue
    with h5py.File(p, "r") as f:
        kind = np.asarray(f.attrs["num_nodes"]).dtype.kind
    cases.append({"file": p, "case": "attr " + name, "kind": kind})

for name, v in [("python bool", True), ("numpy bool", np.bool_(False))]:
    p = "%s/directed_%s.h5" % (d, name.replace(" ", "_"))
    base(p, attrs={"directed": v})
    cases.append({"file": p, "case": "directed " + name, "kind": "directed"})
for name, v in [("python float", 6.0), ("python str", "6"), ("list", [6]), ("numpy array", np.array([6]))]:
    p = "%s/nodes_%s.h5" % (d, name.replace(" ", "_"))
    base(p, attrs={"num_nodes": v})
    with h5py.File(p, "r") as f:
        kind = np.asarray(f.attrs["num_nodes"]).dtype.kind
    cases.append({"file": p, "case": "num_nodes " + name, "kind": kind})

# Every integer width numpy has, for every integer dataset.
for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64):
    p = "%s/ints_%s.h5" % (d, t.__name__)
    base(p, ints=t)
    cases.append({"file": p, "case": "datasets " + t.__name__, "kind": "ints"})

def masks(f):
    for k in ("train", "valid", "test"):
        if k in f["split"]:
            del f["split/" + k]
    f["split/train"] = np.array([True, True, False, False, False, False])
    f["split/valid"] = np.array([False, False, True, False, False, False])
    f["split/test"] = np.arange(N) >= 4
    f["split/train_mask"] = np.ones(N, dtype=bool)   # an extra mask
p = d + "/masks.h5"; base(p, extra=masks); cases.append({"file": p, "case": "boolean masks", "kind": "masks"})

def unknown(f):
    f.create_group("partition/empty")
    f.create_group("split/sub/deeper")
    f["split/sub/x"] = np.zeros(3)
p = d + "/unknown.h5"; base(p, extra=unknown); cases.append({"file": p, "case": "unknown objects", "kind": "unknown"})

def short_mask(f):
    f["split/valid"] = np.array([True, False])
p = d + "/short_mask.h5"; base(p, extra=short_mask); cases.append({"file": p, "case": "mask of 2 for 6 nodes", "kind": "short_mask"})

for name, dt in (("float64", np.float64), ("float16", np.float16), ("int64", np.int64)):
    def feat(f, dt=dt):
        del f["node/feat"]
        f["node/feat"] = np.ones((N, 2), dtype=dt)
    p = "%s/feat_%s.h5" % (d, name); base(p, extra=feat); cases.append({"file": p, "case": "features " + name, "kind": "feat"})

def lzf(f):
    del f["node/feat"]
    f.create_dataset("node/feat", data=np.ones((N, 2), dtype=np.float32), compression="lzf")
p = d + "/lzf.h5"; base(p, extra=lzf); cases.append({"file": p, "case": "lzf features", "kind": "lzf"})
print(json.dumps(cases))
`

// TestH5pyUserFiles: files written by h5py as Python users write them,
// with attributes of every numpy scalar type, integer datasets of every
// width, boolean masks for splits and objects the layout does not know,
// are read, or refused with a message that names the attribute or
// dataset and says what to write instead.
func TestH5pyUserFiles(t *testing.T) {
	needH5py(t)
	dir := t.TempDir()
	out, err := exec.Command(python, "-c", h5pyFiles, dir).Output()
	if err != nil {
		t.Fatalf("h5py: %v", err)
	}
	var cases []struct{ File, Case, Kind, Skip string }
	if err := json.Unmarshal(out, &cases); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	types := 0
	for _, c := range cases {
		if c.Skip != "" {
			t.Logf("%s: h5py cannot write it (%s)", c.Case, c.Skip)
			continue
		}
		if strings.HasPrefix(c.Case, "attr ") {
			types++
		}
		g, err := ReadGraph(c.File)
		refused := func(want ...string) {
			t.Helper()
			if err == nil {
				t.Errorf("%s: read, want a refusal", c.Case)
				return
			}
			for _, w := range append(want, filepath.Base(c.File)) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: %v\nwant %q in it", c.Case, err, w)
				}
			}
		}
		switch c.Kind {
		case "i", "u", "directed", "ints":
			if err != nil {
				t.Errorf("%s: %v", c.Case, err)
				continue
			}
			if g.NumNodes != 6 || g.Directed != (c.Case != "directed numpy bool") ||
				!reflect.DeepEqual(g.Splits["train"], []int64{0, 1, 2}) || !reflect.DeepEqual(g.Label, []int64{0, 1, 0, 1, 0, 1}) ||
				!reflect.DeepEqual(g.OrigID, []int64{0, 3, 6, 9, 12, 15}) || !reflect.DeepEqual(g.Partitions["halves"].Assign, []int32{0, 0, 0, 1, 1, 1}) {
				t.Errorf("%s: read %+v", c.Case, g)
			}
		case "b":
			refused("num_nodes", "boolean", "numpy.int64")
		case "f":
			refused("num_nodes", "floating-point", "numpy.int64")
		case "c":
			refused("num_nodes", "class compound", "numpy.int64")
		case "V":
			refused("num_nodes", "class opaque", "numpy.int64")
		case "S", "U", "O":
			refused("num_nodes", "string", "numpy.int64")
		case "masks":
			if err != nil {
				t.Errorf("%s: %v", c.Case, err)
				continue
			}
			want := map[string][]int64{"train": {0, 1}, "valid": {2}, "test": {4, 5}, "train_mask": {0, 1, 2, 3, 4, 5}}
			if !reflect.DeepEqual(g.Splits, want) {
				t.Errorf("%s: splits %v, want %v", c.Case, g.Splits, want)
			}
		case "unknown":
			if err != nil {
				t.Errorf("%s: %v", c.Case, err)
				continue
			}
			s, _ := Stat(c.File)
			if len(s.Ignored) != 2 || len(s.Partitions) != 1 || len(s.Splits) != 1 {
				t.Errorf("%s: ignored %v, partitions %v, splits %v", c.Case, s.Ignored, s.Partitions, s.Splits)
			}
		case "short_mask":
			refused("/split/valid", "shape [2]", "want [6]")
		case "feat":
			refused("/node/feat", "want float32", "astype(numpy.float32)")
		case "lzf":
			refused("/node/feat", "lzf (filter 32000)", "gzip")
		default:
			t.Errorf("%s: unexpected kind %q", c.Case, c.Kind)
		}
	}
	if types < 15 {
		t.Errorf("only %d numpy scalar types tried", types)
	}
}
