// Package rendezvous is the bootstrap key-value store through which the
// ranks of a job exchange their listen addresses before any transport is
// up. Rank 0 serves the store (Serve); every rank, rank 0 included, puts
// and gets keys through a Client. When the launcher gives no master
// address, rank 0 publishes the server URL in a file on a shared file
// system (PublishFile) and the other ranks wait for it (WaitFile).
//
// It is pure Go over net/http from the standard library: plain HTTP/1.1,
// PUT to store and a long-polling GET that blocks until the key exists,
// in rounds of a few seconds that the client repeats.
//
// # Keys, values, tokens
//
// Keys are non-empty UTF-8 strings of at most MaxKeyLen bytes without
// control characters; values are at most MaxValueLen bytes, and may be
// empty. A Put replaces the value; nothing is ever deleted while the
// server runs, and all of it is held in memory.
//
// Every request carries the job token; the server refuses (403) and logs
// any other, so that a stray rank of another job that reuses the same host
// and port fails at once instead of joining the wrong job. The token is sent
// in clear text: it keeps jobs apart, it does not protect against a hostile
// network. Files hold only a fingerprint of it (the first 16 hex digits of
// its SHA-256).
//
// # Errors
//
// Errors start with "rendezvous: ", name the operation, key and server URL,
// and wrap the context's error with %w when the context ended, so
// errors.Is(err, context.DeadlineExceeded) works; a Get that gives up says
// how long it waited and, when the server could not be reached, the last
// connection error. A server that closes answers waiting Gets with an error
// that wraps ErrClosed.
//
// # Concurrency
//
// Server and Client methods may be called from any number of goroutines.
// Put and Get block until done or until their context ends. Close wakes
// every waiting Get and returns once every goroutine of the server has
// ended. Clients share one HTTP transport that ignores proxy settings.
//
// # Environment
//
// The package reads no environment variables: the caller passes the
// listener, URL, token and file path (see package launch for the master
// address).
package rendezvous
