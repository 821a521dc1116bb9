package engine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/collective/transport"
	"github.com/weft-hpc/weft/collective/transport/inproc"
	"github.com/weft-hpc/weft/collective/transport/shm"
	"github.com/weft-hpc/weft/collective/transport/tcp"
	"github.com/weft-hpc/weft/internal/launch"
	"github.com/weft-hpc/weft/internal/rendezvous"
)

// DefaultMasterPort is the rendezvous port when a master address is known
// but no port is (Slurm): this base plus a number derived from the job id,
// so that two jobs sharing a first node do not collide.
const DefaultMasterPort = 29500

// Open is the "tcp" backend: the world of a multi-process job over Weft's
// own transports. It meets the other ranks through a key-value store
// served by rank 0, connects every pair over TCP, and moves the pairs on
// one host to shared memory. The store's address comes from cfg.Master,
// from the launch (WEFT_MASTER_ADDR/PORT, MASTER_ADDR/PORT, the first node
// of a Slurm step), or from a shared file (cfg.Rendezvous); a launch whose
// ranks all run on one host needs none of these, a file in this user's
// private directory under the temporary directory, keyed by the job, does.
// Every request to the store and every connection carries the job token:
// cfg.Token, else one derived from the launcher's job secret, else one
// rank 0 makes and hands over in that file or the shared one; only where
// none of these exists is it the launcher's job id (docs/LAUNCH.md,
// "Identity and safety"). Rank 0 serves the store until the world is
// closed, so that a process started later as one of its ranks is told
// that the rank is taken. A world of one rank connects nothing.
//
// Open returns when every rank is connected, or with an error naming what
// is missing when ctx ends or cfg.Timeout passes, and at once, naming
// both, when two ranks claim the same rank or believe in different world
// sizes.
func Open(ctx context.Context, cfg *driver.Config) (driver.Conn, error) {
	l := cfg.Launch
	ecfg, err := newConfig(cfg)
	if err != nil {
		return nil, err
	}
	if l.Size == 1 {
		l.Rendezvous = "none"
		l.LocalRanks, l.PeerTransports = 1, []string{"self"}
		c := newWorld(newEndpoint(inproc.New(1)[0], ecfg))
		l.Backend = c.Name()
		return c, nil
	}
	if cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}
	c, err := bootstrap(ctx, cfg, ecfg)
	if err != nil {
		return nil, err
	}
	l.Backend = c.Name()
	return c, nil
}

