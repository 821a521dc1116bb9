package collective

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/collective/nccl"
	"github.com/weft-hpc/weft/cuda"
)

// Calls on device memory.
//
// The front end checks, orders and reports them as it does calls on host
// memory; what differs is who moves the bytes:
//
//   - A backend that moves device memory itself says so with the optional
//     driver.DeviceConn, as database/sql finds optional driver interfaces.
//     When the world's backend is not one, a communicator's first
//     collective on device memory (collective, so every rank takes the same
//     decision) gathers every rank's device UUID and whether it can load
//     NCCL: when every rank has a GPU of its own and NCCL everywhere (and
//     WEFT_NCCL is not off), it bootstraps an NCCL communicator over the
//     host backend (nccl.New, nccl.Conn), and Split gives sub-communicators
//     theirs with ncclCommSplit.
//   - Every other case is staged through pinned host memory and the host
//     backend: several ranks on one GPU, NCCL missing, or a kind NCCL lacks
//     (Scan, Exscan). Elementwise collectives (AllReduce, Reduce, Broadcast,
//     Scan, Exscan) are cut into chunks of stageChunk bytes in three pinned
//     slots, so that chunk i+1's copy to the host, chunk i's host collective
//     and chunk i-1's copy back overlap (two copy streams); the others move
//     whole. Point-to-point calls on device memory are staged too, with
//     blocking copies.
//
// A copy that fails (a CUDA error) fails the communicator and names this
// rank: its peers, waiting for it in the host backend, learn of it there.

// stageChunk is the size of a staged chunk: large enough that a host
// collective runs at its bandwidth, small enough that three slots' copies
// overlap it. (A variable for the tests.)
var stageChunk = 4 << 20

// devState is a communicator's device side, made by its first collective
// on device memory.
type devState struct {
	dev  int
	conn driver.DeviceConn // runs device calls itself (NCCL); nil: staged
	path string            // "nccl", or "staged" and why
	st   *stager
}

// Device returns the CUDA device of this communicator's calls on device
// memory and how they run: "nccl", "staged: <why>", or the backend's name
// when it moves device memory itself; dev is -1 and path "" before the
// first collective on device memory.
func (c *Comm) Device() (dev int, path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.devs == nil {
		return c.device, ""
	}
	return c.devs.dev, c.devs.path
}

// place moves the buffers of a filled call to its device fields when they
// are device memory, after checking that they are all on the device, on
// one device, the communicator's. Empty buffers (a non-root's receive)
// take the other's place.
func (c *Comm) place(k driver.Kind, a *driver.Call, send, recv Buffer) error {
	if send.vec != nil || recv.vec != nil {
		return c.invalid(k, "a vector layout (collective.Vector) is for point-to-point calls only")
	}
	if send.mem == nil && recv.mem == nil {
		return nil
	}
	dev := -1
	for _, b := range []Buffer{send, recv} {
		switch {
		case b.mem != nil && dev >= 0 && b.mem.Device() != dev:
			return c.invalid(k, "send is on device %d, recv on device %d", dev, b.mem.Device())
		case b.mem != nil:
			dev = b.mem.Device()
		case b.bytes() > 0:
			return c.invalid(k, "one buffer is device memory, the other host memory: a call's buffers are all on the device or all on the host")
		}
	}
	c.mu.Lock()
	if c.device < 0 {
		c.device = dev
	}
	mine := c.device
	c.mu.Unlock()
	if dev != mine {
		return c.invalid(k, "buffers on device %d: this communicator's calls on device memory use device %d", dev, mine)
	}
	mem := func(b Buffer) (driver.DeviceMem, error) {
		if b.mem == nil {
			return driver.DeviceMem{}, nil
		}
		p, err := b.mem.Range(b.off, b.n)
		if err != nil {
			return driver.DeviceMem{}, c.invalid(k, "%v", err)
		}
		return driver.DeviceMem{Ptr: uintptr(p), Bytes: b.n}, nil
	}
	var err error
	if a.SendDev, err = mem(send); err != nil {
		return err
	}
	if a.RecvDev, err = mem(recv); err != nil {
		return err
	}
	a.OnDevice, a.Device, a.Send, a.Recv = true, dev, nil, nil
	return nil
}

// runDevice runs a collective on device memory; it is called in the
// communicator's order, like conn.Run.
func (c *Comm) runDevice(ctx context.Context, a *driver.Call) error {
	d, err := c.deviceState(ctx, a.Device)
	if err != nil {
		return err
	}
	if d.conn != nil && d.conn.DeviceCall(a) {
		return d.conn.Run(ctx, a)
	}
	if d.st == nil {
		st, err := newStager(a.Device)
		if err != nil {
			return c.deviceFailure(a.Kind, err)
		}
		c.mu.Lock()
		d.st = st
		c.mu.Unlock()
	}
	if err := d.st.run(ctx, c.conn, a); err != nil {
		if _, ok := err.(*driver.Failure); ok {
			return err
		}
		return c.deviceFailure(a.Kind, err)
	}
	return nil
}

// deviceFailure is the failure of a call whose device work failed here:
// it names this rank, and tells the peers (they wait in the host backend).
func (c *Comm) deviceFailure(k driver.Kind, err error) error {
	f := &driver.Failure{Kind: ErrAborted, Culprit: c.me, Origin: c.me,
		Msg: fmt.Sprintf("rank %d: %v on device memory failed", c.me, k), Cause: err}
	c.conn.Abort(f)
	return f
}

