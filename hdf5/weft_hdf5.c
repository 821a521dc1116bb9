//go:build cgo

// The C side of package hdf5 (declared in weft_hdf5.h). Failures keep
// their error stack across the clean-up calls (weft_h5_save and
// weft_h5_restore): every HDF5 call clears the stack on entry.

#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "weft_hdf5.h"

// weft_h5_is_bool reports whether t is h5py's boolean: an 8-bit enum whose
// two members are FALSE and TRUE.
static int weft_h5_is_bool(hid_t t) {
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
static __thread int weft_h5_quiet_done;
static void weft_h5_quiet(void) {
	if (!weft_h5_quiet_done) {
		H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
		weft_h5_quiet_done = 1;
	}
}

typedef struct { hid_t maj, min; char func[64], desc[192]; } weft_h5_rawent;
typedef struct { int n; weft_h5_rawent e[WEFT_H5_MAXERR]; } weft_h5_rawstack;

static herr_t weft_h5_walk_cb(unsigned n, const H5E_error2_t *err, void *data) {
	weft_h5_rawstack *s = data;
	if (s->n >= WEFT_H5_MAXERR) return 0;
	weft_h5_rawent *r = &s->e[s->n++];
	r->maj = err->maj_num;
	r->min = err->min_num;
	snprintf(r->func, sizeof r->func, "%s", err->func_name ? err->func_name : "");
	snprintf(r->desc, sizeof r->desc, "%s", err->desc ? err->desc : "");
	return 0;
}

void weft_h5_errstack(weft_h5_estack *out) {
	weft_h5_rawstack raw;
	raw.n = 0;
	H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, weft_h5_walk_cb, &raw);
	out->n = raw.n;
	for (int i = 0; i < raw.n; i++) {
		weft_h5_errent *e = &out->e[i];
		e->maj[0] = e->min[0] = 0;
		if (H5Eget_msg(raw.e[i].maj, NULL, e->maj, sizeof e->maj) < 0) e->maj[0] = 0;
		if (H5Eget_msg(raw.e[i].min, NULL, e->min, sizeof e->min) < 0) e->min[0] = 0;
		memcpy(e->fn, raw.e[i].func, sizeof e->fn);
		memcpy(e->desc, raw.e[i].desc, sizeof e->desc);
	}
	H5Eclear2(H5E_DEFAULT);
}

void weft_h5_begin(void) { weft_h5_quiet(); H5Eclear2(H5E_DEFAULT); }

// Every HDF5 call clears the error stack on entry, the clean-up calls
// after a failure included: keep a failure's stack across them.
static hid_t weft_h5_save(int failed) { return failed ? H5Eget_current_stack() : -1; }
static void weft_h5_restore(hid_t es) { if (es >= 0) H5Eset_current_stack(es); }

int weft_h5_threadsafe(void) {
	hbool_t ts = 0;
	if (H5is_library_threadsafe(&ts) < 0) return 0;
	return ts ? 1 : 0;
}

void weft_h5_version(unsigned *maj, unsigned *min, unsigned *rel) {
	H5get_libversion(maj, min, rel);
}

int weft_h5_deflate_avail(void) {
	unsigned cfg = 0;
	if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0) return 0;
	if (H5Zget_filter_info(H5Z_FILTER_DEFLATE, &cfg) < 0) return 0;
	return (cfg & H5Z_FILTER_CONFIG_ENCODE_ENABLED) && (cfg & H5Z_FILTER_CONFIG_DECODE_ENABLED);
}

static hid_t weft_h5_fapl(int newfile) {
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	if (fapl < 0) return fapl;
	// Lock when the file system can; work on ones (NFS, Lustre) that cannot.
	H5Pset_file_locking(fapl, 1, 1);
	// 1.8-format metadata: checksummed superblock and object headers, so
	// a damaged file reads as an error instead of as garbage.
	if (newfile && H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST) < 0) {
		hid_t es = weft_h5_save(1);
		H5Pclose(fapl);
		weft_h5_restore(es);
		return -1;
	}
	return fapl;
}

hid_t weft_h5_fcreate(const char *name) {
	hid_t fapl = weft_h5_fapl(1);
	if (fapl < 0) return fapl;
	hid_t f = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
	hid_t es = weft_h5_save(f < 0);
	H5Pclose(fapl);
	weft_h5_restore(es);
	return f;
}

hid_t weft_h5_fopen(const char *name, int rw) {
	hid_t fapl = weft_h5_fapl(0);
	if (fapl < 0) return fapl;
	hid_t f = H5Fopen(name, rw ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl);
	hid_t es = weft_h5_save(f < 0);
	H5Pclose(fapl);
	weft_h5_restore(es);
	return f;
}

herr_t weft_h5_fclose(hid_t f) { return H5Fclose(f); }

