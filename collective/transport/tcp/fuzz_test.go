package tcp

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/weft-hpc/weft/internal/wire"
)

// pipeConn is a connection whose peer sent in and reads what is written.
type pipeConn struct {
	net.Conn // nil: only the methods below are called
	in       *bytes.Reader
	out      bytes.Buffer
}

func (c *pipeConn) Read(b []byte) (int, error)       { return c.in.Read(b) }
func (c *pipeConn) Write(b []byte) (int, error)      { return c.out.Write(b) }
func (c *pipeConn) SetDeadline(time.Time) error      { return nil }
func (c *pipeConn) SetReadDeadline(time.Time) error  { return nil }
func (c *pipeConn) SetWriteDeadline(time.Time) error { return nil }
func (c *pipeConn) Close() error                     { return nil }

// FuzzAccept feeds arbitrary bytes to the acceptor's side of the
// handshake, as a stranger on a rank's port could send them: only a Hello
// that carries the job token exactly, this world's size, this rank and a
// higher rank that has not connected yet is accepted, and every other
// gets a refusal or nothing.
func FuzzAccept(f *testing.F) {
	const token = "job-token/0123456789abcdef0123456789abcdef"
	for _, h := range []wire.Hello{
		{Size: 3, From: 1, To: 0, Token: token},
		{Size: 3, From: 2, To: 0, Token: ""},
		{Size: 3, From: 2, To: 0, Token: "/0123456789abcdef0123456789abcdef"},
		{Size: 4, From: 1, To: 0, Token: token},
	} {
		var b bytes.Buffer
		wire.WriteHello(&b, &h)
		f.Add(b.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := Config{Rank: 0, Size: 3, Token: token}
		var mu sync.Mutex
		claimed := map[int]bool{2: true} // rank 2 has connected already
		c := &pipeConn{in: bytes.NewReader(data)}
		peer, err := handshakeAccept(context.Background(), c, cfg, nil, &mu, claimed)
		rp, rerr := wire.ReadReply(&c.out)
		if err != nil {
			if rerr == nil && rp.OK {
				t.Fatalf("refused (%v) but answered OK", err)
			}
			return
		}
		h, herr := wire.ReadHello(bytes.NewReader(data))
		if herr != nil || h.Token != token || h.Size != 3 || h.To != 0 || h.From != 1 || peer != 1 {
			t.Fatalf("accepted %+v (%v) as rank %d", h, herr, peer)
		}
		if rerr != nil || !rp.OK {
			t.Fatalf("accepted, but answered %+v, %v", rp, rerr)
		}
	})
}
