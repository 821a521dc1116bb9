package collective_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-hpc/weft/internal/mpitest"
)

// TestStrangersOnThePorts starts a job of three processes while a
// stranger (a port scanner, a stuck client, a program speaking another
// protocol) keeps connections open to the rendezvous port and to every
// port the ranks listen on: silent ones, ones that send half a greeting,
// and ones that send garbage. The job must start on time and pass the
// conformance suite, over shared memory and over TCP.
func TestStrangersOnThePorts(t *testing.T) {
	for _, shm := range []string{"auto", "off"} {
		t.Run("shm="+shm, func(t *testing.T) {
			port := mpitest.FreePort(t)
			j := mpitest.NewJob(t)
			st := &stranger{seen: map[int]bool{}}
			defer st.close()
			// Each rank starts once the stranger is on the ports of the
			// ranks before it: rank 0's rendezvous store and listener, rank
			// 1's listener, which the later ranks dial.
			start := time.Now()
			for r := range 3 {
				cmd := exec.Command(mpitest.Self())
				cmd.Env = append(os.Environ(), mpitest.Role("conformance"), "WEFT_RANK="+strconv.Itoa(r), "WEFT_WORLD_SIZE=3",
					"WEFT_MASTER_ADDR=127.0.0.1", "WEFT_MASTER_PORT="+strconv.Itoa(port), "WEFT_JOB_TOKEN=test-"+t.Name())
				j.Start(t, cmd, []string{"WEFT_TEST_SHORT=1", "WEFT_SHM=" + shm, "WEFT_TIMEOUT=30s"})
				want := map[int]int{0: 2, 1: 1}[r] // listening sockets to find
				for deadline := time.Now().Add(30 * time.Second); want > 0; time.Sleep(2 * time.Millisecond) {
					ps := listeningPorts(cmd.Process.Pid)
					if len(ps) >= want {
						for _, p := range ps {
							st.visit(p)
						}
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("rank %d listens on %v after 30 s, want %d ports", r, ps, want)
					}
				}
			}
			for r := range 3 {
				j.WaitFor(t, r, "TRANSPORTS", 60*time.Second)
			}
			opened := time.Since(start)
			for r := range 3 {
				if line := j.Result(t, r, 2*time.Minute); !strings.HasPrefix(line, "RESULT ok") {
					t.Errorf("rank %d: %s\n%s", r, line, j.Outs[r])
				}
			}
			ports := st.ports()
			t.Logf("opened in %v with strangers on %d ports", opened, ports)
			if ports != 3 {
				t.Errorf("the stranger is on %d ports, want 3", ports)
			}
			// A handshake that waited on a stranger would take its 10 s
			// deadline; on two loaded cores Open takes well under one.
			if opened > 8*time.Second {
				t.Errorf("the job took %v to open with strangers on its ports", opened)
			}
		})
	}
}

// stranger holds connections to the ports it has visited.
type stranger struct {
	mu    sync.Mutex
	seen  map[int]bool
	conns []net.Conn
}

// visit opens connections to port the first time: silent ones, ones
// with half of a Weft greeting, ones with another protocol's.
func (s *stranger) visit(port int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[port] {
		return
	}
	s.seen[port] = true
	for i := range 30 {
		greet := []string{"", "WEFTHE", "SSH-2.0-OpenSSH_9.2\r\n"}[i%3]
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err != nil {
			return
		}
		s.conns = append(s.conns, c)
		if greet != "" {
			c.Write([]byte(greet))
		}
	}
}

func (s *stranger) ports() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

func (s *stranger) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
}

// listeningPorts returns the TCP ports process pid listens on, found as a
// scanner on the host would find them, from the socket table: the
// listening sockets of /proc/net/tcp whose inodes are among pid's
// descriptors.
func listeningPorts(pid int) []int {
	inodes := map[string]bool{}
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	for _, fd := range fds {
		l, err := os.Readlink(fd)
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		return nil
	}
	var ports []int
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		// sl local_address rem_address st ... inode is field 9; 0A is LISTEN.
		if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
			continue
		}
		_, hexPort, _ := strings.Cut(f[1], ":")
		if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil {
			ports = append(ports, int(p))
		}
	}
	return ports
}
