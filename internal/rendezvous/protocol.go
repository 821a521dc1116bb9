package rendezvous

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits on what one request may carry.
const (
	MaxKeyLen    = 256      // bytes in a key
	MaxValueLen  = 64 << 10 // bytes in a value stored by Put
	MaxInfoLen   = 1 << 10  // bytes of a Member's Info
	maxMemberLen = 4 << 10  // bytes of an encoded Member
	maxTextLen   = 256      // bytes of a Member's RankVar, SizeVar, Who
	maxWorld     = 1 << 31  // bound on a world size
)

// Limits bound what Put may store, so that clients cannot make the server
// hold more than a few megabytes. Joins are bounded by the world size and
// MaxInfoLen, and do not count against them.
type Limits struct {
	MaxKeys  int // keys stored by Put; also bounds the keys Gets may wait for
	MaxBytes int // bytes of the keys and values stored by Put
}

// DefaultLimits are the limits of a server whose Config leaves them zero.
var DefaultLimits = Limits{MaxKeys: 1024, MaxBytes: 4 << 20}

// ErrClosed is wrapped by the error of a Get or Put that the server
// refused because it is closing: the job is shutting down, and retrying
// will not help.
var ErrClosed = errors.New("rendezvous server closed")

// ErrConflict is wrapped by the error of a call that the server refused
// because it contradicts what the store holds: a rank already taken, a
// world size other than rank 0's, a key already set to another value. Once
// the ranks of a world that is still forming contradict each other, every
// Get and Join of that world fails with it, naming the contradiction.
var ErrConflict = errors.New("rendezvous: conflict")

// ErrRefused is wrapped by the error of a call that the server refused
// because it came without the job token the server was given.
var ErrRefused = errors.New("rendezvous: refused")

// The wire protocol, all plain HTTP/1.1:
//
//	PUT  /v1/kv?key=K          body: the value  -> 204 (stored, or K already holds this value)
//	                                               409 K holds another value (keys are written once)
//	                                               403 K is a rank key (only a Join sets one)
//	                                               413 value too large, 507 store full
//	GET  /v1/kv?key=K&wait=D   (D a Go duration) -> 200 with the value,
//	                                               404 if K is still unset after D,
//	                                               409 if the world failed to form,
//	                                               503 if the server closes meanwhile
//	POST /v1/join              body: a Member in JSON -> 200 with the session nonce,
//	                                               409 the rank is taken or the sizes differ
//
// Every request carries the job token in tokenHeader (403 otherwise); every
// response from a Weft server carries serverHeader, so a client can tell a
// Weft server's 404 from another program's.
const (
	kvPath       = "/v1/kv"
	joinPath     = "/v1/join"
	tokenHeader  = "Weft-Job-Token"
	serverHeader = "Weft-Rendezvous"
	serverMark   = "1"
	maxWait      = 10 * time.Second // longest long-poll round the server grants
)

// RankKeyPrefix starts the keys a Join sets: RankKey(r) holds the Info of
// rank r. Put refuses them.
const RankKeyPrefix = "rank/"

// RankKey is the key under which the Info of rank r is found.
func RankKey(r int) string { return RankKeyPrefix + strconv.Itoa(r) }

// Member is what a rank says of itself when it joins the world.
type Member struct {
	Rank int `json:"rank"`
	Size int `json:"size"` // the world size this rank believes in
	// RankVar and SizeVar name where the rank learned Rank and Size
	// ("WEFT_RANK", "OMPI_COMM_WORLD_SIZE"), and Who says which process it
	// is ("pid 4242 on node07"): the server's refusals quote them.
	RankVar string `json:"rank_var"`
	SizeVar string `json:"size_var"`
	Who     string `json:"who"`
	// Info is what the other ranks read under RankKey(Rank): at most
	// MaxInfoLen bytes.
	Info []byte `json:"info"`
}

// check reports what is wrong with m, if anything.
func (m *Member) check() error {
	switch {
	case m.Size < 1 || m.Size >= maxWorld:
		return fmt.Errorf("world size %d out of range", m.Size)
	case m.Rank < 0 || m.Rank >= m.Size:
		return fmt.Errorf("rank %d not in a world of %d", m.Rank, m.Size)
	case len(m.Info) > MaxInfoLen:
		return fmt.Errorf("info of %d bytes, more than %d", len(m.Info), MaxInfoLen)
	}
	for _, s := range []string{m.RankVar, m.SizeVar, m.Who} {
		if len(s) > maxTextLen || !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) {
			return fmt.Errorf("description %.40q is not at most %d bytes of printable UTF-8", s, maxTextLen)
		}
	}
	return nil
}

// same reports whether m and o are the same rank's join: a client that
// retries a join whose answer it lost sends the same Member again.
func (m *Member) same(o *Member) bool {
	return m.Rank == o.Rank && m.Size == o.Size && m.RankVar == o.RankVar && m.SizeVar == o.SizeVar &&
		m.Who == o.Who && bytes.Equal(m.Info, o.Info)
}

// decodeMember decodes the body of a join, refusing unknown fields,
// trailing bytes and every value Member.check refuses.
func decodeMember(body []byte) (*Member, error) {
	if len(body) > maxMemberLen {
		return nil, fmt.Errorf("member of %d bytes, more than %d", len(body), maxMemberLen)
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	m := new(Member)
	if err := d.Decode(m); err != nil {
		return nil, fmt.Errorf("malformed member: %v", err)
	}
	if d.More() {
		return nil, errors.New("malformed member: data after the object")
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	return m, nil
}

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
