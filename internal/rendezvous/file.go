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
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The file PublishFile writes, three lines, and a fourth when it carries
// the token itself:
//
//	weft-rendezvous 1
//	url http://10.0.0.1:40123
//	token-sha256 0123456789abcdef
//	token 9f86d081884c7d659a2feaa0c55ad015
const (
	fileMagic     = "weft-rendezvous 1"
	fileURLKey    = "url "
	fileTokenKey  = "token-sha256 "
	fileSecretKey = "token "
	maxFileSize   = 4096
	filePollEvery = 25 * time.Millisecond
)

// PublishFile writes the server URL and a fingerprint of token to path,
// for ranks that find rank 0 through a file. With carry, the file holds the
// token itself too: the ranks then learn it from the file, which only this
// user can read (mode 0600). The write is atomic: a temporary file in the
// same directory is written, synced and renamed over path, so a reader sees
// the old file, no file or the whole new one. An existing file at path is
// replaced.
func PublishFile(path, serverURL, token string, carry bool) error {
	if serverURL == "" || strings.ContainsAny(serverURL, "\r\n") {
		return fmt.Errorf("rendezvous: publish file %q: bad server URL %q", path, serverURL)
	}
	content := fileMagic + "\n" + fileURLKey + serverURL + "\n" + fileTokenKey + Fingerprint(token) + "\n"
	if carry {
		if token == "" || strings.ContainsAny(token, "\r\n") {
			return fmt.Errorf("rendezvous: publish file %q: a token to carry must be one non-empty line", path)
		}
		content += fileSecretKey + token + "\n"
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*") // mode 0600
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

// WaitFile waits until path holds a file that this user owns, published
// with token, and returns the server URL and the token. With token "" it
// waits for a file that carries its token (PublishFile with carry) and
// returns that token. It polls every 25 ms. A file with another token's
// fingerprint is a stale one from another job, and a file another user
// owns is not to be trusted: WaitFile keeps waiting (and leaves the file
// alone), and names it in the error if ctx ends first. A file that cannot
// be read or parsed is treated the same way.
//
// On network file systems a new file may take as long as the client's
// attribute cache timeout (NFS acdirmax, often 30-60 s) to appear; give ctx
// room for that.
func WaitFile(ctx context.Context, path, token string) (serverURL, fileToken string, err error) {
	start := time.Now()
	var seen string // what was wrong with the last file found, if any
	ticker := time.NewTicker(filePollEvery)
	defer ticker.Stop()
	for {
		f, err := readFile(path)
		switch {
		case err == nil && token == "" && f.token == "":
			seen = "found only a file without a token (published by a job with WEFT_JOB_TOKEN set, or stale); " +
				"remove it if no job is using it"
		case err == nil && token != "" && f.fingerprint != Fingerprint(token):
			seen = fmt.Sprintf("found only a stale file from another job (token fingerprint %s, want %s); "+
				"remove it if no job is using it", f.fingerprint, Fingerprint(token))
		case err == nil && token != "":
			return f.url, token, nil
		case err == nil:
			return f.url, f.token, nil
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
			return "", "", fmt.Errorf("rendezvous: wait for file %q: %s within %v: %w",
				path, what, time.Since(start).Round(time.Millisecond), ctx.Err())
		case <-ticker.C:
		}
	}
}

// published is what a rendezvous file says.
type published struct {
	url, fingerprint, token string
}

// readFile reads a published file, which this user must own.
func readFile(path string) (published, error) {
	f, err := os.Open(path)
	if err != nil {
		return published{}, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil {
		if uid, ok := owner(fi); ok && uid != os.Geteuid() {
			return published{}, fmt.Errorf("owned by uid %d, not by this user (uid %d): not trusted", uid, os.Geteuid())
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return published{}, err
	}
	if len(data) > maxFileSize {
		return published{}, errors.New("larger than a rendezvous file")
	}
	return parseFile(data)
}

// parseFile decodes the contents of a published file. A token it carries
// must match its fingerprint.
func parseFile(data []byte) (published, error) {
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	if !sc.Scan() || sc.Text() != fileMagic {
		return published{}, errors.New("not a rendezvous file")
	}
	var p published
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, fileURLKey); ok {
			p.url = v
		} else if v, ok := strings.CutPrefix(line, fileTokenKey); ok {
			p.fingerprint = v
		} else if v, ok := strings.CutPrefix(line, fileSecretKey); ok {
			p.token = v
		}
	}
	if p.url == "" || p.fingerprint == "" {
		return published{}, errors.New("rendezvous file without url or token fingerprint")
	}
	if p.token != "" && Fingerprint(p.token) != p.fingerprint {
		return published{}, errors.New("rendezvous file whose token does not match its fingerprint")
	}
	return p, nil
}

// PrivateDir returns a directory only this user can use, for files that
// carry a job token between the ranks of one host: weft-UID under the
// temporary directory (os.TempDir: $TMPDIR, else /tmp), made with mode
// 0700 when missing. An existing one must be a directory (not a link),
// owned by this user, that no one else can enter: another user could
// have made it to read or replace what the ranks put there. The error
// says what is wrong and what to do.
func PrivateDir() (string, error) {
	dir := filepath.Join(os.TempDir(), "weft-"+strconv.Itoa(os.Geteuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("rendezvous: private directory %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("rendezvous: private directory %s: %w", dir, err)
	}
	why := ""
	if uid, ok := owner(fi); ok && uid != os.Geteuid() {
		why = fmt.Sprintf("owned by uid %d, not by this user (uid %d)", uid, os.Geteuid())
	} else if !fi.IsDir() {
		why = "not a directory"
	} else if fi.Mode().Perm()&0o077 != 0 {
		why = fmt.Sprintf("mode %v lets other users in", fi.Mode().Perm())
	}
	if why != "" {
		return "", fmt.Errorf("rendezvous: private directory %s is not private: %s; remove it, or set TMPDIR to a directory of your own", dir, why)
	}
	return dir, nil
}

// owner is the uid that owns fi, where the system says.
func owner(fi fs.FileInfo) (int, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), true
	}
	return 0, false
}

// RemoveFile removes a file written by PublishFile; a missing file is not
// an error. Rank 0 calls it once every rank has connected, or at exit.
func RemoveFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rendezvous: remove file %q: %w", path, err)
	}
	return nil
}
