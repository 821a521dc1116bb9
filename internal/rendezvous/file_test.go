package rendezvous

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPublishAndWaitFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rdzv")
	const url = "http://127.0.0.1:40123"
	if err := PublishFile(path, url, testToken, false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, tok, err := WaitFile(ctx, path, testToken)
	if err != nil || got != url || tok != testToken {
		t.Fatalf("WaitFile = %q, %q, %v; want %q", got, tok, err, url)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), testToken) {
		t.Errorf("the file reveals the token:\n%s", data)
	}
	if !strings.Contains(string(data), Fingerprint(testToken)) {
		t.Errorf("the file lacks the token fingerprint:\n%s", data)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("PublishFile left %d files in its directory, want 1", len(entries))
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the file's mode: %v, %v; want 0600", fi.Mode(), err)
	}
	// A reader that expects a token in the file does not take this one.
	short, cancel3 := context.WithTimeout(ctx, 80*time.Millisecond)
	defer cancel3()
	if _, _, err := WaitFile(short, path, ""); err == nil || !strings.Contains(err.Error(), "found only a file without a token") {
		t.Errorf("WaitFile for a carried token on a file without one: %v", err)
	}

	// Publishing again replaces the file.
	if err := PublishFile(path, "http://127.0.0.1:1", testToken, false); err != nil {
		t.Fatal(err)
	}
	if got, _, err := WaitFile(ctx, path, testToken); err != nil || got != "http://127.0.0.1:1" {
		t.Errorf("WaitFile after republish = %q, %v", got, err)
	}

	if err := RemoveFile(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("file still there after RemoveFile: %v", err)
	}
	if err := RemoveFile(path); err != nil {
		t.Errorf("RemoveFile of a missing file: %v", err)
	}
}

func TestWaitFileWaitsForPublish(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rdzv")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		time.Sleep(100 * time.Millisecond)
		if err := PublishFile(path, "http://127.0.0.1:2", testToken, false); err != nil {
			t.Error(err)
		}
	}()
	start := time.Now()
	got, _, err := WaitFile(ctx, path, testToken)
	if err != nil || got != "http://127.0.0.1:2" {
		t.Fatalf("WaitFile = %q, %v", got, err)
	}
	if el := time.Since(start); el < 90*time.Millisecond {
		t.Errorf("WaitFile returned after %v, before the file was published", el)
	}
}

func TestWaitFileSkipsStaleFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rdzv")
	if err := PublishFile(path, "http://127.0.0.1:3", "previous-job", false); err != nil {
		t.Fatal(err)
	}

	short, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	_, _, err := WaitFile(short, path, testToken)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitFile error %v, want one wrapping context.DeadlineExceeded", err)
	}
	for _, want := range []string{
		`rendezvous: wait for file "` + path + `": found only a stale file from another job`,
		"token fingerprint " + Fingerprint("previous-job") + ", want " + Fingerprint(testToken),
		"remove it if no job is using it",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("WaitFile error %q lacks %q", err, want)
		}
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("WaitFile removed the stale file: %v", err)
	}

	// Once this job's rank 0 publishes over it, WaitFile succeeds.
	ctx, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	go func() {
		time.Sleep(80 * time.Millisecond)
		if err := PublishFile(path, "http://127.0.0.1:4", testToken, false); err != nil {
			t.Error(err)
		}
	}()
	if got, _, err := WaitFile(ctx, path, testToken); err != nil || got != "http://127.0.0.1:4" {
		t.Errorf("WaitFile = %q, %v; want this job's URL", got, err)
	}
}

func TestWaitFileErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Millisecond)
	defer cancel()
	_, _, err := WaitFile(ctx, missing, testToken)
	if !errors.Is(err, context.DeadlineExceeded) ||
		!strings.Contains(err.Error(), `rendezvous: wait for file "`+missing+`": no file appeared within `) {
		t.Errorf("WaitFile on a missing file: %v", err)
	}

	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 80*time.Millisecond)
	defer cancel2()
	_, _, err = WaitFile(ctx2, garbage, testToken)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "found only an unusable file: not a rendezvous file") {
		t.Errorf("WaitFile on a foreign file: %v", err)
	}
	if b, _ := os.ReadFile(garbage); string(b) != "hello\n" {
		t.Errorf("WaitFile changed a foreign file")
	}
}

