// Package rendezvous is the bootstrap key-value store through which the
// ranks of a job exchange their listen addresses before any transport is
// up. Rank 0 serves the store (Serve); every rank, rank 0 included, joins
// the world and reads the others' entries through a Client. When the
// launcher gives no master address, or the ranks share no secret, rank 0
// publishes the server URL (and a token it made) in a file (PublishFile)
// and the other ranks wait for it (WaitFile).
//
// It is pure Go over net/http from the standard library: plain HTTP/1.1,
// POST to join, PUT to store and a long-polling GET that blocks until the
// key exists, in rounds of a few seconds that the client repeats.
//
// # The world
//
// A server is started with the world size rank 0 believes in. Each rank
// joins with a Member: its rank, the size it believes in, where it read
// them (WEFT_RANK, WEFT_WORLD_SIZE, ...), which process it is, and an
// Info of at most MaxInfoLen bytes (its address), which the others read
// under RankKey(rank). A join answers with the session nonce, a random
// string the server made: only ranks that joined learn it. A rank that is
// already taken, or a size other than rank 0's, is refused with an error
// that wraps ErrConflict and names the variable, both values and both
// processes; while the world is still forming it also fails every Get and
// Join of the others at once, so no rank waits for a world that cannot
// form. Once every rank has joined, such a latecomer alone is refused.
//
// # Keys, values, limits
//
// Keys are non-empty UTF-8 strings of at most MaxKeyLen bytes without
// control characters; values of Put are at most MaxValueLen bytes, and may
// be empty. Keys are written once: a Put of a key that holds another value
// is refused (ErrConflict), one of the same value succeeds, and the keys
// under RankKeyPrefix are set by joins alone. Nothing is deleted while the
// server runs. Puts may store at most Limits.MaxKeys keys and
// Limits.MaxBytes bytes (DefaultLimits: 1024 keys, 4 MiB), and Gets may
// wait for at most MaxKeys keys plus the world size; beyond, the server
// answers 507 (413 for a value too large), which the client reports with
// the limit. Joins hold at most the world size times a few KiB.
//
// # Tokens and files
//
// Every request carries the job token; the server refuses (403) and logs
// any other, so that a stray rank of another job that reuses the same host
// and port fails at once instead of joining the wrong job, and a stranger
// without the token learns and changes nothing. A server given a token
// never accepts an empty one; the client's error wraps ErrRefused. The
// token is sent in clear text: it keeps jobs and strangers apart, it does
// not protect against a hostile network.
//
// Files are written with mode 0600, and WaitFile reads only files that
// this user owns: a file planted by another user is not trusted. A file
// holds a fingerprint of the token (the first 16 hex digits of its
// SHA-256), and, when rank 0 made the token, the token itself: then only
// this user can read it. PrivateDir is a directory of this user alone
// under the temporary directory, for such files on one host.
//
// # Errors
//
// Errors start with "rendezvous: ", name the operation, key (or rank) and
// server URL, and wrap the context's error with %w when the context ended,
// so errors.Is(err, context.DeadlineExceeded) works; a Get that gives up
// says how long it waited and, when the server could not be reached, the
// last connection error. A server that closes answers waiting Gets with an
// error that wraps ErrClosed.
//
// # Concurrency
//
// Server and Client methods may be called from any number of goroutines.
// Put, Get and Join block until done or until their context ends. Close
// wakes every waiting Get and returns once every goroutine of the server
// has ended. Clients share one HTTP transport that ignores proxy settings.
//
// # Environment
//
// The package reads no environment variables but TMPDIR (PrivateDir,
// through os.TempDir): the caller passes the listener, URL, token, world
// and file path (see package launch for the master address).
package rendezvous
