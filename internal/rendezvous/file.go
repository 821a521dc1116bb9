package rendezvous

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The file PublishFile writes, three lines:
//
//	weft-rendezvous 1
//	url http://10.0.0.1:40123
//	token-sha256 0123456789abcdef
const (
	fileMagic     = "weft-rendezvous 1"
	fileURLKey    = "url "
	fileTokenKey  = "token-sha256 "
	maxFileSize   = 4096
	filePollEvery = 25 * time.Millisecond
)

// PublishFile writes the server URL and a fingerprint of token (never the
// token) to path, for ranks that find rank 0 through a shared file system.
// The write is atomic: a temporary file in the same directory is written,
// synced and renamed over path, so a reader sees the old file, no file or
// the whole new one. An existing file at path is replaced.
func PublishFile(path, serverURL, token string) error {
	if serverURL == "" || strings.ContainsAny(serverURL, "\r\n") {
		return fmt.Errorf("rendezvous: publish file %q: bad server URL %q", path, serverURL)
	}
	content := fileMagic + "\n" + fileURLKey + serverURL + "\n" + fileTokenKey + Fingerprint(token) + "\n"
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("rendezvous: publish file %q: %w", path, err)
	}
	committed := false
	defer func() {
		if !committed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.WriteString(content); err != nil {
		return fmt.Errorf("rendezvous: publish file %q: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("rendezvous: publish file %q: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("rendezvous: publish file %q: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("rendezvous: publish file %q: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rendezvous: publish file %q: %w", path, err)
	}
	committed = true
	// Make the rename itself durable; not every file system can sync a
	// directory, and the file is already visible, so failure is ignored.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// WaitFile waits until path holds a file published with the same token and
// returns the server URL in it. It polls every 25 ms. A file with another
// token's fingerprint is a stale one from another job: WaitFile keeps
// waiting (and leaves the file alone), and names it in the error if ctx
// ends first. A file that cannot be read or parsed is treated the same way.
//
// On network file systems a new file may take as long as the client's
// attribute cache timeout (NFS acdirmax, often 30-60 s) to appear; give ctx
// room for that.
func WaitFile(ctx context.Context, path, token string) (string, error) {
	want := Fingerprint(token)
	start := time.Now()
	var seen string // what was wrong with the last file found, if any
	ticker := time.NewTicker(filePollEvery)
	defer ticker.Stop()
	for {
		u, fp, err := readFile(path)
		switch {
		case err == nil && fp == want:
			return u, nil
		case err == nil:
			seen = fmt.Sprintf("found only a stale file from another job (token fingerprint %s, want %s); "+
				"remove it if no job is using it", fp, want)
		case errors.Is(err, fs.ErrNotExist):
			seen = ""
		default:
			seen = "found only an unusable file: " + err.Error()
		}
		select {
		case <-ctx.Done():
			what := "no file appeared"
			if seen != "" {
				what = seen
			}
			return "", fmt.Errorf("rendezvous: wait for file %q: %s within %v: %w",
				path, what, time.Since(start).Round(time.Millisecond), ctx.Err())
		case <-ticker.C:
		}
	}
}

// readFile reads a published file: its URL and token fingerprint.
func readFile(path string) (serverURL, fingerprint string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return "", "", err
	}
	if len(data) > maxFileSize {
		return "", "", errors.New("larger than a rendezvous file")
	}
	return parseFile(data)
}

// parseFile decodes the contents of a published file.
func parseFile(data []byte) (serverURL, fingerprint string, err error) {
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	if !sc.Scan() || sc.Text() != fileMagic {
		return "", "", errors.New("not a rendezvous file")
	}
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, fileURLKey); ok {
			serverURL = v
		} else if v, ok := strings.CutPrefix(line, fileTokenKey); ok {
			fingerprint = v
		}
	}
	if serverURL == "" || fingerprint == "" {
		return "", "", errors.New("rendezvous file without url or token fingerprint")
	}
	return serverURL, fingerprint, nil
}

// RemoveFile removes a file written by PublishFile; a missing file is not
// an error. Rank 0 calls it once every rank has connected, or at exit.
func RemoveFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rendezvous: remove file %q: %w", path, err)
	}
	return nil
}
