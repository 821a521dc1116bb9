package rendezvous

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// member is rank r of a world of size, as process pid on host h<r>.
func member(r, size, pid int) Member {
	return Member{Rank: r, Size: size, RankVar: "WEFT_RANK", SizeVar: "WEFT_WORLD_SIZE",
		Who: fmt.Sprintf("pid %d on h%d", pid, r), Info: []byte(fmt.Sprintf("addr-%d-%d", r, pid))}
}

func TestJoin(t *testing.T) {
	s := startServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nonces := make([]string, testSize)
	var wg sync.WaitGroup
	for r := range testSize {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := NewClient(s.URL(), testToken)
			time.Sleep(time.Duration(r) * 10 * time.Millisecond) // some Gets wait
			n, err := c.Join(ctx, member(r, testSize, 100+r))
			if err != nil {
				t.Error(err)
				return
			}
			nonces[r] = n
			for p := range testSize {
				v, err := c.Get(ctx, RankKey(p))
				if want := fmt.Sprintf("addr-%d-%d", p, 100+p); err != nil || string(v) != want {
					t.Errorf("rank %d: Get(%s) = %q, %v; want %q", r, RankKey(p), v, err, want)
				}
			}
		}()
	}
	wg.Wait()
	if len(nonces[0]) != 32 || nonces[1] != nonces[0] || nonces[2] != nonces[0] {
		t.Errorf("nonces %q: want one 32-digit nonce for every rank", nonces)
	}
	// A join repeated with the same Member (its answer lost) succeeds.
	if n, err := NewClient(s.URL(), testToken).Join(ctx, member(1, testSize, 101)); err != nil || n != nonces[0] {
		t.Errorf("repeated join = %q, %v", n, err)
	}
}

// TestJoinConflictFailsTheWorld: while the world forms, a rank that
// believes in another world size, or claims a rank already taken, fails
// at once, and so does every other rank, waiting or not, with an error
// that names the variable and both values.
func TestJoinConflictFailsTheWorld(t *testing.T) {
	for _, tc := range []struct {
		name string
		bad  Member
		want string
	}{
		{"size", member(1, 2, 200),
			"the job cannot start: ranks disagree on the world size: WEFT_WORLD_SIZE=2 at rank 1 (pid 200 on h1), WEFT_WORLD_SIZE=3 at rank 0 (pid 1 on h0)"},
		{"rank", member(0, testSize, 201),
			"the job cannot start: WEFT_RANK=0 is taken: pid 100 on h0 joined as rank 0 first, then pid 201 on h0 claimed it too"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c := NewClient(s.URL(), testToken)
			if _, err := c.Join(ctx, member(0, testSize, 100)); err != nil {
				t.Fatal(err)
			}
			waiting := make(chan error, 1)
			go func() {
				_, err := c.Get(ctx, RankKey(2))
				waiting <- err
			}()
			waitFor(t, "the Get to wait", func() bool { return s.waiting(RankKey(2)) == 1 })

			start := time.Now()
			_, err := c.Join(ctx, tc.bad)
			if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("the bad join: %v\nwant ErrConflict with %q", err, tc.want)
			}
			if err := <-waiting; !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("the waiting Get: %v", err)
			}
			if el := time.Since(start); el > 5*time.Second {
				t.Errorf("the ranks learned of the conflict after %v", el)
			}
			// Every later call of the world fails the same way.
			if _, err := c.Join(ctx, member(2, testSize, 102)); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("a later join: %v", err)
			}
			if _, err := c.Get(ctx, RankKey(0)); !errors.Is(err, ErrConflict) {
				t.Errorf("a later Get: %v", err)
			}
		})
	}
}

// TestFailedWorldOutlivesClose: rank 0 closes its store as soon as it
// learns the world cannot form; a rank between its join and its next Get
// must still learn why, not find the store closed (it once reported
// "rank 1 never joined: rendezvous server closed").
func TestFailedWorldOutlivesClose(t *testing.T) {
	s := startServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := NewClient(s.URL(), testToken)
	if _, err := c.Join(ctx, member(0, testSize, 100)); err != nil {
		t.Fatal(err)
	}
	const want = "the job cannot start: WEFT_RANK=0 is taken"
	if _, err := c.Join(ctx, member(0, testSize, 201)); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), want) {
		t.Fatalf("the bad join: %v", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	time.Sleep(failureLinger / 4) // the Close has begun
	for _, key := range []string{RankKey(0), RankKey(2)} {
		if _, err := c.Get(ctx, key); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), want) {
			t.Errorf("Get(%s) while the store closes: %v\nwant ErrConflict with %q", key, err, want)
		}
	}
	if err := <-closed; err != nil {
		t.Error(err)
	}
}

// TestLateJoinAfterTheWorldFormed: once every rank has joined, a process
// that claims a taken rank or another size is refused, naming the rank,
// and the world it would have spoiled carries on.
func TestLateJoinAfterTheWorldFormed(t *testing.T) {
	s := startServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := NewClient(s.URL(), testToken)
	for r := range testSize {
		if _, err := c.Join(ctx, member(r, testSize, 100+r)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.Join(ctx, member(1, testSize, 999))
	want := "WEFT_RANK=1 is taken: pid 101 on h1 joined as rank 1 first, then pid 999 on h1 claimed it too (all 3 ranks of the job have joined: it runs without this process)"
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), want) {
		t.Errorf("late join of a taken rank: %v\nwant %q", err, want)
	}
	if _, err := c.Join(ctx, member(1, 5, 998)); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "WEFT_WORLD_SIZE=5 at rank 1") {
		t.Errorf("late join with another size: %v", err)
	}
	if v, err := c.Get(ctx, RankKey(1)); err != nil || string(v) != "addr-1-101" {
		t.Errorf("Get after the late joins = %q, %v; want the first rank 1's", v, err)
	}
}

