//go:build mpi

package mpi

/*
#include <stdlib.h>
#include "weft_mpi.h"
*/
import "C"

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// The watchdog. MPI cannot interrupt a call, nor tell a stopped rank from a
// slow one, and a job whose rank is stopped, hung, or never calls the
// collective the others wait in would wait for ever. So one goroutine per
// process looks at the collectives inside MPI every watchTick; a rank
// whose collective has been inside MPI longer than its world's timeout
// (WEFT_TIMEOUT) plus an allowance for its size (limit) asks the other
// ranks of the communicator what they are doing, prints its call and their
// answers on stderr, and ends the job with MPI_Abort (exit status
// abortCode). It cannot see progress inside MPI: what it measures is the
// call's duration. The same goroutine answers the other ranks' questions,
// on a duplicate of MPI_COMM_WORLD of its own, so a rank that does not
// answer within a second or so is stopped or stuck where Go cannot run; one
// that answers but is not in the call has not joined it.

const (
	watchTick  = 100 * time.Millisecond // how often the watchdog looks, and answers questions
	abortCode  = 124                    // the exit status of a job the watchdog ends (as timeout(1)'s)
	answerMax  = 512                    // bytes of one answer
	abortGrace = 250 * time.Millisecond // between the last line on stderr and MPI_Abort
	// slowest is the transfer rate below which a call counts as stuck: a
	// call may take the timeout plus its bytes at this rate, so that a
	// large collective on a slow network is not mistaken for a hung one.
	slowest = 100e6 // bytes per second
)

// dog is the process's watchdog: one goroutine while any communicator is
// open, and the communicator of its questions.
var dog struct {
	mu    sync.Mutex
	conns map[*conn]struct{} // open conns
	stop  chan struct{}      // closes to stop the goroutine; nil when none runs
	done  chan struct{}      // closed when it has stopped

	comm  C.MPI_Comm // questions and answers: made with MPI's first Open, freed before MPI_Finalize
	made  bool
	fired atomic.Bool // a watchdog of this process is ending the job
	host  string
}

// watchSetup makes the watchdog's communicator: a duplicate of
// MPI_COMM_WORLD made right after MPI_Init, in the first Open of every
// rank (collective, like Open).
func watchSetup() error {
	if rc := C.weft_comm_dup(C.weft_comm_world(), &dog.comm); rc != 0 {
		return failure("MPI_Comm_dup of MPI_COMM_WORLD for the watchdog", rc)
	}
	dog.made = true
	dog.host, _ = os.Hostname()
	return nil
}

// watchFree frees the watchdog's communicator; the goroutine has stopped.
func watchFree() {
	if dog.made {
		C.weft_comm_free(&dog.comm)
		dog.made = false
	}
}

// watchAdd registers c, and starts the goroutine if none runs.
func watchAdd(c *conn) {
	dog.mu.Lock()
	defer dog.mu.Unlock()
	if dog.conns == nil {
		dog.conns = make(map[*conn]struct{})
	}
	dog.conns[c] = struct{}{}
	if dog.stop == nil && dog.made {
		dog.stop, dog.done = make(chan struct{}), make(chan struct{})
		go watch(dog.stop, dog.done)
	}
}

// watchRemove forgets c and, when it was the last conn, stops the
// goroutine and waits for it (it must not call MPI after MPI_Finalize).
func watchRemove(c *conn) {
	dog.mu.Lock()
	delete(dog.conns, c)
	var done chan struct{}
	if len(dog.conns) == 0 && dog.stop != nil {
		close(dog.stop)
		done = dog.done
		dog.stop, dog.done = nil, nil
	}
	dog.mu.Unlock()
	if done != nil {
		<-done
	}
}

// watchStop forgets every conn, stops the goroutine and frees the
// watchdog's communicator, before MPI_Finalize.
func watchStop() {
	dog.mu.Lock()
	clear(dog.conns)
	dog.mu.Unlock()
	watchRemove(nil)
	watchFree()
}

// sighting is a collective the watchdog has seen inside MPI: since when
// (at the tick it was first seen: it started less than a tick before) and
// how long it may take.
type sighting struct {
	id    int64
	at    time.Time
	limit time.Duration
}

