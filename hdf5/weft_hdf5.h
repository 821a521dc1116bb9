// C side of package hdf5: one function per operation of the binding. Each
// opens what it needs (dataset, attribute, property lists), makes its
// libhdf5 calls, closes what it opened, and returns a negative value on
// failure with the failing call's error stack kept across the clean-up,
// so that Go reads it (weft_h5_errstack) on the same thread. Every
// symbol starts with weft_h5_.
#ifndef WEFT_HDF5_H
#define WEFT_HDF5_H

#include <stddef.h>
#include <hdf5.h>

// Element type codes, numbered as Go's Type (Int32 .. Float64).
enum { WEFT_H5_INT32 = 1, WEFT_H5_INT64, WEFT_H5_UINT8, WEFT_H5_FLOAT32, WEFT_H5_FLOAT64 };
// Bool (Go's Type 11): h5py's boolean, read in the file's own enum type.
enum { WEFT_H5_BOOL = 11 };
// Attribute kinds weft_h5_awrite writes.
enum { WEFT_H5_ATTR_INT64 = 1, WEFT_H5_ATTR_FLOAT64, WEFT_H5_ATTR_STRING };

// The error stack, copied out entry by entry: filled on the thread whose
// call failed, before any other HDF5 call clears it.
#define WEFT_H5_MAXERR 64
typedef struct {
	char maj[96], min[96], fn[64], desc[192];
} weft_h5_errent;
typedef struct {
	int n;
	weft_h5_errent e[WEFT_H5_MAXERR];
} weft_h5_estack;

// Per-thread set-up and the error stack. weft_h5_begin silences HDF5's
// automatic error printing on the calling thread (once) and clears its
// stack; weft_h5_errstack copies the stack out and clears it.
void weft_h5_begin(void);
void weft_h5_errstack(weft_h5_estack *out);

// The library.
int weft_h5_threadsafe(void);
void weft_h5_version(unsigned *maj, unsigned *min, unsigned *rel);
int weft_h5_deflate_avail(void);

// Files. Create truncates; open is read-only unless rw.
hid_t weft_h5_fcreate(const char *name);
hid_t weft_h5_fopen(const char *name, int rw);
herr_t weft_h5_fclose(hid_t f);
herr_t weft_h5_fflush(hid_t f);

// Links and groups. weft_h5_exists: 1 when every link along path exists,
// 0 when one does not, < 0 on failure. weft_h5_objtype: 1 group, 2
// dataset, 3 other. weft_h5_members and weft_h5_attr_names return the
// names, in name order, NUL-separated in one malloc'd buffer (*out, to
// free) of *outlen bytes.
herr_t weft_h5_gcreate(hid_t f, const char *path);
int weft_h5_exists(hid_t f, const char *path);
int weft_h5_objtype(hid_t f, const char *path);
herr_t weft_h5_ldelete(hid_t f, const char *path);
herr_t weft_h5_members(hid_t f, const char *path, char **out, size_t *outlen);
herr_t weft_h5_attr_names(hid_t f, const char *path, char **out, size_t *outlen);

// Datasets. weft_h5_dcreate makes a 1-D (rank 1) or 2-D dataset of a
// WEFT_H5_ type; chunkrows 0 means contiguous, level > 0 adds shuffle +
// deflate (chunked only). weft_h5_rows reads (write == 0) or writes rows
// [start, start+count) of cols columns from or into buf.
// weft_h5_write_chunk stores one chunk, already through the dataset's
// filters, at row (a multiple of the chunk rows).
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
} weft_h5_dinfo;

herr_t weft_h5_dcreate(hid_t f, const char *path, int typ, int rank,
		hsize_t rows, hsize_t cols, hsize_t chunkrows, int level);
herr_t weft_h5_dinfo_get(hid_t f, const char *path, weft_h5_dinfo *out);
herr_t weft_h5_rows(hid_t f, const char *path, int typ, int write,
		hsize_t start, hsize_t count, hsize_t cols, void *buf);
herr_t weft_h5_write_chunk(hid_t f, const char *path, hsize_t row, const void *buf, size_t n);

// Attributes: scalar int64, float64 or string (variable-length UTF-8, as
// h5py writes str). weft_h5_awrite replaces an attribute of that name.
// weft_h5_aread reads a scalar of integer, float or string class (sv is
// malloc'd, to free); for arrays and other classes it fills tclass and
// npoints only.
typedef struct {
	int tclass, size, sign, vlen, isbool;
	long long npoints;
	long long iv;
	double fv;
	char *sv;
} weft_h5_aval;

herr_t weft_h5_awrite(hid_t f, const char *obj, const char *name, int kind,
		long long iv, double fv, const char *sv);
herr_t weft_h5_adelete(hid_t f, const char *obj, const char *name);
herr_t weft_h5_aread(hid_t f, const char *obj, const char *name, weft_h5_aval *out);

#endif
