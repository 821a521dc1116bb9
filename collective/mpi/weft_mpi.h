// C side of package mpi: thin shims over the MPI library, and the reduction
// kernels MPI does not have (16-bit floats; min and max with Weft's NaN and
// signed-zero rules). Every symbol starts with weft_.
//
// MPI handles are macros over library globals (MPI_COMM_WORLD, MPI_FLOAT)
// and their C types differ between implementations (MPI_Comm is a pointer in
// Open MPI, an int in MPICH), so Go never names a handle constant: it passes
// Weft's own type and operation numbers and the shims pick the handles.
// Every function returns an MPI error code (MPI_SUCCESS is 0) unless it
// says otherwise.
#ifndef WEFT_MPI_H
#define WEFT_MPI_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "weft_types.h" // WEFT_T_* and WEFT_OP_*

// Life cycle. weft_init initialises MPI with MPI_THREAD_MULTIPLE unless it
// already is (*own = 0 then) and reports the level granted; weft_setup
// creates the user-defined operations (after either) and, when own, sets
// MPI_ERRORS_RETURN on MPI_COMM_WORLD and MPI_COMM_SELF; weft_finalize
// frees the operations and, when own, finalises MPI.
int weft_initialized(int *flag);
int weft_finalized(int *flag);
int weft_init(int *provided, int *own);
// weft_keep_malloc makes glibc's malloc keep what it frees, before
// MPI_Init: mallopt's no mmap, no trim and one arena, each where its flag
// is set; 0 on success.
int weft_keep_malloc(int mmap_max, int trim, int arena_max);
// weft_malloc_maps says whether glibc serves a malloc of n bytes with a
// mapping of its own (the tests check weft_keep_malloc with it).
int weft_malloc_maps(size_t n);
int weft_query_thread(int *provided);
int weft_thread_multiple(void);
int weft_setup(int own);
int weft_finalize(int own);
void weft_library_version(char *buf, int *len);

// Communicators. dup and split set MPI_ERRORS_RETURN on the result; split
// takes a negative color for MPI_UNDEFINED and then sets *isnull.
MPI_Comm weft_comm_world(void);
int weft_comm_dup(MPI_Comm c, MPI_Comm *out);
int weft_comm_split(MPI_Comm c, int color, int key, MPI_Comm *out, int *isnull);
int weft_comm_free(MPI_Comm *c);
int weft_comm_info(MPI_Comm c, int *rank, int *size, int *tagub);
int weft_abort(MPI_Comm c, int code);
// weft_local_info: this rank's place among the ranks of c that share its
// node (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED).
int weft_local_info(MPI_Comm c, int *rank, int *size);
// weft_world_ranks: the rank in MPI_COMM_WORLD of each of the n ranks of c
// (MPI_Group_translate_ranks; local).
int weft_world_ranks(MPI_Comm c, int n, int *out);

// weft_comm_split_shared: the ranks of c on this node, ordered by key
// (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED). weft_comm_create_group: the
// communicator of the n ranks of c in members, in that order, made by them
// only (MPI_Group_incl, MPI_Comm_create_group with tag). Both set
// MPI_ERRORS_RETURN on the result.
int weft_comm_split_shared(MPI_Comm c, int key, MPI_Comm *out);
int weft_comm_create_group(MPI_Comm c, int n, const int *members, int tag, MPI_Comm *out);

// Errors: the text of an error code, and which Weft sentinel its class
// maps to (WEFT_KIND_*).
enum { WEFT_KIND_OTHER = 0, WEFT_KIND_INVALID = 1, WEFT_KIND_MISMATCH = 2 };
void weft_error_info(int code, char *buf, int *len, int *cls, int *kind);

// The signature packet (sig.go): what the first MPI call of every checked
// collective reduces, one packet a rank. h and nh (the call's hash and its
// negation) combine by MPI_MAX; when n > 0 the packet carries n elements
// of dt in data, which combine by op (an allreduce small enough). Every
// packet has the same size, whatever it carries.
enum { WEFT_PACKET_DATA = 96 };
typedef struct {
	int64_t h, nh;
	int32_t dt, op, n, pad;
	unsigned char data[WEFT_PACKET_DATA];
} weft_packet;
// weft_check is MPI_Allreduce in place of the packet *p over c.
int weft_check(weft_packet *p, MPI_Comm c);
// weft_packet_bytes is the size of an element of dt when a packet can
// carry data of (dt, op), else 0.
int weft_packet_bytes(int dt, int op);
// weft_packet_reduce combines in into inout as weft_check does, for tests.
void weft_packet_reduce(const weft_packet *in, weft_packet *inout);

// Collectives, blocking. inplace passes MPI_IN_PLACE as the send buffer
// (then the send arguments are ignored).
int weft_allreduce(const void *s, void *r, int n, int dt, int op, int inplace, MPI_Comm c);
int weft_bcast(void *b, int n, int dt, int root, MPI_Comm c);
int weft_reduce(const void *s, void *r, int n, int dt, int op, int root, int inplace, MPI_Comm c);
int weft_allgather(const void *s, void *r, int n, int dt, int inplace, MPI_Comm c);
int weft_allgatherv(const void *s, int n, void *r, const int *counts, const int *displs, int dt, int inplace, MPI_Comm c);
int weft_reduce_scatter_block(const void *s, void *r, int n, int dt, int op, MPI_Comm c);
int weft_reduce_scatter(const void *s, void *r, const int *counts, int dt, int op, MPI_Comm c);
int weft_alltoall(const void *s, void *r, int n, int dt, int inplace, MPI_Comm c);
int weft_alltoallv(const void *s, const int *scounts, const int *sdispls, void *r, const int *rcounts, const int *rdispls, int dt, int inplace, MPI_Comm c);
int weft_barrier(MPI_Comm c);