func watch(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(watchTick)
	defer t.Stop()
	seen := map[*conn]sighting{}
	for {
		var now time.Time
		select {
		case <-stop:
			return
		case now = <-t.C:
		}
		answerQuestions()
		dog.mu.Lock()
		cs := make([]*conn, 0, len(dog.conns))
		for c := range dog.conns {
			cs = append(cs, c)
		}
		dog.mu.Unlock()
		next := make(map[*conn]sighting, len(cs))
		for _, c := range cs {
			id := c.running.Load() >> 1
			if id == 0 || c.w.set.timeout <= 0 {
				continue
			}
			s, ok := seen[c]
			if !ok || s.id != id {
				s = sighting{id: id, at: now, limit: c.limit()}
			}
			next[c] = s
			if waited := now.Sub(s.at); waited >= s.limit && dog.fired.CompareAndSwap(false, true) {
				go c.fire(waited)
			}
		}
		seen = next
	}
}

// limit is how long c's running collective may stay inside MPI: the
// timeout, plus its bytes at the slowest rate.
func (c *conn) limit() time.Duration {
	c.watch.mu.Lock()
	n := c.watch.bytes
	c.watch.mu.Unlock()
	return c.w.set.timeout + time.Duration(float64(n)/slowest*float64(time.Second))
}

// state is what c is doing, for the other ranks' questions.
func (c *conn) state() (state byte, seq int64, text string) {
	c.watch.mu.Lock()
	r, s, ran := c.running.Load(), c.watch.cur, c.watch.ran
	c.watch.mu.Unlock()
	switch {
	case r != 0 && r&1 == 1:
		return stateCheck, s.Seq, fmt.Sprintf("in the signature check of op #%d, %v", s.Seq, s)
	case r != 0:
		return stateCall, s.Seq, fmt.Sprintf("inside %s, op #%d: %v", mpiName[s.Kind], s.Seq, s)
	case ran:
		return stateIdle, s.Seq, fmt.Sprintf("alive, in no collective of this communicator: its last, op #%d %v, has returned", s.Seq, s)
	}
	return stateIdle, -1, "alive, and has called no collective on this communicator"
}

// answerQuestions answers every question that has arrived: a rank asks
// about the communicator whose key it sends.
func answerQuestions() {
	for {
		var q [2]C.int64_t
		var src, found C.int
		if rc := C.weft_watch_poll(dog.comm, &q[0], &src, &found); rc != 0 || found == 0 {
			return
		}
		key := uint64(q[0])
		st, seq, text := byte(stateNone), int64(-1), "alive, but has no open communicator with the asker's (it closed it, or has not made it yet)"
		dog.mu.Lock()
		for c := range dog.conns {
			if c.key == key {
				st, seq, text = c.state()
				break
			}
		}
		dog.mu.Unlock()
		a := fmt.Sprintf("%c %d pid %d on %s: %s", st, seq, os.Getpid(), dog.host, text)
		if len(a) > answerMax {
			a = a[:answerMax]
		}
		b := []byte(a)
		C.weft_watch_answer(dog.comm, src, (*C.char)(unsafe.Pointer(&b[0])), C.int(len(b)))
	}
}

// ask sends the question about the communicator key to the world ranks
// and returns their answers ("" for none) after at most wait.
func ask(ranks []int, key uint64, me int, wait time.Duration) []string {
	n := len(ranks)
	out := make([]string, n)
	if n == 0 {
		return out
	}
	// C memory: receives that no answer completes stay posted after the
	// call returns, and so stays this.
	ans := (*C.char)(C.malloc(C.size_t(n * answerMax)))
	lens := (*C.int)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.int(0)))))
	cr := (*C.int)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.int(0)))))
	defer C.free(unsafe.Pointer(lens))
	defer C.free(unsafe.Pointer(cr))
	rs := unsafe.Slice(cr, n)
	for i, r := range ranks {
		rs[i] = C.int(r)
	}
	q := [2]C.int64_t{C.int64_t(key), C.int64_t(me)}
	C.weft_watch_ask(dog.comm, C.int(n), cr, &q[0], ans, answerMax, lens, C.double(wait.Seconds()))
	ls, all := unsafe.Slice(lens, n), unsafe.Slice((*byte)(unsafe.Pointer(ans)), n*answerMax)
	for i, l := range ls {
		if l > 0 {
			out[i] = string(all[i*answerMax : i*answerMax+int(l)])
		}
	}
	return out
}

