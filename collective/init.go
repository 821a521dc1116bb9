package collective

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

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

// Launch describes how the world was started, as Init found it.
type Launch struct {
	Launcher       string // "openmpi", "mpich", "slurm", "torchrun", "weft", "single"
	Rank, Size     int
	LocalRank      int // -1 if unknown
	LocalSize      int // -1 if unknown
	Rendezvous     string
	JobID          string
	Host           string
	AdvertisedAddr string
	NumNodes       int
	LocalRanks     int      // ranks found on this host (same host name and boot id)
	PeerTransports []string // how this rank reaches each rank: "self", "shm" or "tcp"
	HostCPUs       int      // CPUs online on this host
}

// Init creates the world communicator of a multi-process job over TCP.
//
// It finds rank, world size and local rank from the launcher's variables
// (Open MPI, MPICH/Hydra, Slurm, torchrun, or WEFT_RANK/WEFT_WORLD_SIZE;
// options override them), meets the other ranks through a key-value store
// served by rank 0, and connects every pair. The store's address comes
// from WEFT_MASTER_ADDR/WEFT_MASTER_PORT (or MASTER_ADDR/MASTER_PORT), from
// the first host of the Slurm step, or from a shared file
// (WEFT_RENDEZVOUS=file:///path); a launch whose ranks all run on one host
// needs none of these, a file under the temporary directory keyed by the job
// does. A single process gets a world of one rank.
//
// Init returns when every rank is connected, or with an error naming what
// is missing when ctx ends or the timeout (WEFT_TIMEOUT) passes.
func Init(ctx context.Context, opts ...Option) (*Comm, error) {
	c, _, err := InitLaunch(ctx, opts...)
	return c, err
}

// InitLaunch is Init that also reports what it found about the launch.
func InitLaunch(ctx context.Context, opts ...Option) (*Comm, *Launch, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := o.config()
	if err != nil {
		return nil, nil, err
	}
	info, err := launch.Detect(os.Getenv)
	if err != nil {
		if o.rank < 0 {
			return nil, nil, initErr(-1, err)
		}
		info = launch.Info{Launcher: launch.Weft, LocalRank: -1, LocalSize: -1, NumNodes: -1}
	}
	if o.rank >= 0 {
		if o.size < 1 || o.rank >= o.size {
			return nil, nil, initErr(o.rank, fmt.Errorf("%w: WithRank(%d, %d)", ErrInvalid, o.rank, o.size))
		}
		info.Rank, info.Size = o.rank, o.size
		if info.Launcher == launch.Single {
			info.Launcher = launch.Weft
		}
	}
	if o.localRank >= 0 {
		info.LocalRank = o.localRank
	}
	host, _ := os.Hostname()
	l := &Launch{Launcher: info.Launcher, Rank: info.Rank, Size: info.Size, LocalRank: info.LocalRank,
		LocalSize: info.LocalSize, JobID: info.JobID, Host: host, NumNodes: info.NumNodes}
	if info.Size == 1 {
		l.Rendezvous = "none"
		l.LocalRanks, l.HostCPUs, l.PeerTransports = 1, hostCPUs(), []string{"self"}
		c := newWorld(newEndpoint(inproc.New(1)[0], cfg))
		c.launch = l
		return c, l, nil
	}
	if cfg.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.timeout)
		defer cancel()
	}
	c, err := bootstrap(ctx, o, cfg, info, l)
	if err != nil {
		return nil, nil, initErr(info.Rank, err)
	}
	c.launch = l
	return c, l, nil
}

func initErr(rank int, err error) error {
	return &OpError{Op: "init", Backend: "tcp", Rank: rank, Peer: -1, Err: err}
}

// rankInfo is what each rank publishes in the rendezvous store.
type rankInfo struct {
	Addr   string `json:"addr"`
	Host   string `json:"host"`
	BootID string `json:"boot_id"`
	PID    int    `json:"pid"`
}

