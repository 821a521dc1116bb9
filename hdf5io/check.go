package hdf5io

// checkBytes is how many bytes Check reads per call.
const checkBytes = 16 << 20

// Check reads every value of the file, a slab at a time (bounded memory),
// and returns what breaks the layout's rules, one error per object (the
// first bad element), in layout order: the broken splits and partitions
// of Summary.Broken, neighbour ids out of range, non-finite features and
// encodings, labels that break the rule of ClassCount, negative graph
// ids, split ids and assignments out of range. These are what ReadGraph
// and training refuse. progress, if not nil, is
// called with the bytes read so far and the total.
func (r *Reader) Check(progress func(done, total int64)) []error {
	s := &r.sum
	var errs []error
	var done, total int64
	for _, d := range s.Datasets {
		total += d.Len() * int64(d.Type.Size())
	}
	step := func(b int64) {
		done += b
		if progress != nil {
			progress(done, total)
		}
	}
	ptr, err := r.Indptr()
	if err != nil {
		return append(errs, err)
	}
	step(8 * int64(len(ptr)))
	// Nodes in slabs of about checkBytes of neighbour ids.
	for lo := int64(0); lo < s.NumNodes; {
		hi := lo + 1
		for hi < s.NumNodes && (ptr[hi+1]-ptr[lo])*8 < checkBytes {
			hi = min(s.NumNodes, hi+max(1, (hi-lo)))
		}
		if _, err := r.CSR(lo, hi); err != nil {
			errs = append(errs, err)
			break
		}
		step((ptr[hi] - ptr[lo]) * int64(s.IndexType.Size()))
		lo = hi
	}
	floats := []string{}
	if s.HasFeat {
		floats = append(floats, DatasetFeat)
	}
	for _, name := range []string{"/node/pos_enc", "/node/struct_enc"} {
		if ok, _ := r.f.Exists(name); ok {
			floats = append(floats, name)
		}
	}
	for _, name := range floats {
		cols, err := r.NodeColumns(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rows := max(1, checkBytes/(4*int64(cols)))
		for lo := int64(0); lo < s.NumNodes; lo += rows {
			hi := min(s.NumNodes, lo+rows)
			if _, err := r.NodeRows(name, lo, hi); err != nil {
				errs = append(errs, err)
				break
			}
			step((hi - lo) * 4 * int64(cols))
		}
	}
	if s.HasLabel {
		if _, err := r.Classes(); err != nil {
			errs = append(errs, err)
		}
		step(8 * s.NumNodes)
	}
	if s.HasGraphID {
		rows := int64(checkBytes / 8)
		for lo := int64(0); lo < s.NumNodes; lo += rows {
			hi := min(s.NumNodes, lo+rows)
			if _, err := r.GraphIDs(lo, hi); err != nil {
				errs = append(errs, err)
				break
			}
		}
	}
	for _, obj := range sortedKeys(s.Broken) {
		errs = append(errs, s.Broken[obj])
	}
	for _, name := range sortedKeys(s.Splits) {
		if _, err := r.Split(name); err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range sortedKeys(s.Partitions) {
		if _, err := r.Partition(name); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
