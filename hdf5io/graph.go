package hdf5io

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/hdf5"
)

// FormatVersion is the layout version WriteGraph writes and the newest one
// the readers accept (docs/FORMAT.md, "Versioning").
const FormatVersion = 1

// Names of the layout's objects and root attributes (docs/FORMAT.md).
const (
	AttrFormatVersion = "format_version"
	AttrNumNodes      = "num_nodes"
	AttrNumEdges      = "num_edges"
	AttrDirected      = "directed"
	AttrNumParts      = "num_parts"
	// AttrNumClasses, an optional attribute of /node/label, sets the
	// number of classes (docs/FORMAT.md, "Labels").
	AttrNumClasses = "num_classes"

	DatasetIndptr  = "/graph/indptr"
	DatasetIndices = "/graph/indices"
	DatasetFeat    = "/node/feat"
	DatasetLabel   = "/node/label"
	DatasetOrigID  = "/node/orig_id"
	DatasetGraphID = "/node/graph_id"
	GroupSplit     = "/split"
	GroupPartition = "/partition"
)

// Limits the readers enforce before they allocate, so a damaged or hostile
// file gives an error instead of an enormous allocation.
const (
	MaxNodes   = graph.MaxNodes // num_nodes
	MaxEdges   = int64(1) << 44 // num_edges
	MaxFeatDim = 1 << 24        // columns of /node/feat
	// MaxClasses bounds the number of classes: every label is Unlabelled
	// or in [0, MaxClasses). A model's output layer and each batch's
	// logits grow with it (hidden x classes weights, batch x classes
	// values); 2^16 is about 380 times the largest common node-classification
	// benchmark (ogbn-papers100M: 172 classes) and keeps both at a few
	// hundred MiB, where a stray huge label would otherwise size a layer
	// of terabytes (docs/FORMAT.md, "Labels").
	MaxClasses = 1 << 16
	// Unlabelled is the label of a node without one (OGB's convention).
	Unlabelled = -1
	// A dataset may not claim more than maxInflate times the file's size
	// (deflate cannot compress beyond ~1032:1) plus slackBytes.
	maxInflate = 1100
	slackBytes = int64(64) << 20
)

// Graph is a graph dataset in memory, the whole of one file of the
// layout: the CSR of /graph, the node data of /node and /split, and the
// partitions. It embeds graph.CSR and graph.NodeData rather than copying
// their fields, so g.Indptr, g.Feat, g.Splits ... are those types' fields
// and &g.CSR is the graph the partitioners, encoders and samplers take,
// without a conversion; a writer builds one as Graph{CSR: *csr,
// NodeData: nodes}. The split names are graph.SplitNames.
//
// Graph's Validate is the layout's check and hides graph.CSR.Validate:
// the layout lets neighbour lists come unsorted or repeated (writers
// SHOULD sort them, readers MUST NOT rely on it), so a Graph that
// ReadGraph returns has ids in range but its rows may break graph.CSR's
// sorted-and-unique invariant; g.CSR.Validate checks that too.
type Graph struct {
	graph.CSR
	graph.NodeData
	// Partitions maps a partition name to its assignment; nil or empty if
	// the file has none.
	Partitions map[string]Partition
	// NumClasses is the num_classes attribute of /node/label: 0 when the
	// file has none, and the number of classes is then 1 + the largest
	// label (Classes).
	NumClasses int
}

// ClassCount is the layout's one rule for the number of classes C of a
// file's labels (docs/FORMAT.md, "Labels"): numClasses, the num_classes
// attribute of /node/label, when it is set (> 0), else 1 + maxLabel, the
// largest label of any node (Unlabelled when no node has a label, which
// gives 0). Every reader of labels takes C from here; the labels that
// Reader.Labels returns (and Graph.Validate accepts) are Unlabelled or in
// [0, C), so C is at most MaxClasses.
func ClassCount(numClasses int, maxLabel int64) int {
	if numClasses > 0 {
		return numClasses
	}
	return int(max(maxLabel, Unlabelled) + 1)
}

// Classes is the number of classes of g's labels (ClassCount); 0 without
// labels.
func (g *Graph) Classes() int {
	mx := int64(Unlabelled)
	for _, l := range g.Label {
		mx = max(mx, l)
	}
	return ClassCount(g.NumClasses, mx)
}

