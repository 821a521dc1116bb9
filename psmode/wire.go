package psmode

import "github.com/weft-hpc/weft/collective"

// Messages are point-to-point Sends of the collective package: a fixed
// header of int64 words on one tag, then (when header.n > 0) the float32
// payload on a second tag. Messages between a pair on one tag arrive in
// order, so the receiver reads a header and then posts the payload it
// announces.
const (
	tagReq      = 1 // worker -> server header
	tagReqData  = 2 // worker -> server payload
	tagResp     = 3 // server -> worker header
	tagRespData = 4 // server -> worker payload
	tagMigBase  = 16
)

// migration tags: one pair per key, so concurrent migrations between the
// same two servers cannot cross.
func tagMigHdr(key int) int  { return tagMigBase + 2*key }
func tagMigData(key int) int { return tagMigBase + 2*key + 1 }

// ops
const (
	opInit       = 1 // worker 0: initial value of a key (payload)
	opPush       = 2 // gradient (payload)
	opPull       = 3 // want the key at version >= h[hVersion]
	opMigrateOut = 4 // scheduler: send key to server rank h[hA]
	opMigrateIn  = 5 // scheduler: receive key from server rank h[hA]
	opBye        = 6 // worker done
	respPull     = 7 // key value (payload)
	respAck      = 8 // migration of key installed; h[hA] = pause ns
	respBye      = 9 // server done
)

// header words
const (
	hOp = iota
	hKey
	hStep
	hVersion
	hTable
	hN
	hA // op-specific: peer rank, pause, push queue ns
	hB // push service ns
	hC // pull queue ns
	hD // pull service ns
	hE // push count
	hLen
)

type header [hLen]int64

func (h *header) buf() collective.Buffer { return collective.Buf(h[:]) }
