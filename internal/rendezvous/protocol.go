package rendezvous

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits on what the store holds.
const (
	MaxKeyLen   = 256     // bytes in a key
	MaxValueLen = 1 << 20 // bytes in a value
)

// ErrClosed is wrapped by the error of a Get or Put that the server
// refused because it is closing: the job is shutting down, and retrying
// will not help.
var ErrClosed = errors.New("rendezvous server closed")

// The wire protocol, all plain HTTP/1.1:
//
//	PUT /v1/kv?key=K          body: the value      -> 204
//	GET /v1/kv?key=K&wait=D   (D a Go duration)    -> 200 with the value,
//	                                                  404 if K is still unset after D,
//	                                                  503 if the server closes meanwhile
//
// Every request carries the job token in tokenHeader (403 otherwise); every
// response from a Weft server carries serverHeader, so a client can tell a
// Weft server's 404 from another program's.
const (
	kvPath       = "/v1/kv"
	tokenHeader  = "Weft-Job-Token"
	serverHeader = "Weft-Rendezvous"
	serverMark   = "1"
	maxWait      = 10 * time.Second // longest long-poll round the server grants
)

// CheckKey reports whether key is valid: non-empty, at most MaxKeyLen bytes,
// valid UTF-8 without control characters. The error names the key.
func CheckKey(key string) error {
	switch {
	case key == "":
		return errors.New("rendezvous: invalid key \"\": empty")
	case len(key) > MaxKeyLen:
		return fmt.Errorf("rendezvous: invalid key %.40q...: %d bytes, more than %d", key, len(key), MaxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("rendezvous: invalid key %q: not valid UTF-8", key)
	}
	for _, r := range key {
		if unicode.IsControl(r) {
			return fmt.Errorf("rendezvous: invalid key %q: contains control character %U", key, r)
		}
	}
	return nil
}

// checkValue reports whether a value fits MaxValueLen.
func checkValue(key string, n int) error {
	if n > MaxValueLen {
		return fmt.Errorf("rendezvous: value for key %q is %d bytes, more than the %d-byte limit", key, n, MaxValueLen)
	}
	return nil
}

// Fingerprint returns the first 16 hex digits of the SHA-256 of token: it
// tells jobs apart in files and logs without revealing the token.
func Fingerprint(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:8])
}
