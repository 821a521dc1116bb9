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
	if err := PublishFile(path, url, testToken); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := WaitFile(ctx, path, testToken)
	if err != nil || got != url {
		t.Fatalf("WaitFile = %q, %v; want %q", got, err, url)
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

	// Publishing again replaces the file.
	if err := PublishFile(path, "http://127.0.0.1:1", testToken); err != nil {
		t.Fatal(err)
	}
	if got, err := WaitFile(ctx, path, testToken); err != nil || got != "http://127.0.0.1:1" {
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
		if err := PublishFile(path, "http://127.0.0.1:2", testToken); err != nil {
			t.Error(err)
		}
	}()
	start := time.Now()
	got, err := WaitFile(ctx, path, testToken)
	if err != nil || got != "http://127.0.0.1:2" {
		t.Fatalf("WaitFile = %q, %v", got, err)
	}
	if el := time.Since(start); el < 90*time.Millisecond {
		t.Errorf("WaitFile returned after %v, before the file was published", el)
	}
}

func TestWaitFileSkipsStaleFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rdzv")
	if err := PublishFile(path, "http://127.0.0.1:3", "previous-job"); err != nil {
		t.Fatal(err)
	}

	short, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	_, err := WaitFile(short, path, testToken)
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
		if err := PublishFile(path, "http://127.0.0.1:4", testToken); err != nil {
			t.Error(err)
		}
	}()
	if got, err := WaitFile(ctx, path, testToken); err != nil || got != "http://127.0.0.1:4" {
		t.Errorf("WaitFile = %q, %v; want this job's URL", got, err)
	}
}

func TestWaitFileErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Millisecond)
	defer cancel()
	_, err := WaitFile(ctx, missing, testToken)
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
	_, err = WaitFile(ctx2, garbage, testToken)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "found only an unusable file: not a rendezvous file") {
		t.Errorf("WaitFile on a foreign file: %v", err)
	}
	if b, _ := os.ReadFile(garbage); string(b) != "hello\n" {
		t.Errorf("WaitFile changed a foreign file")
	}
}

func TestPublishFileErrors(t *testing.T) {
	dir := t.TempDir()
	if err := PublishFile(filepath.Join(dir, "no", "such", "dir"), "http://127.0.0.1:1", testToken); err == nil {
		t.Error("PublishFile into a missing directory succeeded")
	}
	for _, url := range []string{"", "http://a\nurl x"} {
		if err := PublishFile(filepath.Join(dir, "f"), url, testToken); err == nil || !strings.Contains(err.Error(), "bad server URL") {
			t.Errorf("PublishFile with URL %q: %v", url, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed PublishFile calls left %d files", len(entries))
	}
}