// checkLabels checks labels, /node/label[base:base+len(labels)], against
// the layout's rule: each is Unlabelled or in [0, C), where C is
// numClasses when set, else MaxClasses.
func checkLabels(kind error, labels []int64, numClasses int, base int64) error {
	limit, why := int64(MaxClasses), "MaxClasses, the layout's limit"
	if numClasses > 0 {
		limit, why = int64(numClasses), "the "+AttrNumClasses+" attribute of "+DatasetLabel
	}
	for i, l := range labels {
		if l < Unlabelled || l >= limit {
			return bad(kind, "%s[%d] = %d: a label is -1 (unlabelled) or a class in [0, %d) (%s; docs/FORMAT.md, \"Labels\")",
				DatasetLabel, base+int64(i), l, limit, why)
		}
	}
	return nil
}

// Partition assigns every node to one of NumParts parts.
type Partition struct {
	Assign   []int32 // /partition/<name>/assign, len NumNodes, values in [0, NumParts)
	NumParts int
	Metrics  map[string]float64 // float64 attributes of /partition/<name> (edge_cut, comm_volume, ...)
}

// IndexType is the type /graph/indices gets: hdf5.Int32 when NumNodes <=
// math.MaxInt32, else hdf5.Int64.
func IndexType(numNodes int64) hdf5.Type {
	if numNodes <= math.MaxInt32 {
		return hdf5.Int32
	}
	return hdf5.Int64
}

// Validate checks g against the layout's rules and reports the first
// violation, naming the dataset and the element's index. The error wraps
// ErrInvalid.
func (g *Graph) Validate() error {
	return g.check(ErrInvalid)
}

func bad(kind error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", kind, fmt.Sprintf(format, args...))
}

