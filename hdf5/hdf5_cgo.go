//go:build cgo

package hdf5

/*
#cgo pkg-config: hdf5
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <hdf5.h>

// Element type codes shared with Go (see Type).
enum { WEFT_INT32 = 1, WEFT_INT64, WEFT_UINT8, WEFT_FLOAT32, WEFT_FLOAT64 };
// Bool (Go's Type 11): h5py's boolean, read in the file's own enum type.
enum { WEFT_BOOL = 11 };

// weft_is_bool reports whether t is h5py's boolean: an 8-bit enum whose
// two members are FALSE and TRUE.
static int weft_is_bool(hid_t t) {
	if (H5Tget_class(t) != H5T_ENUM || H5Tget_size(t) != 1 || H5Tget_nmembers(t) != 2) return 0;
	int ok = 1;
	for (unsigned i = 0; i < 2; i++) {
		char *n = H5Tget_member_name(t, i);
		if (!n) return 0;
		if (strcmp(n, i == 0 ? "FALSE" : "TRUE") != 0) ok = 0;
		H5free_memory(n);
	}
	return ok;
}

// HDF5 keeps one error stack, and one "print automatically" switch, per OS
// thread in the thread-safe build: silence each thread the first time the
// package uses it.
static __thread int weft_quiet_done;
static void weft_quiet(void) {
	if (!weft_quiet_done) {
		H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
		weft_quiet_done = 1;
	}
}

// The error stack, copied out entry by entry. Filled on the thread whose
// call failed, before any other HDF5 call clears it.
#define WEFT_MAXERR 64
typedef struct {
	char maj[96], min[96], fn[64], desc[192];
} weft_errent;
typedef struct {
	int n;
	weft_errent e[WEFT_MAXERR];
} weft_estack;

typedef struct { hid_t maj, min; char func[64], desc[192]; } weft_rawent;
typedef struct { int n; weft_rawent e[WEFT_MAXERR]; } weft_rawstack;

static herr_t weft_walk_cb(unsigned n, const H5E_error2_t *err, void *data) {
	weft_rawstack *s = data;
	if (s->n >= WEFT_MAXERR) return 0;
	weft_rawent *r = &s->e[s->n++];
	r->maj = err->maj_num;
	r->min = err->min_num;
	snprintf(r->func, sizeof r->func, "%s", err->func_name ? err->func_name : "");
	snprintf(r->desc, sizeof r->desc, "%s", err->desc ? err->desc : "");
	return 0;
}

static void weft_errstack(weft_estack *out) {
	weft_rawstack raw;
	raw.n = 0;
	H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, weft_walk_cb, &raw);
	out->n = raw.n;
	for (int i = 0; i < raw.n; i++) {
		weft_errent *e = &out->e[i];
		e->maj[0] = e->min[0] = 0;
		if (H5Eget_msg(raw.e[i].maj, NULL, e->maj, sizeof e->maj) < 0) e->maj[0] = 0;
		if (H5Eget_msg(raw.e[i].min, NULL, e->min, sizeof e->min) < 0) e->min[0] = 0;
		memcpy(e->fn, raw.e[i].func, sizeof e->fn);
		memcpy(e->desc, raw.e[i].desc, sizeof e->desc);
	}
	H5Eclear2(H5E_DEFAULT);
}

static void weft_begin(void) { weft_quiet(); H5Eclear2(H5E_DEFAULT); }

// Every HDF5 call clears the error stack on entry, the clean-up calls
// after a failure included: keep a failure's stack across them.
static hid_t weft_save(int failed) { return failed ? H5Eget_current_stack() : -1; }
static void weft_restore(hid_t es) { if (es >= 0) H5Eset_current_stack(es); }

static int weft_threadsafe(void) {
	hbool_t ts = 0;
	if (H5is_library_threadsafe(&ts) < 0) return 0;
	return ts ? 1 : 0;
}

static void weft_version(unsigned *maj, unsigned *min, unsigned *rel) {
	H5get_libversion(maj, min, rel);
}

static int weft_deflate_avail(void) {
	unsigned cfg = 0;
	if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0) return 0;
	if (H5Zget_filter_info(H5Z_FILTER_DEFLATE, &cfg) < 0) return 0;
	return (cfg & H5Z_FILTER_CONFIG_ENCODE_ENABLED) && (cfg & H5Z_FILTER_CONFIG_DECODE_ENABLED);
}

static hid_t weft_fapl(int newfile) {
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	if (fapl < 0) return fapl;
	// Lock when the file system can; work on ones (NFS, Lustre) that cannot.
	H5Pset_file_locking(fapl, 1, 1);
	// 1.8-format metadata: checksummed superblock and object headers, so
	// a damaged file reads as an error instead of as garbage.
	if (newfile && H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST) < 0) {
		hid_t es = weft_save(1);
		H5Pclose(fapl);
		weft_restore(es);
		return -1;
	}
	return fapl;
}

static hid_t weft_fcreate(const char *name) {
	hid_t fapl = weft_fapl(1);
	if (fapl < 0) return fapl;
	hid_t f = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
	hid_t es = weft_save(f < 0);
	H5Pclose(fapl);
	weft_restore(es);
	return f;
}

static hid_t weft_fopen(const char *name, int rw) {
	hid_t fapl = weft_fapl(0);
	if (fapl < 0) return fapl;
	hid_t f = H5Fopen(name, rw ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl);
	hid_t es = weft_save(f < 0);
	H5Pclose(fapl);
	weft_restore(es);
	return f;
}

static herr_t weft_fclose(hid_t f) { return H5Fclose(f); }

static herr_t weft_fflush(hid_t f) { return H5Fflush(f, H5F_SCOPE_LOCAL); }

static hid_t weft_lcpl(void) {
	hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
	if (lcpl < 0) return lcpl;
	if (H5Pset_create_intermediate_group(lcpl, 1) < 0) {
		hid_t es = weft_save(1);
		H5Pclose(lcpl);
		weft_restore(es);
		return -1;
	}
	return lcpl;
}

static herr_t weft_gcreate(hid_t f, const char *path) {
	hid_t lcpl = weft_lcpl();
	if (lcpl < 0) return -1;
	hid_t g = H5Gcreate2(f, path, lcpl, H5P_DEFAULT, H5P_DEFAULT);
	hid_t es = weft_save(g < 0);
	H5Pclose(lcpl);
	weft_restore(es);
	if (g < 0) return -1;
	return H5Gclose(g);
}

// weft_exists reports whether every link along path exists (1), not (0),
// or fails (<0). The root always exists.
static int weft_exists(hid_t f, const char *path) {
	size_t n = strlen(path);
	char *p = malloc(n + 1);
	if (!p) return -1;
	memcpy(p, path, n + 1);
	int ok = 1;
	for (size_t i = 1; i <= n && ok == 1; i++) {
		if (p[i] == '/' || p[i] == 0) {
			char c = p[i];
			p[i] = 0;
			if (i > 1 || (i == 1 && p[0] != '/')) {
				htri_t e = H5Lexists(f, p, H5P_DEFAULT);
				if (e < 0) ok = -1; else if (e == 0) ok = 0;
			}
			p[i] = c;
		}
	}
	free(p);
	return ok;
}

// weft_objtype: 1 group, 2 dataset, 3 other, <0 failure.
static int weft_objtype(hid_t f, const char *path) {
	hid_t o = H5Oopen(f, path, H5P_DEFAULT);
	if (o < 0) return -1;
	H5I_type_t t = H5Iget_type(o);
	hid_t es = weft_save(t == H5I_BADID);
	H5Oclose(o);
	weft_restore(es);
	if (t == H5I_BADID) return -1;
	if (t == H5I_GROUP) return 1;
	if (t == H5I_DATASET) return 2;
	return 3;
}

static herr_t weft_ldelete(hid_t f, const char *path) { return H5Ldelete(f, path, H5P_DEFAULT); }

// Names collected into one malloc'd buffer, NUL-separated.
typedef struct { char *buf; size_t len, cap; } weft_names;

static int weft_names_add(weft_names *s, const char *name) {
	size_t n = strlen(name) + 1;
	if (s->len + n > s->cap) {
		size_t c = s->cap ? s->cap * 2 : 256;
		while (c < s->len + n) c *= 2;
		char *b = realloc(s->buf, c);
		if (!b) return -1;
		s->buf = b;
		s->cap = c;
	}
	memcpy(s->buf + s->len, name, n);
	s->len += n;
	return 0;
}

static herr_t weft_link_cb(hid_t g, const char *name, const H5L_info_t *info, void *data) {
	return weft_names_add(data, name) < 0 ? -1 : 0;
}

static herr_t weft_attr_cb(hid_t o, const char *name, const H5A_info_t *info, void *data) {
	return weft_names_add(data, name) < 0 ? -1 : 0;
}

static herr_t weft_members(hid_t f, const char *path, char **out, size_t *outlen) {
	weft_names s = {0, 0, 0};
	*out = NULL;
	*outlen = 0;
	hid_t g = H5Gopen2(f, path, H5P_DEFAULT);
	if (g < 0) return -1;
	hsize_t idx = 0;
	herr_t rc = H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, weft_link_cb, &s);
	hid_t es = weft_save(rc < 0);
	H5Gclose(g);
	weft_restore(es);
	if (rc < 0) { free(s.buf); return -1; }
	*out = s.buf;
	*outlen = s.len;
	return 0;
}

static herr_t weft_attr_names(hid_t f, const char *path, char **out, size_t *outlen) {
	weft_names s = {0, 0, 0};
	*out = NULL;
	*outlen = 0;
	hid_t o = H5Oopen(f, path, H5P_DEFAULT);
	if (o < 0) return -1;
	hsize_t idx = 0;
	herr_t rc = H5Aiterate2(o, H5_INDEX_NAME, H5_ITER_INC, &idx, weft_attr_cb, &s);
	hid_t es = weft_save(rc < 0);
	H5Oclose(o);
	weft_restore(es);
	if (rc < 0) { free(s.buf); return -1; }
	*out = s.buf;
	*outlen = s.len;
	return 0;
}

static hid_t weft_ftype(int t) {
	switch (t) {
	case WEFT_INT32: return H5T_STD_I32LE;
	case WEFT_INT64: return H5T_STD_I64LE;
	case WEFT_UINT8: return H5T_STD_U8LE;
	case WEFT_FLOAT32: return H5T_IEEE_F32LE;
	case WEFT_FLOAT64: return H5T_IEEE_F64LE;
	}
	return -1;
}

static hid_t weft_mtype(int t) {
	switch (t) {
	case WEFT_INT32: return H5T_NATIVE_INT32;
	case WEFT_INT64: return H5T_NATIVE_INT64;
	case WEFT_UINT8: return H5T_NATIVE_UINT8;
	case WEFT_FLOAT32: return H5T_NATIVE_FLOAT;
	case WEFT_FLOAT64: return H5T_NATIVE_DOUBLE;
	}
	return -1;
}

// weft_dcreate creates a 1-D (rank 1) or 2-D dataset. chunkrows 0 means
// contiguous; level > 0 adds shuffle + deflate (chunked only).
static herr_t weft_dcreate(hid_t f, const char *path, int typ, int rank,
		hsize_t rows, hsize_t cols, hsize_t chunkrows, int level) {
	hsize_t dims[2] = {rows, cols};
	hsize_t chunk[2] = {chunkrows, cols};
	hid_t ft = weft_ftype(typ);
	if (ft < 0) return -1;
	hid_t space = H5Screate_simple(rank, dims, NULL);
	if (space < 0) return -1;
	hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
	hid_t lcpl = weft_lcpl();
	herr_t rc = -1;
	hid_t d = -1;
	if (dcpl < 0 || lcpl < 0) goto done;
	if (chunkrows > 0) {
		if (H5Pset_chunk(dcpl, rank, chunk) < 0) goto done;
		if (level > 0) {
			if (H5Pset_shuffle(dcpl) < 0) goto done;
			if (H5Pset_deflate(dcpl, (unsigned)level) < 0) goto done;
		}
	}
	// Never write fill values: every element is written by the caller.
	if (H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0) goto done;
	if (H5Pset_alloc_time(dcpl, chunkrows > 0 ? H5D_ALLOC_TIME_INCR : H5D_ALLOC_TIME_LATE) < 0) goto done;
	d = H5Dcreate2(f, path, ft, space, lcpl, dcpl, H5P_DEFAULT);
	if (d >= 0) rc = H5Dclose(d);
done:;
	hid_t es = weft_save(rc < 0);
	if (lcpl >= 0) H5Pclose(lcpl);
	if (dcpl >= 0) H5Pclose(dcpl);
	H5Sclose(space);
	weft_restore(es);
	return rc;
}

typedef struct {
	int tclass;    // H5T_class_t
	int size;      // bytes per element
	int sign;      // H5T_sign_t for integers
	int rank;
	hsize_t dims[2];
	hsize_t storage;
	hsize_t chunkrows; // 0: not chunked
	int deflate;   // deflate level, -1 none
	int shuffle;
	int isbool;    // h5py's boolean enum
	int nfilters;  // filters in the pipeline
	int badfilter; // a filter this libhdf5 cannot apply, 0 none
	char badfname[64];
} weft_dinfo;

static herr_t weft_dinfo_get(hid_t f, const char *path, weft_dinfo *out) {
	memset(out, 0, sizeof *out);
	out->deflate = -1;
	hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
	if (d < 0) return -1;
	herr_t rc = -1;
	hid_t t = H5Dget_type(d), s = -1, p = -1;
	if (t < 0) goto done;
	out->tclass = H5Tget_class(t);
	out->size = (int)H5Tget_size(t);
	if (out->tclass == H5T_INTEGER) out->sign = H5Tget_sign(t);
	out->isbool = weft_is_bool(t);
	s = H5Dget_space(d);
	if (s < 0) goto done;
	out->rank = H5Sget_simple_extent_ndims(s);
	if (out->rank < 0) goto done;
	if (out->rank <= 2) {
		if (H5Sget_simple_extent_dims(s, out->dims, NULL) < 0) goto done;
	}
	out->storage = H5Dget_storage_size(d);
	p = H5Dget_create_plist(d);
	if (p < 0) goto done;
	if (H5Pget_layout(p) == H5D_CHUNKED) {
		hsize_t cd[32];
		int r = H5Pget_chunk(p, 32, cd);
		if (r > 0) out->chunkrows = cd[0];
		int nf = H5Pget_nfilters(p);
		out->nfilters = nf;
		for (int i = 0; i < nf; i++) {
			unsigned flags = 0, cv[8];
			size_t ncv = 8;
			char fname[64] = {0};
			H5Z_filter_t id = H5Pget_filter2(p, (unsigned)i, &flags, &ncv, cv, sizeof fname, fname, NULL);
			if (id == H5Z_FILTER_DEFLATE) out->deflate = ncv > 0 ? (int)cv[0] : 0;
			if (id == H5Z_FILTER_SHUFFLE) out->shuffle = 1;
			if (id >= 0 && !out->badfilter && H5Zfilter_avail(id) <= 0) {
				out->badfilter = (int)id;
				snprintf(out->badfname, sizeof out->badfname, "%s", fname);
			}
		}
	}
	rc = 0;
done:;
	hid_t es = weft_save(rc < 0);
	if (p >= 0) H5Pclose(p);
	if (s >= 0) H5Sclose(s);
	if (t >= 0) H5Tclose(t);
	H5Dclose(d);
	weft_restore(es);
	return rc;
}

// weft_rows reads (write == 0) or writes rows [start, start+count) of a
// 1-D or 2-D dataset with cols columns from or into buf.
static herr_t weft_rows(hid_t f, const char *path, int typ, int write,
		hsize_t start, hsize_t count, hsize_t cols, void *buf) {
	hid_t mt = typ == WEFT_BOOL ? 0 : weft_mtype(typ);
	if (mt < 0) return -1;
	hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
	if (d < 0) return -1;
	herr_t rc = -1;
	hid_t fs = -1, ms = -1, bt = -1;
	if (typ == WEFT_BOOL) {
		if (write) goto done;
		bt = H5Dget_type(d); // the enum itself: 0 and 1 bytes
		if (bt < 0) goto done;
		mt = bt;
	}
	if (count == 0) { rc = 0; goto done; }
	fs = H5Dget_space(d);
	if (fs < 0) goto done;
	int rank = H5Sget_simple_extent_ndims(fs);
	if (rank < 1 || rank > 2) goto done;
	hsize_t off[2] = {start, 0}, cnt[2] = {count, cols};
	if (H5Sselect_hyperslab(fs, H5S_SELECT_SET, off, NULL, cnt, NULL) < 0) goto done;
	ms = H5Screate_simple(rank, cnt, NULL);
	if (ms < 0) goto done;
	if (write) rc = H5Dwrite(d, mt, ms, fs, H5P_DEFAULT, buf);
	else rc = H5Dread(d, mt, ms, fs, H5P_DEFAULT, buf);
done:;
	hid_t es = weft_save(rc < 0);
	if (bt >= 0) H5Tclose(bt);
	if (ms >= 0) H5Sclose(ms);
	if (fs >= 0) H5Sclose(fs);
	H5Dclose(d);
	weft_restore(es);
	return rc;
}

// weft_write_chunk writes one chunk, already run through the dataset's
// filters, at row (a multiple of the chunk rows).
static herr_t weft_write_chunk(hid_t f, const char *path, hsize_t row, const void *buf, size_t n) {
	hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
	if (d < 0) return -1;
	hsize_t off[2] = {row, 0};
	herr_t rc = H5Dwrite_chunk(d, H5P_DEFAULT, 0, off, n, buf);
	hid_t es = weft_save(rc < 0);
	H5Dclose(d);
	weft_restore(es);
	return rc;
}

// Attributes: scalar int64, float64 or string (variable-length UTF-8, as
// h5py writes str). Writing replaces an existing attribute of that name.
enum { WEFT_ATTR_INT64 = 1, WEFT_ATTR_FLOAT64, WEFT_ATTR_STRING };

static herr_t weft_awrite(hid_t f, const char *obj, const char *name, int kind,
		long long iv, double fv, const char *sv) {
	hid_t o = H5Oopen(f, obj, H5P_DEFAULT);
	if (o < 0) return -1;
	herr_t rc = -1;
	hid_t sp = -1, ft = -1, a = -1;
	htri_t ex = H5Aexists(o, name);
	if (ex < 0) goto done;
	if (ex > 0 && H5Adelete(o, name) < 0) goto done;
	sp = H5Screate(H5S_SCALAR);
	if (sp < 0) goto done;
	switch (kind) {
	case WEFT_ATTR_INT64: ft = H5Tcopy(H5T_STD_I64LE); break;
	case WEFT_ATTR_FLOAT64: ft = H5Tcopy(H5T_IEEE_F64LE); break;
	case WEFT_ATTR_STRING:
		ft = H5Tcopy(H5T_C_S1);
		if (ft < 0) goto done;
		if (H5Tset_size(ft, H5T_VARIABLE) < 0) goto done;
		if (H5Tset_cset(ft, H5T_CSET_UTF8) < 0) goto done;
		break;
	default: goto done;
	}
	if (ft < 0) goto done;
	a = H5Acreate2(o, name, ft, sp, H5P_DEFAULT, H5P_DEFAULT);
	if (a < 0) goto done;
	switch (kind) {
	case WEFT_ATTR_INT64: { int64_t v = iv; rc = H5Awrite(a, H5T_NATIVE_INT64, &v); break; }
	case WEFT_ATTR_FLOAT64: rc = H5Awrite(a, H5T_NATIVE_DOUBLE, &fv); break;
	case WEFT_ATTR_STRING: { const char *p[1] = {sv}; rc = H5Awrite(a, ft, p); break; }
	}
done:;
	hid_t es = weft_save(rc < 0);
	if (a >= 0) H5Aclose(a);
	if (ft >= 0) H5Tclose(ft);
	if (sp >= 0) H5Sclose(sp);
	H5Oclose(o);
	weft_restore(es);
	return rc;
}

static herr_t weft_adelete(hid_t f, const char *obj, const char *name) {
	return H5Adelete_by_name(f, obj, name, H5P_DEFAULT);
}

typedef struct {
	int tclass, size, sign, vlen, isbool;
	long long npoints;
	long long iv;
	double fv;
	char *sv; // malloc'd, for strings
} weft_aval;

// weft_aread reads a scalar (one-element) attribute of integer, float or
// string class. Arrays and other classes report their class and npoints
// only.
static herr_t weft_aread(hid_t f, const char *obj, const char *name, weft_aval *out) {
	memset(out, 0, sizeof *out);
	hid_t o = H5Oopen(f, obj, H5P_DEFAULT);
	if (o < 0) return -1;
	herr_t rc = -1;
	hid_t a = -1, t = -1, sp = -1, mt = -1;
	a = H5Aopen(o, name, H5P_DEFAULT);
	if (a < 0) goto done;
	t = H5Aget_type(a);
	sp = H5Aget_space(a);
	if (t < 0 || sp < 0) goto done;
	out->tclass = H5Tget_class(t);
	out->size = (int)H5Tget_size(t);
	out->npoints = (long long)H5Sget_simple_extent_npoints(sp);
	if (out->npoints != 1) { rc = 0; goto done; }
	if (weft_is_bool(t)) {
		out->isbool = 1;
		mt = H5Tcopy(t);
		if (mt < 0) goto done;
		unsigned char v = 0;
		rc = H5Aread(a, mt, &v);
		out->iv = v;
		goto done;
	}
	switch (out->tclass) {
	case H5T_INTEGER: {
		out->sign = H5Tget_sign(t);
		int64_t v = 0;
		rc = H5Aread(a, H5T_NATIVE_INT64, &v);
		out->iv = v;
		break;
	}
	case H5T_FLOAT:
		rc = H5Aread(a, H5T_NATIVE_DOUBLE, &out->fv);
		break;
	case H5T_STRING: {
		htri_t vl = H5Tis_variable_str(t);
		if (vl < 0) goto done;
		out->vlen = vl > 0;
		mt = H5Tcopy(t);
		if (mt < 0) goto done;
		if (vl > 0) {
			char *p[1] = {NULL};
			rc = H5Aread(a, mt, p);
			if (rc >= 0 && p[0]) {
				size_t n = strlen(p[0]);
				out->sv = malloc(n + 1);
				if (out->sv) memcpy(out->sv, p[0], n + 1);
				H5free_memory(p[0]);
			}
		} else {
			size_t n = H5Tget_size(t);
			out->sv = calloc(n + 1, 1);
			if (!out->sv) goto done;
			rc = H5Aread(a, mt, out->sv);
		}
		break;
	}
	default:
		rc = 0;
	}
done:;
	hid_t es = weft_save(rc < 0);
	if (mt >= 0) H5Tclose(mt);
	if (sp >= 0) H5Sclose(sp);
	if (t >= 0) H5Tclose(t);
	if (a >= 0) H5Aclose(a);
	H5Oclose(o);
	weft_restore(es);
	return rc;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// mu serialises every call into libhdf5 (see the package doc).
var mu sync.Mutex

// No clean-up of libhdf5 at exit: a Go program leaves without running C's
// atexit handlers, except under the race detector, whose exit runs them;
// there libhdf5's clean-up crashed on a file whose close had failed (a
// full disk). Files are closed explicitly; nothing is left to flush.
func init() {
	mu.Lock()
	C.H5dont_atexit()
	mu.Unlock()
}

// enter takes the library lock and pins the goroutine to its OS thread, so
// the error stack a failing call leaves behind is still there, on the same
// thread, when errstack reads it.
func enter() {
	mu.Lock()
	runtime.LockOSThread()
	C.weft_begin()
}

func leave() {
	runtime.UnlockOSThread()
	mu.Unlock()
}

// errstack copies the calling thread's HDF5 error stack; call it right
// after the failing call, between enter and leave.
func errstack() *StackError {
	s := (*C.weft_estack)(C.malloc(C.size_t(unsafe.Sizeof(C.weft_estack{}))))
	defer C.free(unsafe.Pointer(s))
	C.weft_errstack(s)
	e := &StackError{}
	for i := 0; i < int(s.n); i++ {
		c := &s.e[i]
		e.Entries = append(e.Entries, StackEntry{
			Major: C.GoString(&c.maj[0]),
			Minor: C.GoString(&c.min[0]),
			Func:  C.GoString(&c.fn[0]),
			Desc:  C.GoString(&c.desc[0]),
		})
	}
	return e
}

const built = true

func threadSafe() bool {
	enter()
	defer leave()
	return C.weft_threadsafe() != 0
}

func libVersion() string {
	var a, b, c C.unsigned
	enter()
	C.weft_version(&a, &b, &c)
	leave()
	return fmt.Sprintf("%d.%d.%d", a, b, c)
}

func deflateAvailable() bool {
	enter()
	defer leave()
	return C.weft_deflate_avail() != 0
}

// File is an open HDF5 file. Its methods may be called from several
// goroutines; they take turns (see the package doc).
type File struct {
	id   C.hid_t
	path string
	rw   bool
}

func fail(op, path, obj, detail string, err error) error {
	return &Error{Op: op, File: path, Object: obj, Detail: detail, Err: err}
}

// Create creates the file at path, truncating one that exists, and opens it
// read-write. Any path works, a temporary name included; to publish a file
// atomically, write it under a temporary name in the same directory, Close
// it, then os.Rename it.
func Create(path string) (*File, error) {
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	enter()
	defer leave()
	id := C.weft_fcreate(cs)
	if id < 0 {
		return nil, fail("create", path, "", "", errstack())
	}
	return &File{id: id, path: path, rw: true}, nil
}

// Open opens an existing file read-only.
func Open(path string) (*File, error) { return open(path, false) }

// OpenRW opens an existing file for reading and writing.
func OpenRW(path string) (*File, error) { return open(path, true) }

func open(path string, rw bool) (*File, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, fail("open", path, "", "", err)
	} else if st.IsDir() {
		return nil, fail("open", path, "", "", errors.New("a directory, not an HDF5 file"))
	}
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	var w C.int
	if rw {
		w = 1
	}
	enter()
	defer leave()
	id := C.weft_fopen(cs, w)
	if id < 0 {
		return nil, fail("open", path, "", "", errstack())
	}
	return &File{id: id, path: path, rw: rw}, nil
}

// Path returns the path the file was created or opened with.
func (f *File) Path() string { return f.path }

// Close flushes and closes the file. Closing a closed file is a no-op.
func (f *File) Close() error {
	enter()
	defer leave()
	if f.id < 0 {
		return nil
	}
	id := f.id
	f.id = -1
	if C.weft_fclose(id) < 0 {
		return fail("close", f.path, "", "", errstack())
	}
	return nil
}

// Flush writes buffered data to the file.
func (f *File) Flush() error {
	enter()
	defer leave()
	if err := f.live("flush", ""); err != nil {
		return err
	}
	if C.weft_fflush(f.id) < 0 {
		return fail("flush", f.path, "", "", errstack())
	}
	return nil
}

// live reports an error for a closed file; call it under enter.
func (f *File) live(op, obj string) error {
	if f == nil || f.id < 0 {
		return fail(op, pathOf(f), obj, "", ErrClosed)
	}
	return nil
}

func pathOf(f *File) string {
	if f == nil {
		return ""
	}
	return f.path
}

// CreateGroup creates the group at the absolute path name and any missing
// groups above it. It fails if the group exists.
func (f *File) CreateGroup(name string) error {
	if err := checkName(name); err != nil {
		return fail("create group", pathOf(f), name, "", err)
	}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	enter()
	defer leave()
	if err := f.live("create group", name); err != nil {
		return err
	}
	if C.weft_gcreate(f.id, cs) < 0 {
		return fail("create group", f.path, name, "", errstack())
	}
	return nil
}

// Exists reports whether an object (group or dataset) exists at name.
func (f *File) Exists(name string) (bool, error) {
	if err := checkName(name); err != nil {
		return false, fail("look up", pathOf(f), name, "", err)
	}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	enter()
	defer leave()
	if err := f.live("look up", name); err != nil {
		return false, err
	}
	r := C.weft_exists(f.id, cs)
	if r < 0 {
		return false, fail("look up", f.path, name, "", errstack())
	}
	return r == 1, nil
}

// Kind reports whether name is a group or a dataset. A missing object gives
// an error wrapping ErrNotFound.
func (f *File) Kind(name string) (ObjectKind, error) {
	if err := checkName(name); err != nil {
		return 0, fail("look up", pathOf(f), name, "", err)
	}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	enter()
	defer leave()
	if err := f.live("look up", name); err != nil {
		return 0, err
	}
	if e := C.weft_exists(f.id, cs); e == 0 {
		return 0, fail("look up", f.path, name, "", ErrNotFound)
	}
	r := C.weft_objtype(f.id, cs)
	if r < 0 {
		return 0, fail("look up", f.path, name, "", errstack())
	}
	return ObjectKind(r), nil
}

// Delete removes the link at name (a group with everything below it, or a
// dataset). HDF5 does not give the space back; h5repack does.
func (f *File) Delete(name string) error {
	if err := checkName(name); err != nil {
		return fail("delete", pathOf(f), name, "", err)
	}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	enter()
	defer leave()
	if err := f.live("delete", name); err != nil {
		return err
	}
	if C.weft_ldelete(f.id, cs) < 0 {
		return fail("delete", f.path, name, "", errstack())
	}
	return nil
}

func splitNames(buf *C.char, n C.size_t) []string {
	if buf == nil || n == 0 {
		return []string{}
	}
	s := C.GoStringN(buf, C.int(n))
	return strings.Split(strings.TrimSuffix(s, "\x00"), "\x00")
}

// Members lists the names of the links in a group, in name order.
func (f *File) Members(group string) ([]string, error) {
	if err := checkName(group); err != nil {
		return nil, fail("list", pathOf(f), group, "", err)
	}
	cs := C.CString(group)
	defer C.free(unsafe.Pointer(cs))
	enter()
	defer leave()
	if err := f.live("list", group); err != nil {
		return nil, err
	}
	if e := C.weft_exists(f.id, cs); e == 0 {
		return nil, fail("list", f.path, group, "", ErrNotFound)
	}
	var buf *C.char
	var n C.size_t
	if C.weft_members(f.id, cs, &buf, &n) < 0 {
		return nil, fail("list", f.path, group, "", errstack())
	}
	defer C.free(unsafe.Pointer(buf))
	return splitNames(buf, n), nil
}

// AttrNames lists the attributes of an object (group or dataset; "/" is the
// root), in name order.
func (f *File) AttrNames(obj string) ([]string, error) {
	if err := checkName(obj); err != nil {
		return nil, fail("list attributes", pathOf(f), obj, "", err)
	}
	cs := C.CString(obj)
	defer C.free(unsafe.Pointer(cs))
	enter()
	defer leave()
	if err := f.live("list attributes", obj); err != nil {
		return nil, err
	}
	if e := C.weft_exists(f.id, cs); e == 0 {
		return nil, fail("list attributes", f.path, obj, "", ErrNotFound)
	}
	var buf *C.char
	var n C.size_t
	if C.weft_attr_names(f.id, cs, &buf, &n) < 0 {
		return nil, fail("list attributes", f.path, obj, "", errstack())
	}
	defer C.free(unsafe.Pointer(buf))
	return splitNames(buf, n), nil
}

// CreateDataset creates a dataset of rows x cols elements of type t (cols 0
// makes it 1-D) at the absolute path name, creating missing groups above it.
// The caller then writes every row with WriteRows.
func (f *File) CreateDataset(name string, t Type, rows, cols int64, opt DatasetOptions) error {
	if err := checkName(name); err != nil {
		return fail("create", pathOf(f), name, "", err)
	}
	if !t.writable() {
		return fail("create", pathOf(f), name, "", fmt.Errorf("%w: element type %v", ErrInvalid, t))
	}
	if rows < 0 || cols < 0 || (cols > 0 && rows > MaxElements/cols) || rows > MaxElements {
		return fail("create", pathOf(f), name, "", fmt.Errorf("%w: shape %d x %d", ErrInvalid, rows, cols))
	}
	rank, width := C.int(1), cols
	if cols > 0 {
		rank = 2
	} else {
		width = 1
	}
	chunk, level := opt.layout(t, rows, width)
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	enter()
	defer leave()
	if err := f.live("create", name); err != nil {
		return err
	}
	if C.weft_dcreate(f.id, cs, C.int(t), rank, C.hsize_t(rows), C.hsize_t(width), C.hsize_t(chunk), C.int(level)) < 0 {
		return fail("create", f.path, name, fmt.Sprintf("%v %s", t, shapeString(rank == 2, rows, cols)), errstack())
	}
	return nil
}

// Stat describes the dataset at name.
func (f *File) Stat(name string) (DatasetInfo, error) {
	if err := checkName(name); err != nil {
		return DatasetInfo{}, fail("stat", pathOf(f), name, "", err)
	}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	enter()
	defer leave()
	if err := f.live("stat", name); err != nil {
		return DatasetInfo{}, err
	}
	return f.stat(name, cs)
}

func (f *File) stat(name string, cs *C.char) (DatasetInfo, error) {
	if e := C.weft_exists(f.id, cs); e == 0 {
		return DatasetInfo{}, fail("stat", f.path, name, "", ErrNotFound)
	}
	var d C.weft_dinfo
	if C.weft_dinfo_get(f.id, cs, &d) < 0 {
		return DatasetInfo{}, fail("stat", f.path, name, "", errstack())
	}
	info := DatasetInfo{
		Name:         name,
		Type:         typeOf(int(d.tclass), int(d.size), int(d.sign), d.isbool != 0),
		Class:        className(int(d.tclass)),
		ElemSize:     int(d.size),
		Rank:         int(d.rank),
		StorageBytes: int64(d.storage),
		ChunkRows:    int64(d.chunkrows),
		Deflate:      int(d.deflate),
		Shuffle:      d.shuffle != 0,
		filters:      int(d.nfilters),
	}
	if d.badfilter != 0 {
		info.MissingFilter = fmt.Sprintf("%s (filter %d)", filterName(int(d.badfilter), C.GoString(&d.badfname[0])), int(d.badfilter))
	}
	if info.Rank >= 1 && info.Rank <= 2 {
		info.Rows = int64(d.dims[0])
		if info.Rank == 2 {
			info.Cols = int64(d.dims[1])
		}
	}
	return info, nil
}

// rows reads or writes rows [start, start+count) of the dataset at name;
// buf holds count*cols elements of type t (checked by the caller).
func (f *File) rows(op, name string, t Type, write bool, start, count int64, buf unsafe.Pointer, n int64) error {
	if err := checkName(name); err != nil {
		return fail(op, pathOf(f), name, "", err)
	}
	detail := fmt.Sprintf("rows %d..%d", start, start+count)
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	enter()
	defer leave()
	if err := f.live(op, name); err != nil {
		return err
	}
	if write && !f.rw {
		return fail(op, f.path, name, detail, ErrReadOnly)
	}
	info, err := f.stat(name, cs)
	if err != nil {
		return err
	}
	if err := info.checkRows(t, start, count, n); err != nil {
		return fail(op, f.path, name, detail, err)
	}
	var w C.int
	if write {
		w = 1
	}
	code := C.int(t)
	if info.Type == Bool {
		code = C.WEFT_BOOL
	}
	width := info.Cols
	if info.Rank == 1 {
		width = 1
	}
	// buf is a Go pointer to memory without Go pointers, passed for the
	// duration of the call only; C keeps no copy of it.
	if C.weft_rows(f.id, cs, code, w, C.hsize_t(start), C.hsize_t(count), C.hsize_t(width), buf) < 0 {
		return fail(op, f.path, name, detail, errstack())
	}
	return nil
}

// writeChunk writes data, one chunk already shuffled and deflated, as the
// chunk starting at row of the dataset name.
func (f *File) writeChunk(name string, row int64, data []byte) error {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	enter()
	defer leave()
	if err := f.live("write", name); err != nil {
		return err
	}
	if C.weft_write_chunk(f.id, cs, C.hsize_t(row), unsafe.Pointer(&data[0]), C.size_t(len(data))) < 0 {
		return fail("write", f.path, name, fmt.Sprintf("chunk at row %d", row), errstack())
	}
	return nil
}

// SetAttr sets the scalar attribute name on obj ("/" for the root, or a
// group or dataset path), replacing one that exists. v is an int64, int,
// float64 or string.
func (f *File) SetAttr(obj, name string, v any) error {
	if err := checkName(obj); err != nil {
		return fail("set attribute", pathOf(f), obj, name, err)
	}
	if name == "" || strings.ContainsRune(name, 0) {
		return fail("set attribute", pathOf(f), obj, name, fmt.Errorf("%w: attribute name %q", ErrInvalid, name))
	}
	var kind C.int
	var iv C.longlong
	var fv C.double
	var sv *C.char
	switch x := v.(type) {
	case int64:
		kind, iv = C.WEFT_ATTR_INT64, C.longlong(x)
	case int:
		kind, iv = C.WEFT_ATTR_INT64, C.longlong(x)
	case float64:
		kind, fv = C.WEFT_ATTR_FLOAT64, C.double(x)
	case string:
		if strings.ContainsRune(x, 0) {
			return fail("set attribute", pathOf(f), obj, name, fmt.Errorf("%w: string contains NUL", ErrInvalid))
		}
		kind = C.WEFT_ATTR_STRING
		sv = C.CString(x)
		defer C.free(unsafe.Pointer(sv))
	default:
		return fail("set attribute", pathOf(f), obj, name, fmt.Errorf("%w: attribute value of type %T (want int64, float64 or string)", ErrInvalid, v))
	}
	co, cn := C.CString(obj), C.CString(name)
	defer C.free(unsafe.Pointer(co))
	defer C.free(unsafe.Pointer(cn))
	enter()
	defer leave()
	if err := f.live("set attribute", obj); err != nil {
		return err
	}
	if !f.rw {
		return fail("set attribute", f.path, obj, name, ErrReadOnly)
	}
	if C.weft_awrite(f.id, co, cn, kind, iv, fv, sv) < 0 {
		return fail("set attribute", f.path, obj, name, errstack())
	}
	return nil
}

// DeleteAttr removes the attribute name of obj.
func (f *File) DeleteAttr(obj, name string) error {
	if err := checkName(obj); err != nil {
		return fail("delete attribute", pathOf(f), obj, name, err)
	}
	co, cn := C.CString(obj), C.CString(name)
	defer C.free(unsafe.Pointer(co))
	defer C.free(unsafe.Pointer(cn))
	enter()
	defer leave()
	if err := f.live("delete attribute", obj); err != nil {
		return err
	}
	if !f.rw {
		return fail("delete attribute", f.path, obj, name, ErrReadOnly)
	}
	if C.weft_adelete(f.id, co, cn) < 0 {
		return fail("delete attribute", f.path, obj, name, errstack())
	}
	return nil
}

// Attr reads the attribute name of obj. Scalar integer attributes come back
// as int64, floating-point ones as float64, strings as string, h5py's
// booleans (an 8-bit enum of FALSE and TRUE) as bool; other attributes
// give an error wrapping ErrType. A missing attribute gives an
// error wrapping ErrNotFound.
func (f *File) Attr(obj, name string) (any, error) {
	if err := checkName(obj); err != nil {
		return nil, fail("read attribute", pathOf(f), obj, name, err)
	}
	co, cn := C.CString(obj), C.CString(name)
	defer C.free(unsafe.Pointer(co))
	defer C.free(unsafe.Pointer(cn))
	enter()
	defer leave()
	if err := f.live("read attribute", obj); err != nil {
		return nil, err
	}
	if e := C.weft_exists(f.id, co); e == 0 {
		return nil, fail("read attribute", f.path, obj, name, ErrNotFound)
	}
	var a C.weft_aval
	rc := C.weft_aread(f.id, co, cn, &a)
	if a.sv != nil {
		defer C.free(unsafe.Pointer(a.sv))
	}
	if rc < 0 {
		st := errstack()
		if st.notFound() {
			return nil, fail("read attribute", f.path, obj, name, fmt.Errorf("%w: %w", ErrNotFound, st))
		}
		return nil, fail("read attribute", f.path, obj, name, st)
	}
	if a.npoints != 1 {
		return nil, fail("read attribute", f.path, obj, name, fmt.Errorf("%w: %s attribute with %d elements, want a scalar", ErrType, className(int(a.tclass)), a.npoints))
	}
	if a.isbool != 0 {
		return a.iv != 0, nil
	}
	switch a.tclass {
	case C.H5T_INTEGER:
		if a.sign == C.H5T_SGN_NONE && a.size >= 8 && a.iv < 0 {
			return nil, fail("read attribute", f.path, obj, name, fmt.Errorf("%w: unsigned value above int64 range", ErrType))
		}
		return int64(a.iv), nil
	case C.H5T_FLOAT:
		return float64(a.fv), nil
	case C.H5T_STRING:
		if a.sv == nil {
			return "", nil
		}
		return C.GoString(a.sv), nil
	}
	return nil, fail("read attribute", f.path, obj, name, fmt.Errorf("%w: %s attribute", ErrType, className(int(a.tclass))))
}

func className(c int) string {
	switch c {
	case C.H5T_INTEGER:
		return "integer"
	case C.H5T_FLOAT:
		return "float"
	case C.H5T_STRING:
		return "string"
	case C.H5T_BITFIELD:
		return "bitfield"
	case C.H5T_OPAQUE:
		return "opaque"
	case C.H5T_COMPOUND:
		return "compound"
	case C.H5T_REFERENCE:
		return "reference"
	case C.H5T_ENUM:
		return "enum"
	case C.H5T_VLEN:
		return "vlen"
	case C.H5T_ARRAY:
		return "array"
	case C.H5T_TIME:
		return "time"
	}
	return fmt.Sprintf("class %d", c)
}

func typeOf(class, size, sign int, isBool bool) Type {
	if isBool {
		return Bool
	}
	if class == C.H5T_INTEGER {
		signed := sign == C.H5T_SGN_2
		switch size {
		case 1:
			return map[bool]Type{true: Int8, false: Uint8}[signed]
		case 2:
			return map[bool]Type{true: Int16, false: Uint16}[signed]
		case 4:
			return map[bool]Type{true: Int32, false: Uint32}[signed]
		case 8:
			return map[bool]Type{true: Int64, false: Uint64}[signed]
		}
	}
	switch {
	case class == C.H5T_FLOAT && size == 4:
		return Float32
	case class == C.H5T_FLOAT && size == 8:
		return Float64
	}
	return Invalid
}

// filterName names an HDF5 filter a file uses: its name in the file, or
// the registered name of the well-known ids h5py writes.
func filterName(id int, name string) string {
	known := map[int]string{32000: "lzf", 32001: "blosc", 32004: "lz4", 32008: "bitshuffle", 32015: "zstd", 307: "bzip2", 4: "szip"}
	if k, ok := known[id]; ok {
		return k
	}
	if name != "" {
		return name
	}
	return "unknown"
}