func TestPublishFileErrors(t *testing.T) {
	dir := t.TempDir()
	if err := PublishFile(filepath.Join(dir, "no", "such", "dir"), "http://127.0.0.1:1", testToken, false); err == nil {
		t.Error("PublishFile into a missing directory succeeded")
	}
	for _, url := range []string{"", "http://a\nurl x"} {
		if err := PublishFile(filepath.Join(dir, "f"), url, testToken, false); err == nil || !strings.Contains(err.Error(), "bad server URL") {
			t.Errorf("PublishFile with URL %q: %v", url, err)
		}
	}
	for _, tok := range []string{"", "two\nlines"} {
		if err := PublishFile(filepath.Join(dir, "f"), "http://127.0.0.1:1", tok, true); err == nil || !strings.Contains(err.Error(), "one non-empty line") {
			t.Errorf("PublishFile carrying token %q: %v", tok, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed PublishFile calls left %d files", len(entries))
	}
}

// TestFileCarriesToken publishes a file that carries a generated token:
// a reader without a token learns it from the file; a reader with another
// token treats the file as another job's.
func TestFileCarriesToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rdzv")
	if err := PublishFile(path, "http://127.0.0.1:5", "generated-1", true); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u, tok, err := WaitFile(ctx, path, "")
	if err != nil || u != "http://127.0.0.1:5" || tok != "generated-1" {
		t.Fatalf("WaitFile = %q, %q, %v", u, tok, err)
	}
	short, cancel2 := context.WithTimeout(ctx, 80*time.Millisecond)
	defer cancel2()
	if _, _, err := WaitFile(short, path, testToken); err == nil || !strings.Contains(err.Error(), "stale file from another job") {
		t.Errorf("WaitFile with another token: %v", err)
	}
	// A token that does not match the fingerprint beside it is refused.
	bad := fileMagic + "\n" + fileURLKey + "http://127.0.0.1:6\n" + fileTokenKey + Fingerprint("a") + "\n" + fileSecretKey + "b\n"
	if _, err := parseFile([]byte(bad)); err == nil {
		t.Error("parseFile accepted a token that does not match its fingerprint")
	}
}

// TestWaitFileRefusesOtherUsersFiles makes the file belong to another
// user, as one that another user planted at the path would: WaitFile must
// not take its URL or token.
func TestWaitFileRefusesOtherUsersFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	path := filepath.Join(t.TempDir(), "rdzv")
	if err := PublishFile(path, "http://127.0.0.1:7", "planted", true); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Millisecond)
	defer cancel()
	_, _, err := WaitFile(ctx, path, "")
	if err == nil || !strings.Contains(err.Error(), "owned by uid 65534, not by this user (uid 0): not trusted") {
		t.Errorf("WaitFile on another user's file: %v", err)
	}
}

// TestPrivateDir checks the directory is made private, and that one
// another user could enter or own is refused with an error that says so.
func TestPrivateDir(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir, err := PrivateDir()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("private directory %s: %v, %v", dir, fi.Mode(), err)
	}
	if again, err := PrivateDir(); err != nil || again != dir {
		t.Errorf("second PrivateDir = %q, %v", again, err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := PrivateDir(); err == nil || !strings.Contains(err.Error(), "is not private: mode -rwxr-xr-x lets other users in") {
		t.Errorf("PrivateDir with mode 0755: %v", err)
	}
	os.Remove(dir)
	if err := os.Symlink(t.TempDir(), dir); err != nil {
		t.Fatal(err)
	}
	if _, err := PrivateDir(); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("PrivateDir on a symbolic link: %v", err)
	}
	if os.Geteuid() == 0 {
		os.Remove(dir)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := PrivateDir(); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("PrivateDir owned by another user: %v", err)
		}
	}
}
