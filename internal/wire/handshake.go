package wire

import (
	"encoding/binary"
	"fmt"
	"io"
)

// helloMagic opens a handshake ("WEFTHELO").
const helloMagic = 0x4f4c454854464557

// MaxToken is the longest job token a handshake carries.
const MaxToken = 1024

// Hello is the first message on a new connection, sent by the dialer. The
// acceptor checks every field against what it expects and answers with a
// Reply; on refusal it closes the connection.
type Hello struct {
	Size   int32  // world size the dialer believes in
	From   int32  // dialer's rank
	To     int32  // rank the dialer wants to reach
	Stream uint16 // index of this connection among the pair's streams
	Token  string // job identity (WEFT_JOB_TOKEN or the launcher's job id, plus the session nonce)
}

// helloSize is the fixed part of an encoded Hello; the token follows.
const helloSize = 28

// WriteHello encodes h onto w.
func WriteHello(w io.Writer, h *Hello) error {
	if len(h.Token) > MaxToken {
		return fmt.Errorf("wire: job token of %d bytes exceeds %d", len(h.Token), MaxToken)
	}
	b := make([]byte, helloSize, helloSize+len(h.Token))
	binary.LittleEndian.PutUint64(b[0:], helloMagic)
	binary.LittleEndian.PutUint16(b[8:], Version)
	binary.LittleEndian.PutUint16(b[10:], h.Stream)
	binary.LittleEndian.PutUint32(b[12:], uint32(h.Size))
	binary.LittleEndian.PutUint32(b[16:], uint32(h.From))
	binary.LittleEndian.PutUint32(b[20:], uint32(h.To))
	binary.LittleEndian.PutUint32(b[24:], uint32(len(h.Token)))
	_, err := w.Write(append(b, h.Token...))
	return err
}

// ReadHello decodes a Hello from r, rejecting anything malformed.
func ReadHello(r io.Reader) (*Hello, error) {
	var b [helloSize]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return nil, fmt.Errorf("wire: reading handshake: %w", err)
	}
	if m := binary.LittleEndian.Uint64(b[0:]); m != helloMagic {
		return nil, fmt.Errorf("%w: handshake magic %#x (not a weft peer)", ErrCorrupt, m)
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v != Version {
		return nil, fmt.Errorf("%w: handshake version %d, this build speaks %d", ErrCorrupt, v, Version)
	}
	h := &Hello{
		Stream: binary.LittleEndian.Uint16(b[10:]),
		Size:   int32(binary.LittleEndian.Uint32(b[12:])),
		From:   int32(binary.LittleEndian.Uint32(b[16:])),
		To:     int32(binary.LittleEndian.Uint32(b[20:])),
	}
	if h.Size < 1 || h.From < 0 || h.From >= h.Size || h.To < 0 || h.To >= h.Size {
		return nil, fmt.Errorf("%w: handshake names rank %d -> %d in a world of %d", ErrCorrupt, h.From, h.To, h.Size)
	}
	n := binary.LittleEndian.Uint32(b[24:])
	if n > MaxToken {
		return nil, fmt.Errorf("%w: handshake token of %d bytes exceeds %d", ErrCorrupt, n, MaxToken)
	}
	tok := make([]byte, n)
	if _, err := io.ReadFull(r, tok); err != nil {
		return nil, fmt.Errorf("wire: reading handshake token: %w", err)
	}
	h.Token = string(tok)
	return h, nil
}

// Reply answers a Hello: OK, or a refusal with its reason.
type Reply struct {
	OK     bool
	Reason string
}

const replyMagic = 0x5950455254464557 // "WEFTREPY"

// WriteReply encodes rp onto w.
func WriteReply(w io.Writer, rp *Reply) error {
	reason := rp.Reason
	if len(reason) > 1024 {
		reason = reason[:1024]
	}
	b := make([]byte, 12, 12+len(reason))
	binary.LittleEndian.PutUint64(b[0:], replyMagic)
	if rp.OK {
		b[8] = 1
	}
	binary.LittleEndian.PutUint16(b[10:], uint16(len(reason)))
	_, err := w.Write(append(b, reason...))
	return err
}

// ReadReply decodes a Reply from r.
func ReadReply(r io.Reader) (*Reply, error) {
	var b [12]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return nil, fmt.Errorf("wire: reading handshake reply: %w", err)
	}
	if m := binary.LittleEndian.Uint64(b[0:]); m != replyMagic {
		return nil, fmt.Errorf("%w: handshake reply magic %#x", ErrCorrupt, m)
	}
	if b[8] > 1 || b[9] != 0 {
		return nil, fmt.Errorf("%w: handshake reply flags %#x %#x", ErrCorrupt, b[8], b[9])
	}
	n := int(binary.LittleEndian.Uint16(b[10:]))
	if n > 1024 {
		return nil, fmt.Errorf("%w: handshake reply reason of %d bytes", ErrCorrupt, n)
	}
	reason := make([]byte, n)
	if _, err := io.ReadFull(r, reason); err != nil {
		return nil, fmt.Errorf("wire: reading handshake reply: %w", err)
	}
	return &Reply{OK: b[8] == 1, Reason: string(reason)}, nil
}