// TestKeysAreWrittenOnce: a stranger with the token cannot replace a
// value, and no one can Put a rank's key.
func TestKeysAreWrittenOnce(t *testing.T) {
	s := startServer(t, nil)
	c := NewClient(s.URL(), testToken)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Put(ctx, "k", []byte("first")); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(ctx, "k", []byte("first")); err != nil {
		t.Errorf("repeating a Put: %v", err)
	}
	err := c.Put(ctx, "k", []byte("second"))
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `key "k" already holds another value (keys are written once)`) {
		t.Errorf("overwriting Put: %v", err)
	}
	if v, _ := c.Get(ctx, "k"); string(v) != "first" {
		t.Errorf("Get after the refused overwrite = %q", v)
	}
	err = c.Put(ctx, RankKey(1), []byte("10.6.6.6:1"))
	if err == nil || !strings.Contains(err.Error(), `403 Forbidden: rendezvous: key "rank/1" is a rank's: only its join sets it`) {
		t.Errorf("Put of a rank key: %v", err)
	}
}

// TestEmptyTokenRefused: a server given a token refuses requests with an
// empty one, or none, whatever they ask.
func TestEmptyTokenRefused(t *testing.T) {
	s := startServer(t, nil)
	c := NewClient(s.URL(), "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Put(ctx, "k", []byte("v")); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("Put with an empty token: %v", err)
	}
	if _, err := c.Get(ctx, "k"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("Get with an empty token: %v", err)
	}
	if _, err := c.Join(ctx, member(1, testSize, 7)); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "403") {
		t.Errorf("Join with an empty token: %v", err)
	}
	req, _ := http.NewRequest(http.MethodPost, s.URL()+joinPath, strings.NewReader("{}"))
	if code := do(t, req); code != http.StatusForbidden {
		t.Errorf("join without a token header: status %d", code)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.kv) != 0 || len(s.members) != 0 {
		t.Errorf("refused requests stored %d keys and %d members", len(s.kv), len(s.members))
	}
}

// TestFloodIsRefused sends what once took rank 0 from 27 MB to 551 MB (400
// PUTs of 1 MiB), then values of the largest size under ever new keys: the
// first are refused whole, the others once the store is full, with a
// status the client turns into an error that names the limit, and the
// memory the server holds stays within its limits.
func TestFloodIsRefused(t *testing.T) {
	lim := Limits{MaxKeys: 100, MaxBytes: 1 << 20}
	s := Serve(listen(t), Config{Token: testToken, Limits: lim})
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()

	mib := bytes.Repeat([]byte{1}, 1<<20)
	for i := range 400 {
		req, _ := http.NewRequest(http.MethodPut, fmt.Sprintf("%s/v1/kv?key=flood%d", s.URL(), i), bytes.NewReader(mib))
		req.Header.Set(tokenHeader, testToken)
		if code := do(t, req); code != http.StatusRequestEntityTooLarge {
			t.Fatalf("PUT %d of 1 MiB: status %d, want 413", i, code)
		}
	}
	c := NewClient(s.URL(), testToken)
	val := mib[:MaxValueLen]
	stored, full := 0, 0
	for i := range 400 {
		err := c.Put(ctx, fmt.Sprintf("big%d", i), val)
		switch {
		case err == nil:
			stored++
		case strings.Contains(err.Error(), "507 Insufficient Storage: rendezvous: store full: key \"big"+fmt.Sprint(i)+"\" and its value would make"):
			full++
		default:
			t.Fatalf("Put %d: %v", i, err)
		}
	}
	if want := lim.MaxBytes / (MaxValueLen + 5); stored != want || full != 400-want {
		t.Errorf("%d Puts stored, %d refused as full; want %d and %d", stored, full, want, 400-want)
	}
	// Small values under many keys hit the key limit.
	var err error
	for i := 0; err == nil && i < 2*lim.MaxKeys; i++ {
		err = c.Put(ctx, fmt.Sprint("small", i), []byte{1})
	}
	if err == nil || !strings.Contains(err.Error(), "store full: it holds 100 keys, the limit") {
		t.Errorf("Puts beyond the key limit: %v", err)
	}
	s.mu.Lock()
	keys, size := s.putKeys, s.putSize
	s.mu.Unlock()
	if keys > lim.MaxKeys || size > lim.MaxBytes {
		t.Errorf("the store holds %d keys of %d bytes, over its limits %+v", keys, size, lim)
	}
	if grew := int64(heap()) - int64(before); grew > int64(lim.MaxBytes)+4<<20 {
		t.Errorf("the heap grew by %d bytes under the flood, limit %d", grew, lim.MaxBytes)
	}
}

// TestGetsWaitForBoundedKeys: Gets for ever new missing keys cannot make
// the server hold an unbounded set of waiters.
func TestGetsWaitForBoundedKeys(t *testing.T) {
	s := Serve(listen(t), Config{Token: testToken, Limits: Limits{MaxKeys: 4}})
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := NewClient(s.URL(), testToken)
	errs := make(chan error, 4)
	for i := range 4 {
		go func() {
			_, err := c.Get(ctx, fmt.Sprint("missing", i))
			errs <- err
		}()
	}
	waitFor(t, "four waiting Gets", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.waiters) == 4
	})
	if _, err := c.Get(ctx, "one too many"); err == nil || !strings.Contains(err.Error(), "507 Insufficient Storage: rendezvous: store full: Gets wait for 4 keys, the limit") {
		t.Errorf("a fifth waited key: %v", err)
	}
	cancel()
	for range 4 {
		<-errs
	}
}