int weft_gather(const void *s, void *r, int n, int dt, int root, int inplace, MPI_Comm c);
int weft_gatherv(const void *s, int n, void *r, const int *counts, const int *displs, int dt, int root, int inplace, MPI_Comm c);
// weft_scatter and weft_scatterv: inplace passes MPI_IN_PLACE as the root's
// receive buffer.
int weft_scatter(const void *s, void *r, int n, int dt, int root, int inplace, MPI_Comm c);
int weft_scatterv(const void *s, const int *counts, const int *displs, void *r, int n, int dt, int root, int inplace, MPI_Comm c);
// weft_scan is MPI_Scan, or MPI_Exscan when exclusive.
int weft_scan(const void *s, void *r, int n, int dt, int op, int inplace, int exclusive, MPI_Comm c);

// A received or probed message: its source, tag and size in bytes (-1
// when MPI cannot say).
typedef struct {
	int source, tag, bytes;
	int cancelled; // weft_test: MPI_Test_cancelled
} weft_status;

// Point to point. A NULL req makes the blocking call, else the MPI_I*
// form, which stores its request in *req. A peer of -1 is MPI_ANY_SOURCE
// and a tag of -1 MPI_ANY_TAG. A blocking receive fills *st, also when it
// fails with MPI_ERR_TRUNCATE (the message matched; its source and tag).
// A vec that is not NULL, {count, blocklen, stride}, makes the buffer one
// MPI_Type_vector of dt (n is then ignored): committed for the call and
// freed once it is posted.
int weft_send(const void *b, int n, int dt, const int *vec, int peer, int tag, MPI_Comm c, MPI_Request *req);
int weft_recv(void *b, int n, int dt, const int *vec, int peer, int tag, MPI_Comm c, MPI_Request *req, weft_status *st);
// weft_recv_status is the blocking weft_recv, its status returned with
// its error code, so that the caller passes no pointer to a status.
typedef struct {
	int rc;
	weft_status st;
} weft_received;
weft_received weft_recv_status(void *b, int n, int dt, const int *vec, int peer, int tag, MPI_Comm c);
// weft_improbe is MPI_Improbe: *found, and *msg and *st when found.
// weft_imrecv is MPI_Imrecv of *msg into b (n of dt, or vec as above).
int weft_improbe(int peer, int tag, MPI_Comm c, int *found, MPI_Message *msg, weft_status *st);
int weft_imrecv(void *b, int n, int dt, const int *vec, MPI_Message *msg, MPI_Request *req);
// weft_cancel_post is MPI_Cancel of the posted receive *req, without
// waiting: weft_test completes it, and its status says whether it was
// cancelled.
int weft_cancel_post(MPI_Request *req);
// weft_test is MPI_Test, filling *st (if not NULL) when done. On an error,
// *done says whether MPI has released the request (and *st is filled for
// MPI_ERR_TRUNCATE).
int weft_test(MPI_Request *req, int *done, weft_status *st);
// weft_cancel withdraws the posted receive *req: MPI_Cancel, then MPI_Wait
// for the cancellation (or for the message, if one matched first: the
// transfer then completes). *cancelled says which; when not cancelled *st
// is the message's, as weft_test fills it.
int weft_cancel(MPI_Request *req, int *cancelled, weft_status *st);
// weft_request_null reports whether MPI has released *req (not an error
// code).
int weft_request_null(const MPI_Request *req);
// weft_iprobe is MPI_Iprobe: *found, and *st when found.
int weft_iprobe(int peer, int tag, MPI_Comm c, int *found, weft_status *st);

// The watchdog's questions and answers (watchdog.go), on a communicator of
// their own. weft_watch_poll receives a question that has arrived, if any
// (*found; its two int64 in q, its sender in *src). weft_watch_answer sends
// the n bytes of b to dest without waiting (from a copy MPI keeps). weft_watch_ask
// sends the question q to each of the n ranks and waits up to wait seconds
// for their answers, at most anslen bytes each, into ans (lens[i] is the
// length of rank i's, -1 for none); receives still unanswered stay posted,
// so ans must be memory that is never freed (the job is about to end).
int weft_watch_poll(MPI_Comm c, int64_t *q, int *src, int *found);
int weft_watch_answer(MPI_Comm c, int dest, const char *b, int n);
int weft_watch_ask(MPI_Comm c, int n, const int *ranks, const int64_t *q, char *ans, int anslen, int *lens, double wait);

// weft_yield gives the CPU to another process (sched_yield).
void weft_yield(void);

// weft_kernel computes inout[i] = in[i] op inout[i] with the kernels the
// user-defined operations run, for tests against Weft's Go kernels. It
// returns 0, or -1 when (dt, op) has no kernel here (MPI's own applies).
int weft_kernel(int dt, int op, const void *in, void *inout, int n);

// weft_user_op creates, on its first call for k, the MPI_Op of Go's
// user-defined reduction WEFT_OP_USER + k (0 <= k < 128), commutative or
// not; reductions with that number use it from then on.
int weft_user_op(int k, int commute);

#endif
