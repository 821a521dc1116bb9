package wire

import (
	"bytes"
	"testing"
)

func FuzzHeader(f *testing.F) {
	var b [HeaderSize]byte
	(&Header{Kind: KindData, MsgLen: 100, Off: 50, Len: 50, Count: 25}).Encode(b[:])
	f.Add(b[:])
	(&Header{Kind: KindAbort, Root: 2, Len: 10}).Encode(b[:])
	f.Add(b[:])
	(&Header{Kind: KindRecover, Op: 2, Comm: 1, Seq: 3, Root: 1, Count: 7, Len: 1}).Encode(b[:])
	f.Add(b[:])
	f.Fuzz(func(t *testing.T, data []byte) {
		var h Header
		if err := h.Decode(data); err != nil {
			return
		}
		// What decodes must re-encode to the same bytes and respect the limits.
		var out [HeaderSize]byte
		h.Encode(out[:])
		if !bytes.Equal(out[:], data[:HeaderSize]) {
			t.Fatalf("re-encoding differs:\n%x\n%x", out, data[:HeaderSize])
		}
		if h.Kind == KindData && (h.Len > MaxPayload || h.Off+uint64(h.Len) > h.MsgLen) {
			t.Fatalf("accepted out-of-range payload %+v", h)
		}
		if (h.Kind == KindAbort || h.Kind == KindRecover) && h.Len > 64<<10 {
			t.Fatalf("accepted a %v frame of %d bytes", h.Kind, h.Len)
		}
	})
}

func FuzzHandshake(f *testing.F) {
	var buf bytes.Buffer
	WriteHello(&buf, &Hello{Size: 4, From: 1, To: 2, Token: "tok"})
	f.Add(buf.Bytes())
	buf.Reset()
	WriteReply(&buf, &Reply{OK: true})
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		if h, err := ReadHello(bytes.NewReader(data)); err == nil {
			if h.From < 0 || h.From >= h.Size || h.To < 0 || h.To >= h.Size || len(h.Token) > MaxToken {
				t.Fatalf("accepted bad hello %+v", h)
			}
			var out bytes.Buffer
			if err := WriteHello(&out, h); err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(data, out.Bytes()) {
				t.Fatalf("re-encoding differs")
			}
		}
		if rp, err := ReadReply(bytes.NewReader(data)); err == nil && len(rp.Reason) > 1024 {
			t.Fatalf("accepted long reason")
		}
	})
}