// deviceState returns the communicator's device side, making it on the
// first call: collective over the host backend.
func (c *Comm) deviceState(ctx context.Context, dev int) (*devState, error) {
	c.mu.Lock()
	d := c.devs
	c.mu.Unlock()
	if d != nil {
		return d, nil
	}
	d = &devState{dev: dev}
	if dc, ok := c.conn.(driver.DeviceConn); ok && dc.Device() == dev {
		d.conn, d.path = dc, c.conn.Name()
	} else if err := c.chooseDevicePath(ctx, d); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.devs = d
	c.mu.Unlock()
	if c.rank == 0 {
		c.dom.logger.Debug("weft: calls on device memory", "device", dev, "path", d.path)
	}
	return d, nil
}

// The record each rank contributes to the choice of a device path.
const (
	recUUID  = 0  // [16]byte: the device's UUID
	recFlags = 16 // byte: flag*
	recPID   = 17 // uint64: the process id (fake devices are one process's)
	recLen   = 25

	flagNCCL  = 1 // NCCL loads here
	flagAllow = 2 // WEFT_NCCL is not off
	flagFake  = 4 // the device layer is the host-memory fake
)

// chooseDevicePath agrees with every rank on how device calls run, and
// makes the NCCL backend when they all can use it.
func (c *Comm) chooseDevicePath(ctx context.Context, d *devState) error {
	props, err := cuda.Properties(d.dev)
	if err != nil {
		return c.deviceFailure(driver.AllGather, err)
	}
	ncclErr := nccl.Available()
	allow, err := paramNCCL.get()
	if err != nil {
		return c.deviceFailure(driver.AllGather, err)
	}
	mine := make([]byte, recLen)
	copy(mine[recUUID:], props.UUID[:])
	if ncclErr == nil {
		mine[recFlags] |= flagNCCL
	}
	if allow != "off" {
		mine[recFlags] |= flagAllow
	}
	if props.Fake {
		mine[recFlags] |= flagFake
	}
	binary.LittleEndian.PutUint64(mine[recPID:], uint64(os.Getpid()))
	all := make([]byte, recLen*c.size)
	boot := hostBoot{c.conn}
	if err := boot.AllGather(ctx, mine, all); err != nil {
		return err
	}
	why := ""
	seen := map[string]int{}
	for r := range c.size {
		rec := all[r*recLen : (r+1)*recLen]
		uuid := string(rec[recUUID : recUUID+16])
		switch {
		case why != "":
		case rec[recFlags]&flagAllow == 0:
			why = fmt.Sprintf("WEFT_NCCL=off on rank %d", r)
		case rec[recFlags]&flagNCCL == 0:
			why = fmt.Sprintf("rank %d cannot load NCCL", r)
		case rec[recFlags]&flagFake != 0 && binary.LittleEndian.Uint64(rec[recPID:]) != binary.LittleEndian.Uint64(all[recPID:]):
			why = "fake devices in several processes"
		default:
			if q, dup := seen[uuid]; dup {
				why = fmt.Sprintf("ranks %d and %d share a GPU", q, r)
			}
			seen[uuid] = r
		}
	}
	if why != "" {
		d.path = "staged: " + why
		return nil
	}
	comm, err := nccl.New(ctx, boot, nccl.WithDevice(d.dev))
	if err != nil {
		return &driver.Failure{Kind: ErrAborted, Culprit: -1, Origin: c.me,
			Msg: fmt.Sprintf("rank %d: creating the NCCL communicator for device %d", c.me, d.dev), Cause: err}
	}
	conn, err := nccl.NewConn(comm, c.timeout)
	if err != nil {
		comm.Abort()
		return c.deviceFailure(driver.AllGather, err)
	}
	d.conn, d.path = conn, "nccl"
	return nil
}

// hostBoot runs NCCL's bootstrap over a host backend.
type hostBoot struct{ conn driver.Conn }

func (b hostBoot) Rank() int { return b.conn.Rank() }
func (b hostBoot) Size() int { return b.conn.Size() }

func (b hostBoot) AllGather(ctx context.Context, send, recv []byte) error {
	return b.conn.Run(ctx, &driver.Call{Kind: driver.AllGather, DType: Uint8, Send: send, Recv: recv, Count: len(send)})
}

func (b hostBoot) Broadcast(ctx context.Context, buf []byte, root int) error {
	return b.conn.Run(ctx, &driver.Call{Kind: driver.Broadcast, DType: Uint8, Send: buf, Recv: buf, Root: root, Count: len(buf)})
}

// splitDevice gives the sub-communicator of a Split its NCCL backend from
// the parent's (ncclCommSplit, collective over the parent); a parent
// without one leaves the child to make its own on its first device call.
func (c *Comm) splitDevice(ctx context.Context, color int, members []int) (*devState, error) {
	c.mu.Lock()
	d := c.devs
	c.mu.Unlock()
	if d == nil || d.conn == nil || d.path != "nccl" {
		return nil, nil
	}
	sub, err := d.conn.Split(ctx, color, members)
	if err != nil || sub == nil {
		return nil, err
	}
	return &devState{dev: d.dev, conn: sub.(driver.DeviceConn), path: "nccl"}, nil
}

// closeDevice releases the device side.
func (c *Comm) closeDevice() error {
	c.mu.Lock()
	d := c.devs
	c.devs = nil
	c.mu.Unlock()
	if d == nil {
		return nil
	}
	var err error
	if d.conn != nil && d.conn != c.conn {
		err = d.conn.Close()
	}
	if d.st != nil {
		d.st.close()
	}
	return err
}

// abortDevice aborts the device backend, which ends its calls in flight.
func (c *Comm) abortDevice(f *driver.Failure) {
	c.mu.Lock()
	d := c.devs
	c.mu.Unlock()
	if d != nil && d.conn != nil && d.conn != c.conn {
		d.conn.Abort(f)
	}
}