func bootstrap(ctx context.Context, o *options, cfg config, info launch.Info, l *Launch) (*Comm, error) {
	rank, size := info.Rank, info.Size
	token := *o.token
	if token == "" {
		token = info.JobID
	}
	logf := func(format string, a ...any) { cfg.log.Warn(fmt.Sprintf(format, a...)) }

	// Where is the store?
	master := o.master
	if master == "" && info.MasterAddr != "" {
		port := info.MasterPort
		if port == 0 {
			port = defaultPort(info.JobID)
		}
		master = net.JoinHostPort(info.MasterAddr, strconv.Itoa(port))
	}
	var filePath string
	switch {
	case master != "":
		l.Rendezvous = "tcp://" + master
	case o.rendezvous != "":
		u, err := url.Parse(o.rendezvous)
		if err != nil || u.Scheme != "file" || u.Path == "" {
			return nil, fmt.Errorf("WEFT_RENDEZVOUS=%q: want file:///path/on/a/shared/filesystem", o.rendezvous)
		}
		filePath = u.Path
		l.Rendezvous = o.rendezvous
	case info.LocalSize == size || info.NumNodes == 1:
		// Every rank is on this host: a file in the temporary directory,
		// named after the job, is a rendezvous nobody has to set up.
		id := info.JobID
		if id == "" {
			id = "ppid-" + strconv.Itoa(os.Getppid())
		}
		filePath = filepath.Join(os.TempDir(), "weft-rendezvous-"+safeName(id))
		l.Rendezvous = "file://" + filePath
	default:
		return nil, errors.New("no rendezvous: set WEFT_MASTER_ADDR and WEFT_MASTER_PORT to a host:port where rank 0 can listen, " +
			"or WEFT_RENDEZVOUS=file:///path on a filesystem all ranks share (docs/LAUNCH.md)")
	}

	// The address this rank listens on and advertises.
	ip := o.ifAddr
	if ip == "" {
		if master != "" {
			mh, _, _ := net.SplitHostPort(master)
			ip = localIPToward(mh)
		} else if filePath != "" && (info.LocalSize == size || info.NumNodes == 1) {
			ip = "127.0.0.1"
		} else {
			ip = localIPToward(l.Host)
		}
	}
	l.AdvertisedAddr = ip

	// Rank 0 serves the store.
	var srv *rendezvous.Server
	storeURL := ""
	if rank == 0 {
		addr := net.JoinHostPort(ip, "0")
		if master != "" {
			addr = master
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("rank 0 cannot serve the rendezvous store on %s (is rank 0 running on that host, and the port free?): %w", addr, err)
		}
		srv = rendezvous.Serve(ln, token, logf)
		defer srv.Close()
		storeURL = srv.URL()
		if filePath != "" {
			if err := rendezvous.PublishFile(filePath, storeURL, token); err != nil {
				return nil, err
			}
			defer rendezvous.RemoveFile(filePath)
		}
	} else if master != "" {
		storeURL = "http://" + master
	}
	var kv *rendezvous.Client
	var nonce []byte
	var err error
	if storeURL != "" {
		kv = rendezvous.NewClient(storeURL, token)
		// A nonce from rank 0 makes the connection token unique to this run.
		if rank == 0 {
			var b [16]byte
			rand.Read(b[:])
			if err := kv.Put(ctx, "nonce", []byte(hex.EncodeToString(b[:]))); err != nil {
				return nil, err
			}
		}
		if nonce, err = kv.Get(ctx, "nonce"); err != nil {
			return nil, err
		}
	} else {
		// The file may be a stale one of an earlier run with the same
		// identity: read it again until its store answers.
		for {
			u, err := rendezvous.WaitFile(ctx, filePath, token)
			if err != nil {
				return nil, fmt.Errorf("waiting for rank 0 to publish %s: %w", filePath, err)
			}
			kv = rendezvous.NewClient(u, token)
			sub, cancel := context.WithTimeout(ctx, 2*time.Second)
			nonce, err = kv.Get(sub, "nonce")
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return nil, fmt.Errorf("rendezvous through %s: %w", filePath, err)
			}
		}
	}

	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", ip, err)
	}
	me := rankInfo{Addr: ln.Addr().String(), Host: l.Host, BootID: bootID(), PID: os.Getpid()}
	js, _ := json.Marshal(me)
	if err := kv.Put(ctx, "rank/"+strconv.Itoa(rank), js); err != nil {
		ln.Close()
		return nil, err
	}
	addrs := make([]string, size)
	infos := make([]rankInfo, size)
	local := 0
	for r := range size {
		v, err := kv.Get(ctx, "rank/"+strconv.Itoa(r))
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("rank %d never published its address: %w", r, err)
		}
		var ri rankInfo
		if err := json.Unmarshal(v, &ri); err != nil || ri.Addr == "" {
			ln.Close()
			return nil, fmt.Errorf("rank %d published a malformed address %q", r, v)
		}
		addrs[r], infos[r] = ri.Addr, ri
		if ri.Host == me.Host && ri.BootID == me.BootID {
			local++
		}
	}
	cfg.spin, cfg.yield = o.spinFor(local)
	l.LocalRanks, l.HostCPUs = local, hostCPUs()
	cc := o.congestion
	if cc == "system" {
		cc = ""
	}
	tr, err := tcp.Connect(ctx, tcp.Config{Rank: rank, Size: size, Token: token + "/" + string(nonce),
		Listener: ln, Addrs: addrs, SocketBuffer: *o.sockBuf, Congestion: cc, Logf: logf})
	if err != nil {
		return nil, err
	}
	mixed, kinds, err := sameHostLinks(ctx, tr, infos, rank, cfg.yield)
	if err != nil {
		return nil, err
	}
	l.PeerTransports = kinds
	ep := newEndpoint(mixed, cfg)
	ep.hosts = hostIndex(infos)
	c := newWorld(ep)
	// Everyone connected: rank 0 may now stop serving the store.
	if err := c.Barrier(ctx); err != nil {
		c.Abort()
		return nil, err
	}
	return c, nil
}

// sameHostLinks moves the pairs of ranks on one host (same host name and
// boot id) from TCP to shared memory, unless WEFT_SHM=off. Every pair sets
// up at once: done one after another, three ranks could wait on each other
// in a circle.
func sameHostLinks(ctx context.Context, tr *tcp.Transport, infos []rankInfo, rank int, yield bool) (transport.Transport, []string, error) {
	kinds := make([]string, len(infos))
	mode, err := paramShm.get()
	if err != nil {
		tr.Close()
		return nil, nil, err
	}
	ring, err := paramShmRing.get()
	if err != nil {
		tr.Close()
		return nil, nil, err
	}
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
		case mode == "off" || ri.Host != me.Host || ri.BootID != me.BootID || me.BootID == "":
			kinds[p] = "tcp"
			continue
		}
		kinds[p] = "shm"
		conn := tr.Detach(p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := shm.Open(ctx, shm.Config{Conn: conn, Creator: rank < p, RingBytes: int(ring), Yield: yield})
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