// NewLocal is the "local" backend: n ranks over the in-process transport,
// one Conn each, for goroutines of one process.
func NewLocal(n int, cfg *driver.Config) ([]driver.Conn, error) {
	ecfg, err := newConfig(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Hosts != nil && len(cfg.Hosts) != n {
		return nil, fmt.Errorf("engine: %d ranks with a host map of %d", n, len(cfg.Hosts))
	}
	out := make([]driver.Conn, n)
	for i, tr := range inproc.New(n) {
		ep := newEndpoint(tr, ecfg)
		ep.hosts = cfg.Hosts
		out[i] = newWorld(ep)
	}
	return out, nil
}

// newConfig is the endpoint configuration of cfg; the spin settings wait
// until the ranks on this host are known.
func newConfig(cfg *driver.Config) (config, error) {
	c := config{timeout: cfg.Timeout, log: cfg.Logger}
	if c.log == nil {
		c.log = slog.Default()
	}
	var err error
	if c.algo, err = setAlgo.get(cfg); err != nil {
		return config{}, err
	}
	if c.chunk, err = setChunk.get(cfg); err != nil {
		return config{}, err
	}
	if c.sockBuf, err = setSockBuf.get(cfg); err != nil {
		return config{}, err
	}
	if c.spinSetting, err = setSpin.get(cfg); err != nil {
		return config{}, err
	}
	if c.congestion, err = setCongestion.get(cfg); err != nil {
		return config{}, err
	}
	if c.shm, err = setShm.get(cfg); err != nil {
		return config{}, err
	}
	if c.ring, err = setShmRing.get(cfg); err != nil {
		return config{}, err
	}
	if c.rendezvous, err = setRendezvous.get(cfg); err != nil {
		return config{}, err
	}
	if c.token, err = setToken.get(cfg); err != nil {
		return config{}, err
	}
	if c.ifAddr, err = setIfAddr.get(cfg); err != nil {
		return config{}, err
	}
	if c.master, err = setMaster.get(cfg); err != nil {
		return config{}, err
	}
	return c, nil
}

// rankInfo is what each rank publishes in the rendezvous store.
type rankInfo struct {
	Addr   string `json:"addr"`
	Host   string `json:"host"`
	BootID string `json:"boot_id"`
	PID    int    `json:"pid"`
}

func bootstrap(ctx context.Context, dc *driver.Config, cfg config) (_ *conn, err error) {
	l := dc.Launch
	rank, size := l.Rank, l.Size
	logf := func(format string, a ...any) { cfg.log.Warn(fmt.Sprintf(format, a...)) }

	// Where is the store?
	master := cfg.master
	if master == "" && l.MasterAddr != "" {
		port := l.MasterPort
		if port == 0 {
			port = defaultPort(l.JobID)
		}
		master = net.JoinHostPort(l.MasterAddr, strconv.Itoa(port))
	}
	masterHost, _, _ := net.SplitHostPort(master)
	oneHost := l.LocalSize == size || l.NumNodes == 1 || isLoopback(masterHost)

	// The job token (docs/LAUNCH.md, "Identity and safety"): WEFT_JOB_TOKEN;
	// else one derived from the secret the launcher gave every rank; else
	// one rank 0 makes and hands over in a file only this user can read:
	// the shared file of WEFT_RENDEZVOUS, or one in a private directory
	// when every rank is on this host. Without any of these the ranks
	// share no secret, and the launcher's job id only keeps jobs apart.
	token := cfg.token
	if token == "" {
		if secret := launch.JobSecret(os.Getenv, l.Launcher); secret != "" {
			token = deriveToken(secret)
		}
	}
	var filePath string
	switch {
	case cfg.rendezvous != "" && (master == "" || token == ""):
		u, err := url.Parse(cfg.rendezvous)
		if err != nil || u.Scheme != "file" || u.Path == "" {
			return nil, fmt.Errorf("WEFT_RENDEZVOUS=%q: want file:///path/on/a/shared/filesystem", cfg.rendezvous)
		}
		filePath = u.Path
	case oneHost && (master == "" || token == ""):
		// Every rank is on this host: a file in this user's private
		// directory, named after the job, is a rendezvous nobody has to
		// set up, and a channel for the token no other user can read.
		dir, err := rendezvous.PrivateDir()
		if err != nil {
			return nil, err
		}
		filePath = filepath.Join(dir, "rendezvous-"+safeName(fileID(l.JobID, master)))
	case master == "":
		return nil, errors.New("no rendezvous: set WEFT_MASTER_ADDR and WEFT_MASTER_PORT to a host:port where rank 0 can listen, " +
			"or WEFT_RENDEZVOUS=file:///path on a filesystem all ranks share (docs/LAUNCH.md)")
	}
	carry := token == "" && filePath != "" // rank 0 makes the token; the file carries it
	if token == "" && filePath == "" {
		token = l.JobID
		if rank == 0 {
			cfg.log.Info("weft: the ranks share no secret (no WEFT_JOB_TOKEN, no shared file, not all on one host): " +
				"a process that reaches " + master + " before a rank joins can take its place (docs/LAUNCH.md, Identity and safety)")
		}
	}
	if master != "" {
		l.Rendezvous = "tcp://" + master
	} else {
		l.Rendezvous = "file://" + filePath
	}

	// The address this rank listens on and advertises.
	ip := cfg.ifAddr
	if ip == "" {
		if master != "" {
			ip = localIPToward(masterHost)
		} else if oneHost {
			ip = "127.0.0.1"
		} else {
			ip = localIPToward(l.Host)
		}
	}
	l.AdvertisedAddr = ip
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", ip, err)
	}
	me := rankInfo{Addr: ln.Addr().String(), Host: l.Host, BootID: bootID(), PID: os.Getpid()}
	info, _ := json.Marshal(me)
	rankVar, sizeVar := launch.Vars(l.Launcher)
	member := rendezvous.Member{Rank: rank, Size: size, RankVar: rankVar, SizeVar: sizeVar,
		Who: fmt.Sprintf("pid %d on %s", me.PID, me.Host), Info: info}

	// Rank 0 serves the store, for as long as the world lives: a process
	// that starts later as one of its ranks learns that the rank is taken.
	var srv *rendezvous.Server
	storeURL := ""
	defer func() {
		if err != nil {
			ln.Close()
			if srv != nil {
				srv.Close()
				if filePath != "" {
					rendezvous.RemoveFile(filePath)
				}
			}
		}
	}()
	if rank == 0 {
		addr := net.JoinHostPort(ip, "0")
		if master != "" {
			addr = master
		}
		sln, err := net.Listen("tcp", addr)
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("rank 0 cannot serve the rendezvous store on %s: the port is taken, by another job or by a process "+
				"started as rank 0 of this one already (%s=0 twice?): %w", addr, rankVar, err)
		} else if err != nil {
			return nil, fmt.Errorf("rank 0 cannot serve the rendezvous store on %s (is rank 0 running on that host, and the port free?): %w", addr, err)
		}
		if carry {
			var b [16]byte
			rand.Read(b[:])
			token = hex.EncodeToString(b[:])
		}
		srv = rendezvous.Serve(sln, rendezvous.Config{Token: token, Logf: logf, Size: size, SizeVar: sizeVar, Who: member.Who})
		storeURL = srv.URL()
		if filePath != "" {
			if err := rendezvous.PublishFile(filePath, storeURL, token, carry); err != nil {
				return nil, err
			}
		}
	} else if filePath == "" {
		storeURL = "http://" + master
	}

	// Join: the store checks this rank's place and size against the
	// others', and answers with the nonce of this session.
	var kv *rendezvous.Client
	var nonce string
	if storeURL != "" {
		kv = rendezvous.NewClient(storeURL, token)
		if nonce, err = kv.Join(ctx, member); errors.Is(err, rendezvous.ErrRefused) {
			return nil, fmt.Errorf("%w (the ranks do not share a job token: give them all the same WEFT_JOB_TOKEN, "+
				"or the same WEFT_MASTER_ADDR, docs/LAUNCH.md)", err)
		} else if err != nil {
			return nil, err
		}
	} else {
		// The file may be a stale one of an earlier run with the same
		// identity: read it again until its store admits this rank.
		want := token
		if carry {
			want = "" // the file's
		}
		for {
			u, tok, err := rendezvous.WaitFile(ctx, filePath, want)
			if err != nil {
				return nil, fmt.Errorf("waiting for rank 0 to publish %s: %w", filePath, err)
			}
			kv = rendezvous.NewClient(u, tok)
			start := time.Now()
			sub, cancel := context.WithTimeout(ctx, 2*time.Second)
			nonce, err = kv.Join(sub, member)
			cancel()
			if err == nil {
				token = tok
				break
			}
			if errors.Is(err, rendezvous.ErrConflict) || ctx.Err() != nil {
				return nil, fmt.Errorf("rendezvous through %s: %w", filePath, err)
			}
			// A refusal comes at once: look at the file again shortly.
			if time.Since(start) < 50*time.Millisecond {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}

	addrs := make([]string, size)
	infos := make([]rankInfo, size)
	local, mine := 0, 0
	for r := range size {
		v, err := kv.Get(ctx, rendezvous.RankKey(r))
		if errors.Is(err, rendezvous.ErrConflict) {
			return nil, err
		} else if err != nil {
			return nil, fmt.Errorf("rank %d never joined: %w", r, err)
		}
		var ri rankInfo
		if err := json.Unmarshal(v, &ri); err != nil || ri.Addr == "" {
			return nil, fmt.Errorf("rank %d published a malformed address %q", r, v)
		}
		addrs[r], infos[r] = ri.Addr, ri
		if ri.Host == me.Host && ri.BootID == me.BootID {
			local++
			if ri.PID == me.PID {
				mine++
			}
		}
	}
	cfg.spin, cfg.yield = spinFor(cfg.spinSetting, local)
	// A launcher that binds each rank to one core leaves Go one P. A
	// polling wait then holds it, and the link readers, heartbeats and
	// timers queue behind it until the runtime preempts it (10 ms): a
	// 64 KiB allreduce varied from 2.1 to 6.2 GB/s from run to run, and
	// held 4.6-5.8 with two Ps (docs/BENCHMARKS.md). A rank not bound
	// (mpirun --bind-to none, srun without --cpu-bind) has a P per CPU of
	// the host, and its idle threads take the CPUs of the other ranks'
	// polling waits: it gets its share of the host, as weft bench gave its
	// ranks before the library did. (A process of several ranks, as in
	// tests, keeps its Ps beyond two: the share would be its ranks'.)
	share := local
	if mine > 1 {
		share = 1
	}
	if n := launch.FitProcs(share); n > 0 {
		cfg.log.Info(fmt.Sprintf("weft: GOMAXPROCS set to %d, this rank's share of the host's %d CPUs and at least 2, so that a polling wait does not hold the only P nor idle threads take other ranks' CPUs (set GOMAXPROCS to choose)", n, launch.HostCPUs()))
	}
	l.LocalRanks = local
	// Only the ranks that joined know the nonce: a connection must carry
	// it to be taken for a rank's.
	tr, err := tcp.Connect(ctx, tcp.Config{Rank: rank, Size: size, Token: token + "/" + nonce,
		Listener: ln, Addrs: addrs, SocketBuffer: cfg.sockBuf, Congestion: cfg.congestion, Logf: logf})
	if err != nil {
		return nil, err
	}
	mixed, kinds, err := sameHostLinks(ctx, tr, infos, rank, cfg)
	if err != nil {
		return nil, err
	}
	l.PeerTransports = kinds
	if srv != nil {
		mixed = &serving{Transport: mixed, srv: srv, file: filePath}
	}
	ep := newEndpoint(mixed, cfg)
	ep.hosts = hostIndex(infos)
	c := newWorld(ep)
	if err := c.Run(ctx, &driver.Call{Kind: driver.Barrier}); err != nil {
		ep.close() // closes the store too
		srv = nil
		return nil, err
	}
	return c, nil
}

// serving is rank 0's transport with the rendezvous store it serves for
// the life of the world: closing the one closes the other, and removes the
// rendezvous file.
type serving struct {
	transport.Transport
	srv  *rendezvous.Server
	file string
}

func (t *serving) Close() error {
	err := t.Transport.Close()
	t.srv.Close()
	if t.file != "" {
		rendezvous.RemoveFile(t.file)
	}
	return err
}

// deriveToken makes the job token of a launcher's secret: a digest, so
// that the token, which travels in clear, does not reveal the secret.
func deriveToken(secret string) string {
	sum := sha256.Sum256([]byte("weft job token\x00" + secret))
	return "launcher-" + hex.EncodeToString(sum[:16])
}

// fileID names the rendezvous file of the ranks of one host: the job id
// and the master address, whichever are known, else the parent process
// (the shell or the launcher's proxy that started the ranks).
func fileID(jobID, master string) string {
	var parts []string
	if jobID != "" {
		parts = append(parts, jobID)
	}
	if master != "" {
		parts = append(parts, "master-"+master)
	}
	if len(parts) == 0 {
		return "ppid-" + strconv.Itoa(os.Getppid())
	}
	return strings.Join(parts, "-")
}

// isLoopback reports whether host is this host's loopback: ranks that
// meet there are all on this host.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameHostLinks moves the pairs of ranks on one host (same host name and
// boot id) from TCP to shared memory, unless WEFT_SHM=off. Every pair sets
// up at once: done one after another, three ranks could wait on each other
// in a circle.
func sameHostLinks(ctx context.Context, tr *tcp.Transport, infos []rankInfo, rank int, cfg config) (transport.Transport, []string, error) {
	kinds := make([]string, len(infos))
	me := infos[rank]
	links := map[int]transport.Link{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	for p, ri := range infos {
		switch {
		case p == rank:
			kinds[p] = "self"
			continue
		case !cfg.shm || ri.Host != me.Host || ri.BootID != me.BootID || me.BootID == "":
			kinds[p] = "tcp"
			continue
		}
		kinds[p] = "shm"
		conn := tr.Detach(p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := shm.Open(ctx, shm.Config{Conn: conn, Creator: rank < p, RingBytes: cfg.ring, Yield: cfg.yield})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("shared memory with rank %d (WEFT_SHM=off falls back to TCP): %w", p, err)
				}
				return
			}
			links[p] = l
		}()
	}
	wg.Wait()
	mixed := transport.Overlay(tr, "tcp+shm", links)
	if firstErr != nil {
		mixed.Close()
		return nil, nil, firstErr
	}
	if len(links) == 0 {
		return tr, kinds, nil
	}
	return mixed, kinds, nil
}