func (g *Graph) check(kind error) error {
	n := g.NumNodes
	if n < 0 || n > MaxNodes {
		return bad(kind, "%s = %d not in [0, %d]", AttrNumNodes, n, MaxNodes)
	}
	if (g.Indices32 == nil) == (g.Indices64 == nil) {
		return bad(kind, "%s: exactly one of Indices32 and Indices64 must be non-nil", DatasetIndices)
	}
	if g.Indices32 != nil && n-1 > math.MaxInt32 {
		return bad(kind, "%s: int32 indices cannot hold %d nodes", DatasetIndices, n)
	}
	e := int64(len(g.Indices32) + len(g.Indices64))
	if int64(len(g.Indptr)) != n+1 {
		return bad(kind, "%s has %d values, want num_nodes+1 = %d", DatasetIndptr, len(g.Indptr), n+1)
	}
	if err := checkIndptr(kind, g.Indptr, n, e, 0); err != nil {
		return err
	}
	var err error
	if g.Indices32 != nil {
		err = checkIDs(kind, DatasetIndices, g.Indices32, n, 0)
	} else {
		err = checkIDs(kind, DatasetIndices, g.Indices64, n, 0)
	}
	if err != nil {
		return err
	}
	if g.Feat != nil || g.FeatDim != 0 {
		if g.Feat == nil || g.FeatDim < 1 || g.FeatDim > MaxFeatDim {
			return bad(kind, "%s: FeatDim = %d with %s features (want FeatDim in [1, %d] and Feat non-nil)", DatasetFeat, g.FeatDim, nilOr(g.Feat == nil), MaxFeatDim)
		}
		if int64(len(g.Feat)) != n*int64(g.FeatDim) {
			return bad(kind, "%s has %d values, want num_nodes %d x %d", DatasetFeat, len(g.Feat), n, g.FeatDim)
		}
		if err := checkFinite(kind, g.Feat, g.FeatDim, 0); err != nil {
			return err
		}
	}
	if g.Label != nil && int64(len(g.Label)) != n {
		return bad(kind, "%s has %d values, want num_nodes = %d", DatasetLabel, len(g.Label), n)
	}
	if g.NumClasses < 0 || g.NumClasses > MaxClasses || (g.NumClasses > 0 && g.Label == nil) {
		return bad(kind, "%s: NumClasses = %d (want 0, or 1..%d with labels)", DatasetLabel, g.NumClasses, MaxClasses)
	}
	if err := checkLabels(kind, g.Label, g.NumClasses, 0); err != nil {
		return err
	}
	if g.OrigID != nil && int64(len(g.OrigID)) != n {
		return bad(kind, "%s has %d values, want num_nodes = %d", DatasetOrigID, len(g.OrigID), n)
	}
	if g.GraphID != nil && int64(len(g.GraphID)) != n {
		return bad(kind, "%s has %d values, want num_nodes = %d", DatasetGraphID, len(g.GraphID), n)
	}
	for i, id := range g.GraphID {
		if id < 0 {
			return bad(kind, "%s[%d] = %d is negative", DatasetGraphID, i, id)
		}
	}
	for _, name := range sortedKeys(g.Splits) {
		if err := checkLinkName(kind, GroupSplit, name); err != nil {
			return err
		}
		if err := checkIDs(kind, GroupSplit+"/"+name, g.Splits[name], n, 0); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(g.Partitions) {
		if err := g.Partitions[name].check(kind, name, n); err != nil {
			return err
		}
	}
	return nil
}

func nilOr(isNil bool) string {
	if isNil {
		return "nil"
	}
	return "non-nil"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func checkLinkName(kind error, group, name string) error {
	if name == "" || name == "." || strings.ContainsAny(name, "/\x00") {
		return bad(kind, "%s: name %q (want a non-empty name without '/')", group, name)
	}
	return nil
}

func (p Partition) check(kind error, name string, n int64) error {
	if err := checkLinkName(kind, GroupPartition, name); err != nil {
		return err
	}
	obj := GroupPartition + "/" + name
	if p.NumParts < 1 || int64(p.NumParts) > math.MaxInt32 {
		return bad(kind, "%s: %s = %d (want >= 1)", obj, AttrNumParts, p.NumParts)
	}
	if int64(len(p.Assign)) != n {
		return bad(kind, "%s/assign has %d values, want num_nodes = %d", obj, len(p.Assign), n)
	}
	for i, a := range p.Assign {
		if a < 0 || int(a) >= p.NumParts {
			return bad(kind, "%s/assign[%d] = %d not in [0, %d)", obj, i, a, p.NumParts)
		}
	}
	for _, k := range sortedKeys(p.Metrics) {
		if k == AttrNumParts || k == "" || strings.ContainsRune(k, 0) {
			return bad(kind, "%s: metric name %q is reserved or empty", obj, k)
		}
	}
	return nil
}

// checkIndptr checks ptr = indptr[base : base+len(ptr)] of a CSR with n
// nodes and e edges: non-decreasing, inside [0, e], starting at 0 when
// base is 0 and ending at e when it reaches node n.
func checkIndptr(kind error, ptr []int64, n, e, base int64) error {
	if len(ptr) == 0 {
		return bad(kind, "%s: empty", DatasetIndptr)
	}
	if base == 0 && ptr[0] != 0 {
		return bad(kind, "%s[0] = %d, want 0", DatasetIndptr, ptr[0])
	}
	if ptr[0] < 0 || ptr[0] > e {
		return bad(kind, "%s[%d] = %d not in [0, num_edges = %d]", DatasetIndptr, base, ptr[0], e)
	}
	for i := 1; i < len(ptr); i++ {
		if ptr[i] < ptr[i-1] {
			return bad(kind, "%s[%d] = %d < %s[%d] = %d (must be non-decreasing)", DatasetIndptr, base+int64(i), ptr[i], DatasetIndptr, base+int64(i)-1, ptr[i-1])
		}
	}
	last, li := ptr[len(ptr)-1], base+int64(len(ptr))-1
	if li == n && last != e {
		return bad(kind, "%s[%d] = %d, want num_edges = %d", DatasetIndptr, li, last, e)
	}
	if last > e {
		return bad(kind, "%s[%d] = %d > num_edges = %d", DatasetIndptr, li, last, e)
	}
	return nil
}

func checkIDs[T int32 | int64](kind error, name string, ids []T, n, base int64) error {
	for i, v := range ids {
		if int64(v) < 0 || int64(v) >= n {
			return bad(kind, "%s[%d] = %d not in [0, %d)", name, base+int64(i), v, n)
		}
	}
	return nil
}

func checkFinite(kind error, feat []float32, dim int, baseRow int64) error {
	for i, v := range feat {
		// Exponent all ones: NaN or ±Inf.
		if math.Float32bits(v)&0x7f800000 == 0x7f800000 {
			return bad(kind, "%s[%d][%d] = %v (must be finite)", DatasetFeat, baseRow+int64(i/dim), i%dim, v)
		}
	}
	return nil
}