// fire ends the job: c's collective has been inside MPI for waited, past
// its limit. It prints the call, and what the communicator's other ranks
// say, on stderr, then calls MPI_Abort. It does not return.
func (c *conn) fire(waited time.Duration) {
	c.watch.mu.Lock()
	s, r := c.watch.cur, c.running.Load()
	c.watch.mu.Unlock()
	where := mpiName[s.Kind]
	if r&1 == 1 {
		where = "the signature check (MPI_Allreduce) before " + where
	}
	var others []int
	for i, w := range c.world {
		if i != c.rank {
			others = append(others, w)
		}
	}
	wait := min(max(c.w.set.timeout/4, 500*time.Millisecond), 5*time.Second)
	me := c.world[c.rank]
	// Each line names the rank that writes it: the launcher may interleave
	// the lines of ranks whose watchdogs fire together.
	var b strings.Builder
	fmt.Fprintf(&b, "weft: mpi backend: rank %d (pid %d on %s) has waited %v in %s, op #%d on a communicator of %d ranks: %v; the limit is %v (WEFT_TIMEOUT %v",
		me, os.Getpid(), dog.host, waited.Round(time.Millisecond), where, s.Seq, c.size, s, c.limit().Round(time.Millisecond), c.w.set.timeout)
	if c.limit() > c.w.set.timeout {
		fmt.Fprintf(&b, ", plus the call's bytes at %.0f MB/s", slowest/1e6)
	}
	fmt.Fprintf(&b, "). MPI cannot interrupt the call: rank %d ends the job with MPI_Abort (exit status %d) once the other ranks have said what they do (ranks are world ranks)\n", me, abortCode)
	os.Stderr.WriteString(b.String()) // now: the launcher forwards it while this rank asks

	answers := ask(others, c.key, me, wait)
	b.Reset()
	var silent, absent []string
	for i, w := range others {
		st, seq, text := parseAnswer(answers[i])
		switch {
		case text == "":
			fmt.Fprintf(&b, "weft: mpi backend: rank %d, asked by rank %d: no answer within %v: stopped (SIGSTOP), or stuck where its Go runtime cannot run\n", w, me, wait)
			silent = append(silent, fmt.Sprint(w))
			continue
		case (st == stateCall || st == stateCheck) && seq >= s.Seq:
			// In this op, or past it (MPI's algorithm let it finish).
		default:
			absent = append(absent, fmt.Sprint(w))
		}
		fmt.Fprintf(&b, "weft: mpi backend: rank %d, asked by rank %d: %s\n", w, me, text)
	}
	switch {
	case len(silent) > 0:
		fmt.Fprintf(&b, "weft: mpi backend: rank %d's watchdog: %s did not answer: the likely cause\n", me, ranks(silent))
	case len(absent) > 0:
		fmt.Fprintf(&b, "weft: mpi backend: rank %d's watchdog: %s answered but did not join op #%d: the likely cause\n", me, ranks(absent), s.Seq)
	case len(others) > 0:
		fmt.Fprintf(&b, "weft: mpi backend: rank %d's watchdog: every rank is inside op #%d: MPI itself makes no progress (a broken link, or the library)\n", me, s.Seq)
	}
	os.Stderr.WriteString(b.String())
	// MPI_Abort's launcher may end the job before it forwards what the
	// ranks wrote last (MPICH's Hydra was seen to): give it a moment.
	time.Sleep(abortGrace)
	C.weft_abort(C.weft_comm_world(), abortCode)
	select {} // MPI_Abort does not return
}

func ranks(rs []string) string {
	if len(rs) == 1 {
		return "rank " + rs[0]
	}
	return "ranks " + strings.Join(rs, ", ")
}
