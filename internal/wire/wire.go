// Package wire is the byte layout of Weft's point-to-point frames and of the
// connection handshake. Every transport that carries bytes (TCP, and shared
// memory through its rings) moves frames in this layout, so a decoder that
// rejects bad input exists once, here, with its fuzz targets.
//
// A frame is a fixed 64-byte header followed by Len payload bytes. Integers
// are little-endian. The header carries enough of the operation's identity
// (communicator, sequence number, collective, data type, reduction, root,
// element count, algorithm) that two ranks calling different collectives, or
// the same collective with different arguments, are told so instead of
// reading each other's bytes as data.
//
// The format is hand-written rather than taken from a serialisation library
// because it sits on the latency path of every message (one fixed-size
// header, no allocation) and has to be read into caller-owned buffers.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// HeaderSize is the encoded size of a Header.
const HeaderSize = 64

// Magic opens every header ("WF" little-endian).
const Magic = 0x4657

// Version is the frame format version. A peer with another version is refused
// in the handshake. Version 2 added Sig.
const Version = 2

// MaxPayload is the largest payload a frame may announce. Senders cut larger
// messages into several frames; a header announcing more is corrupt.
const MaxPayload = 64 << 20

// Kind says what a frame is.
type Kind uint8

const (
	// KindData carries bytes of a collective or point-to-point message.
	KindData Kind = 1
	// KindHeartbeat keeps an idle link alive; it carries nothing.
	KindHeartbeat Kind = 2
	// KindAbort tells the peer that the sender's communicator failed. The
	// payload is the cause as text; Root names the rank blamed (-1: none).
	KindAbort Kind = 3
	// KindGoodbye says the sender closed its communicator in good order.
	KindGoodbye Kind = 4
	// KindRecover carries the survivors' agreement after a failure (Op
	// says which message; the payload is a set of ranks, one bit each),
	// or announces that the next frame belongs to a communicator shrunk
	// from the sender's (collective/engine, recover.go).
	KindRecover Kind = 5
)

func (k Kind) String() string {
	switch k {
	case KindData:
		return "data"
	case KindHeartbeat:
		return "heartbeat"
	case KindAbort:
		return "abort"
	case KindGoodbye:
		return "goodbye"
	case KindRecover:
		return "recover"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Header is one frame header. The fields from Op to Count, and Sig,
// describe the operation the frame belongs to; the receiver compares them
// with its own call.
type Header struct {
	Kind   Kind
	Op     uint8  // collective kind (collective/driver's numbering, driver.Kind)
	DType  uint8  // element type (collective/driver's numbering, driver.DType)
	RedOp  uint8  // reduction operation (collective/driver's numbering, driver.Op)
	Algo   uint8  // algorithm chosen by the sender
	Comm   uint64 // communicator id
	Seq    uint64 // operation sequence number in Comm; message number for point-to-point
	Tag    uint32 // step within the operation; user tag for point-to-point
	Root   int32  // root rank of rooted collectives; blamed rank of an abort
	Count  uint64 // element count of the whole operation as the sender called it
	MsgLen uint64 // bytes of the whole message this frame is part of
	Off    uint64 // offset of this frame's payload in the message
	Len    uint32 // payload bytes following this header
	Sig    uint32 // hash of the call an operation runs inside (a step of a hierarchical collective); 0: none
}

// Encode writes h into b, which must hold HeaderSize bytes.
func (h *Header) Encode(b []byte) {
	_ = b[HeaderSize-1]
	binary.LittleEndian.PutUint16(b[0:], Magic)
	b[2] = Version
	b[3] = uint8(h.Kind)
	b[4] = h.Op
	b[5] = h.DType
	b[6] = h.RedOp
	b[7] = h.Algo
	binary.LittleEndian.PutUint64(b[8:], h.Comm)
	binary.LittleEndian.PutUint64(b[16:], h.Seq)
	binary.LittleEndian.PutUint32(b[24:], h.Tag)
	binary.LittleEndian.PutUint32(b[28:], uint32(h.Root))
	binary.LittleEndian.PutUint64(b[32:], h.Count)
	binary.LittleEndian.PutUint64(b[40:], h.MsgLen)
	binary.LittleEndian.PutUint64(b[48:], h.Off)
	binary.LittleEndian.PutUint32(b[56:], h.Len)
	binary.LittleEndian.PutUint32(b[60:], h.Sig)
}

// ErrCorrupt is wrapped by every decoding error.
var ErrCorrupt = errors.New("wire: corrupt frame")

// Decode parses and validates a header from b (at least HeaderSize bytes).
func (h *Header) Decode(b []byte) error {
	if len(b) < HeaderSize {
		return fmt.Errorf("%w: header has %d bytes, want %d", ErrCorrupt, len(b), HeaderSize)
	}
	if m := binary.LittleEndian.Uint16(b[0:]); m != Magic {
		return fmt.Errorf("%w: bad magic %#04x (not a weft peer, or the stream lost its place)", ErrCorrupt, m)
	}
	if b[2] != Version {
		return fmt.Errorf("%w: frame version %d, this build speaks %d", ErrCorrupt, b[2], Version)
	}
	h.Kind = Kind(b[3])
	h.Op = b[4]
	h.DType = b[5]
	h.RedOp = b[6]
	h.Algo = b[7]
	h.Comm = binary.LittleEndian.Uint64(b[8:])
	h.Seq = binary.LittleEndian.Uint64(b[16:])
	h.Tag = binary.LittleEndian.Uint32(b[24:])
	h.Root = int32(binary.LittleEndian.Uint32(b[28:]))
	h.Count = binary.LittleEndian.Uint64(b[32:])
	h.MsgLen = binary.LittleEndian.Uint64(b[40:])
	h.Off = binary.LittleEndian.Uint64(b[48:])
	h.Len = binary.LittleEndian.Uint32(b[56:])
	h.Sig = binary.LittleEndian.Uint32(b[60:])
	switch h.Kind {
	case KindData:
		if h.Len > MaxPayload {
			return fmt.Errorf("%w: payload of %d bytes exceeds the limit of %d", ErrCorrupt, h.Len, MaxPayload)
		}
		if h.Off > h.MsgLen || uint64(h.Len) > h.MsgLen-h.Off {
			return fmt.Errorf("%w: payload [%d, %d) lies outside a message of %d bytes", ErrCorrupt, h.Off, h.Off+uint64(h.Len), h.MsgLen)
		}
	case KindAbort:
		if h.Len > 64<<10 {
			return fmt.Errorf("%w: abort reason of %d bytes", ErrCorrupt, h.Len)
		}
	case KindRecover:
		if h.Len > 64<<10 {
			return fmt.Errorf("%w: recovery message of %d bytes", ErrCorrupt, h.Len)
		}
	case KindHeartbeat, KindGoodbye:
		if h.Len != 0 {
			return fmt.Errorf("%w: %v frame with %d payload bytes", ErrCorrupt, h.Kind, h.Len)
		}
	default:
		return fmt.Errorf("%w: unknown frame kind %d", ErrCorrupt, uint8(h.Kind))
	}
	return nil
}