herr_t weft_h5_fflush(hid_t f) { return H5Fflush(f, H5F_SCOPE_LOCAL); }

static hid_t weft_h5_lcpl(void) {
	hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
	if (lcpl < 0) return lcpl;
	if (H5Pset_create_intermediate_group(lcpl, 1) < 0) {
		hid_t es = weft_h5_save(1);
		H5Pclose(lcpl);
		weft_h5_restore(es);
		return -1;
	}
	return lcpl;
}

herr_t weft_h5_gcreate(hid_t f, const char *path) {
	hid_t lcpl = weft_h5_lcpl();
	if (lcpl < 0) return -1;
	hid_t g = H5Gcreate2(f, path, lcpl, H5P_DEFAULT, H5P_DEFAULT);
	hid_t es = weft_h5_save(g < 0);
	H5Pclose(lcpl);
	weft_h5_restore(es);
	if (g < 0) return -1;
	return H5Gclose(g);
}

// weft_h5_exists reports whether every link along path exists (1), not (0),
// or fails (<0). The root always exists.
int weft_h5_exists(hid_t f, const char *path) {
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

// weft_h5_objtype: 1 group, 2 dataset, 3 other, <0 failure.
int weft_h5_objtype(hid_t f, const char *path) {
	hid_t o = H5Oopen(f, path, H5P_DEFAULT);
	if (o < 0) return -1;
	H5I_type_t t = H5Iget_type(o);
	hid_t es = weft_h5_save(t == H5I_BADID);
	H5Oclose(o);
	weft_h5_restore(es);
	if (t == H5I_BADID) return -1;
	if (t == H5I_GROUP) return 1;
	if (t == H5I_DATASET) return 2;
	return 3;
}

herr_t weft_h5_ldelete(hid_t f, const char *path) { return H5Ldelete(f, path, H5P_DEFAULT); }

// Names collected into one malloc'd buffer, NUL-separated.
typedef struct { char *buf; size_t len, cap; } weft_h5_names;

static int weft_h5_names_add(weft_h5_names *s, const char *name) {
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

static herr_t weft_h5_link_cb(hid_t g, const char *name, const H5L_info_t *info, void *data) {
	return weft_h5_names_add(data, name) < 0 ? -1 : 0;
}

static herr_t weft_h5_attr_cb(hid_t o, const char *name, const H5A_info_t *info, void *data) {
	return weft_h5_names_add(data, name) < 0 ? -1 : 0;
}

herr_t weft_h5_members(hid_t f, const char *path, char **out, size_t *outlen) {
	weft_h5_names s = {0, 0, 0};
	*out = NULL;
	*outlen = 0;
	hid_t g = H5Gopen2(f, path, H5P_DEFAULT);
	if (g < 0) return -1;
	hsize_t idx = 0;
	herr_t rc = H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, weft_h5_link_cb, &s);
	hid_t es = weft_h5_save(rc < 0);
	H5Gclose(g);
	weft_h5_restore(es);
	if (rc < 0) { free(s.buf); return -1; }
	*out = s.buf;
	*outlen = s.len;
	return 0;
}

herr_t weft_h5_attr_names(hid_t f, const char *path, char **out, size_t *outlen) {
	weft_h5_names s = {0, 0, 0};
	*out = NULL;
	*outlen = 0;
	hid_t o = H5Oopen(f, path, H5P_DEFAULT);
	if (o < 0) return -1;
	hsize_t idx = 0;
	herr_t rc = H5Aiterate2(o, H5_INDEX_NAME, H5_ITER_INC, &idx, weft_h5_attr_cb, &s);
	hid_t es = weft_h5_save(rc < 0);
	H5Oclose(o);
	weft_h5_restore(es);
	if (rc < 0) { free(s.buf); return -1; }
	*out = s.buf;
	*outlen = s.len;
	return 0;
}

static hid_t weft_h5_ftype(int t) {
	switch (t) {
	case WEFT_H5_INT32: return H5T_STD_I32LE;
	case WEFT_H5_INT64: return H5T_STD_I64LE;
	case WEFT_H5_UINT8: return H5T_STD_U8LE;
	case WEFT_H5_FLOAT32: return H5T_IEEE_F32LE;
	case WEFT_H5_FLOAT64: return H5T_IEEE_F64LE;
	}
	return -1;
}

static hid_t weft_h5_mtype(int t) {
	switch (t) {
	case WEFT_H5_INT32: return H5T_NATIVE_INT32;
	case WEFT_H5_INT64: return H5T_NATIVE_INT64;
	case WEFT_H5_UINT8: return H5T_NATIVE_UINT8;
	case WEFT_H5_FLOAT32: return H5T_NATIVE_FLOAT;
	case WEFT_H5_FLOAT64: return H5T_NATIVE_DOUBLE;
	}
	return -1;
}

// weft_h5_dcreate creates a 1-D (rank 1) or 2-D dataset. chunkrows 0 means
// contiguous; level > 0 adds shuffle + deflate (chunked only).
herr_t weft_h5_dcreate(hid_t f, const char *path, int typ, int rank,
		hsize_t rows, hsize_t cols, hsize_t chunkrows, int level) {
	hsize_t dims[2] = {rows, cols};
	hsize_t chunk[2] = {chunkrows, cols};
	hid_t ft = weft_h5_ftype(typ);
	if (ft < 0) return -1;
	hid_t space = H5Screate_simple(rank, dims, NULL);
	if (space < 0) return -1;
	hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
	hid_t lcpl = weft_h5_lcpl();
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
	hid_t es = weft_h5_save(rc < 0);
	if (lcpl >= 0) H5Pclose(lcpl);
	if (dcpl >= 0) H5Pclose(dcpl);
	H5Sclose(space);
	weft_h5_restore(es);
	return rc;
}

herr_t weft_h5_dinfo_get(hid_t f, const char *path, weft_h5_dinfo *out) {
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
	out->isbool = weft_h5_is_bool(t);
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
	hid_t es = weft_h5_save(rc < 0);
	if (p >= 0) H5Pclose(p);
	if (s >= 0) H5Sclose(s);
	if (t >= 0) H5Tclose(t);
	H5Dclose(d);
	weft_h5_restore(es);
	return rc;
}

// weft_h5_rows reads (write == 0) or writes rows [start, start+count) of a
// 1-D or 2-D dataset with cols columns from or into buf.
herr_t weft_h5_rows(hid_t f, const char *path, int typ, int write,
		hsize_t start, hsize_t count, hsize_t cols, void *buf) {
	hid_t mt = typ == WEFT_H5_BOOL ? 0 : weft_h5_mtype(typ);
	if (mt < 0) return -1;
	hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
	if (d < 0) return -1;
	herr_t rc = -1;
	hid_t fs = -1, ms = -1, bt = -1;
	if (typ == WEFT_H5_BOOL) {
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
	hid_t es = weft_h5_save(rc < 0);
	if (bt >= 0) H5Tclose(bt);
	if (ms >= 0) H5Sclose(ms);
	if (fs >= 0) H5Sclose(fs);
	H5Dclose(d);
	weft_h5_restore(es);
	return rc;
}

// weft_h5_write_chunk writes one chunk, already run through the dataset's
// filters, at row (a multiple of the chunk rows).
herr_t weft_h5_write_chunk(hid_t f, const char *path, hsize_t row, const void *buf, size_t n) {
	hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
	if (d < 0) return -1;
	hsize_t off[2] = {row, 0};
	herr_t rc = H5Dwrite_chunk(d, H5P_DEFAULT, 0, off, n, buf);
	hid_t es = weft_h5_save(rc < 0);
	H5Dclose(d);
	weft_h5_restore(es);
	return rc;
}

herr_t weft_h5_awrite(hid_t f, const char *obj, const char *name, int kind,
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
	case WEFT_H5_ATTR_INT64: ft = H5Tcopy(H5T_STD_I64LE); break;
	case WEFT_H5_ATTR_FLOAT64: ft = H5Tcopy(H5T_IEEE_F64LE); break;
	case WEFT_H5_ATTR_STRING:
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
	case WEFT_H5_ATTR_INT64: { int64_t v = iv; rc = H5Awrite(a, H5T_NATIVE_INT64, &v); break; }
	case WEFT_H5_ATTR_FLOAT64: rc = H5Awrite(a, H5T_NATIVE_DOUBLE, &fv); break;
	case WEFT_H5_ATTR_STRING: { const char *p[1] = {sv}; rc = H5Awrite(a, ft, p); break; }
	}
done:;
	hid_t es = weft_h5_save(rc < 0);
	if (a >= 0) H5Aclose(a);
	if (ft >= 0) H5Tclose(ft);
	if (sp >= 0) H5Sclose(sp);
	H5Oclose(o);
	weft_h5_restore(es);
	return rc;
}

herr_t weft_h5_adelete(hid_t f, const char *obj, const char *name) {
	return H5Adelete_by_name(f, obj, name, H5P_DEFAULT);
}

// weft_h5_aread reads a scalar (one-element) attribute of integer, float or
// string class. Arrays and other classes report their class and npoints
// only.
herr_t weft_h5_aread(hid_t f, const char *obj, const char *name, weft_h5_aval *out) {
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
	if (weft_h5_is_bool(t)) {
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
	hid_t es = weft_h5_save(rc < 0);
	if (mt >= 0) H5Tclose(mt);
	if (sp >= 0) H5Sclose(sp);
	if (t >= 0) H5Tclose(t);
	if (a >= 0) H5Aclose(a);
	H5Oclose(o);
	weft_h5_restore(es);
	return rc;
}
