package wire

import (
	"bytes"
	"errors"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	h := Header{Kind: KindData, Op: 3, DType: 1, RedOp: 2, Algo: 4, Comm: 1 << 40, Seq: 99, Tag: 7,
		Root: -1, Count: 12345, MsgLen: 4096, Off: 1024, Len: 2048, Sig: 0xdeadbeef}
	var b [HeaderSize]byte
	h.Encode(b[:])
	var g Header
	if err := g.Decode(b[:]); err != nil {
		t.Fatal(err)
	}
	if g != h {
		t.Fatalf("round trip: got %+v, want %+v", g, h)
	}
}

func TestHeaderRejects(t *testing.T) {
	good := Header{Kind: KindData, MsgLen: 10, Len: 10}
	cases := []struct {
		name string
		mut  func(b []byte)
	}{
		{"magic", func(b []byte) { b[0] = 0 }},
		{"version", func(b []byte) { b[2] = 9 }},
		{"kind", func(b []byte) { b[3] = 77 }},
		{"payload past message", func(b []byte) { b[56] = 11 }},
	}
	for _, c := range cases {
		var b [HeaderSize]byte
		good.Encode(b[:])
		c.mut(b[:])
		var h Header
		if err := h.Decode(b[:]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Decode = %v, want ErrCorrupt", c.name, err)
		}
	}
	var h Header
	if err := h.Decode(make([]byte, 10)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("short header: %v", err)
	}
	hb := Header{Kind: KindHeartbeat, Len: 3}
	var b [HeaderSize]byte
	hb.Encode(b[:])
	if err := h.Decode(b[:]); !errors.Is(err, ErrCorrupt) {
		t.Errorf("heartbeat with payload: %v", err)
	}
}

func TestHelloRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	in := &Hello{Size: 70000, From: 69999, To: 65536, Stream: 3, Token: "job-42/nonce"}
	if err := WriteHello(&buf, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadHello(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if *out != *in {
		t.Fatalf("got %+v, want %+v", out, in)
	}
	if err := WriteReply(&buf, &Reply{Reason: "wrong job"}); err != nil {
		t.Fatal(err)
	}
	rp, err := ReadReply(&buf)
	if err != nil || rp.OK || rp.Reason != "wrong job" {
		t.Fatalf("reply = %+v, %v", rp, err)
	}
}

func TestHelloRejects(t *testing.T) {
	for _, h := range []*Hello{{Size: 4, From: 4, To: 0}, {Size: 0}, {Size: 4, From: 1, To: -1}} {
		var buf bytes.Buffer
		if err := WriteHello(&buf, h); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadHello(&buf); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%+v: err = %v, want ErrCorrupt", h, err)
		}
	}
	if _, err := ReadHello(bytes.NewReader([]byte("GET / HTTP/1.1\r\nHost: example\r\n\r\n"))); !errors.Is(err, ErrCorrupt) {
		t.Errorf("http request: err = %v", err)
	}
}