// hostIndex numbers the hosts (host name and boot id) of the ranks.
func hostIndex(infos []rankInfo) []int {
	out := make([]int, len(infos))
	seen := map[string]int{}
	for r, ri := range infos {
		k := ri.Host + "/" + ri.BootID
		i, ok := seen[k]
		if !ok {
			i = len(seen)
			seen[k] = i
		}
		out[r] = i
	}
	return out
}

func defaultPort(jobID string) int {
	if jobID == "" {
		return DefaultMasterPort
	}
	h := fnv.New32a()
	h.Write([]byte(jobID))
	return DefaultMasterPort + int(h.Sum32()%1000)
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func safeName(s string) string { return unsafeChars.ReplaceAllString(s, "_") }

// localIPToward returns the local address the kernel would use to reach
// host (no packet is sent), or 127.0.0.1 when host is local or unknown.
func localIPToward(host string) string {
	if host == "" || host == "localhost" {
		return "127.0.0.1"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return ip.String()
	}
	c, err := net.DialTimeout("udp", net.JoinHostPort(host, "9"), 2*time.Second)
	if err != nil {
		return "127.0.0.1"
	}
	defer c.Close()
	if a, ok := c.LocalAddr().(*net.UDPAddr); ok {
		return a.IP.String()
	}
	return "127.0.0.1"
}

func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
