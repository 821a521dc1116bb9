package psmode

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"sync"
	"time"
)

// PSLDConfig tunes the balancer (doc.go gives the method). The zero value
// means the defaults in parentheses.
type PSLDConfig struct {
	// Window is the number of steps a trial runs and its baseline spans (5).
	Window int
	// Straggler: a server whose service time per byte exceeds this multiple
	// of the median of the others is reported as a straggler (1.5).
	Straggler float64
	// Imbalance: rebalance when the predicted slowest server exceeds the
	// balanced time by this fraction (0.25).
	Imbalance float64
	// Alpha is the EWMA weight of a new measurement (0.3).
	Alpha float64
	// Keep: a rebalancing trial is rolled back when the window's median
	// step time is worse than the baseline's by more than this (0.02).
	Keep float64
	// Gain: an exploration trial (scale out, scale in) is kept only when it
	// improves the median step time by at least this (0.03).
	Gain float64
	// Cooldown is the number of steps after a trial before the next
	// decision (3); it doubles after each rollback, up to 16 times.
	Cooldown int
	// ExploreEvery is the number of quiet steps after which an exploration
	// may be tried, with probability ExploreProb (20, 0.5).
	ExploreEvery int
	ExploreProb  float64
	// MaxMoves bounds the keys moved in one decision (8).
	MaxMoves int
	// Warmup is the number of first steps whose measurements are ignored
	// (first touch of buffers), also applied after every table change (2).
	Warmup int
	// Seed of the exploration's random choices (1).
	Seed int64
}

// orDefault sets *v to d when it holds its type's zero value.
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

func (p PSLDConfig) withDefaults() PSLDConfig {
	orDefault(&p.Window, 5)
	orDefault(&p.Straggler, 1.5)
	orDefault(&p.Imbalance, 0.25)
	orDefault(&p.Alpha, 0.3)
	orDefault(&p.Keep, 0.02)
	orDefault(&p.Gain, 0.03)
	orDefault(&p.Cooldown, 3)
	orDefault(&p.ExploreEvery, 20)
	orDefault(&p.ExploreProb, 0.5)
	orDefault(&p.MaxMoves, 8)
	orDefault(&p.Warmup, 2)
	if p.Seed == 0 {
		p.Seed = 1
	}
	return p
}

// Record is what the scheduler measured and decided, for reports and
// plots. Step i is the iteration that ended with Steps[i].
type Record struct {
	mu     sync.Mutex
	Steps  []StepStat
	Events []Event
	// Pauses are the migrations' pauses: from the scheduler's order to the
	// key installed on its new server.
	Pauses []time.Duration
}

// StepStat is one iteration as the scheduler saw it.
type StepStat struct {
	Step    int64
	Time    time.Duration // iteration time on worker 0
	Table   int64         // table version used
	Active  int           // servers owning keys
	Servers []ServerStat  // per server index
}

// ServerStat sums a server's per-key measurements over one step.
type ServerStat struct {
	Bytes                  int64
	PushQueue, PushService time.Duration
	PullQueue, PullService time.Duration
	Pushes                 int64
	CostPerByte            float64 // EWMA of push service ns per byte
}

// Event is a detection or a decision of the balancer.
type Event struct {
	Step int64
	Kind string // "straggler", "rebalance", "scale-out", "scale-in", "keep", "rollback"
	Text string
}

// Snapshot returns a copy of the record.
func (r *Record) Snapshot() Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Record{Steps: slices.Clone(r.Steps), Events: slices.Clone(r.Events), Pauses: slices.Clone(r.Pauses)}
}

// scheduler is PSLD's decision maker, inside worker 0.
type scheduler struct {
	cfg    *Config
	p      PSLDConfig
	layout *Layout
	table  Table
	rng    *rand.Rand
	rec    Record

	mu    sync.Mutex
	cur   []ServerStat // this step's sums, filled by the receivers
	cost  []float64    // EWMA ns per byte, 0 = unknown
	strag []bool
	jumps []int // samples in a row far from the average

	times     []time.Duration // iteration times
	trial     *trial
	lastMove  int64 // step of the last table change
	regime    int64 // step of the last change point in a server's speed
	cooldown  int
	coolUntil int64
}

type trial struct {
	kind  string
	prev  Table
	start int64 // first step measured under the new table
	base  time.Duration
}

func newScheduler(cfg *Config, layout *Layout, t Table) *scheduler {
	n := cfg.serverRanks()
	return &scheduler{cfg: cfg, p: cfg.PSLD, layout: layout, table: t.Clone(),
		rng: rand.New(rand.NewSource(cfg.PSLD.Seed)), cur: make([]ServerStat, n),
		cost: make([]float64, n), strag: make([]bool, n), jumps: make([]int, n), cooldown: cfg.PSLD.Cooldown}
}

// observe adds a key's statistics that came with a pull response.
func (s *scheduler) observe(srv, k int, h *header) {
	s.mu.Lock()
	st := &s.cur[srv]
	st.Bytes += int64(s.layout.Keys[k].Len) * 4
	st.PushQueue += time.Duration(h[hA])
	st.PushService += time.Duration(h[hB])
	st.PullQueue += time.Duration(h[hC])
	st.PullService += time.Duration(h[hD])
	st.Pushes += h[hE]
	s.mu.Unlock()
}

func (s *scheduler) ack(srv, k int, pause time.Duration) {
	s.rec.mu.Lock()
	s.rec.Pauses = append(s.rec.Pauses, pause)
	s.rec.mu.Unlock()
}

func (s *scheduler) event(step int64, kind, f string, a ...any) {
	s.rec.mu.Lock()
	s.rec.Events = append(s.rec.Events, Event{Step: step, Kind: kind, Text: fmt.Sprintf(f, a...)})
	s.rec.mu.Unlock()
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	c := slices.Clone(d)
	slices.Sort(c)
	return c[len(c)/2]
}

func medianF(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	c := slices.Clone(x)
	slices.Sort(c)
	if len(c)%2 == 0 {
		return (c[len(c)/2-1] + c[len(c)/2]) / 2
	}
	return c[len(c)/2]
}

// decide ends step `step` (1-based count of steps done) that took d, and
// returns a new table when the balancer changes it.
func (s *scheduler) decide(step int64, d time.Duration) (Table, bool) {
	s.mu.Lock()
	cur := s.cur
	s.cur = make([]ServerStat, len(cur))
	s.mu.Unlock()
	loads := s.table.Loads(s.layout, len(cur))
	active := 0
	for i := range cur {
		if loads[i] > 0 {
			active++
		}
		settled := step > int64(s.p.Warmup) && step > s.lastMove+1
		if settled && cur[i].Bytes > 0 && cur[i].PushService > 0 {
			c := float64(cur[i].PushService) / float64(cur[i].Bytes)
			out := s.cost[i] > 0 && (c > s.p.Straggler*s.cost[i] || c*s.p.Straggler < s.cost[i])
			if out {
				s.jumps[i]++
			} else {
				s.jumps[i] = 0
			}
			if s.cost[i] == 0 || s.jumps[i] >= 2 {
				// First sample, or a change point (two samples in a row
				// far from the average): start over from it.
				if s.cost[i] != 0 {
					s.regime = step
				}
				s.cost[i], s.jumps[i] = c, 0
			} else if !out {
				s.cost[i] = s.p.Alpha*c + (1-s.p.Alpha)*s.cost[i]
			}
		}
		cur[i].CostPerByte = s.cost[i]
	}
	s.times = append(s.times, d)
	s.rec.mu.Lock()
	s.rec.Steps = append(s.rec.Steps, StepStat{Step: step, Time: d, Table: s.table.Version, Active: active, Servers: cur})
	s.rec.mu.Unlock()
	s.detect(step, loads)
	if s.cfg.plan != nil {
		next, ok := s.cfg.plan(step, s.table.Clone())
		if !ok {
			return Table{}, false
		}
		return s.switchTo(step, next), true
	}

	W := int64(s.p.Window)
	if t := s.trial; t != nil {
		if s.regime > t.start-1 {
			// A server changed speed during the trial: the comparison
			// means nothing. Keep the table and decide afresh.
			s.trial = nil
			s.event(step, "keep", "%s kept without verdict: a server changed speed during the trial", t.kind)
			return Table{}, false
		}
		if step < t.start+W {
			return Table{}, false
		}
		m := median(s.times[t.start:])
		kept := false
		if t.kind == "rebalance" {
			kept = float64(m) <= float64(t.base)*(1+s.p.Keep)
		} else {
			kept = float64(m) <= float64(t.base)*(1-s.p.Gain)
		}
		s.trial = nil
		if kept {
			s.cooldown = s.p.Cooldown
			s.coolUntil = step + int64(s.cooldown)
			s.event(step, "keep", "%s kept: median step %v vs %v before", t.kind, m.Round(time.Microsecond), t.base.Round(time.Microsecond))
			return Table{}, false
		}
		s.cooldown = min(2*s.cooldown, 16*s.p.Cooldown)
		s.coolUntil = step + int64(s.cooldown)
		back := t.prev.Clone()
		back.Version = s.table.Version + 1
		s.event(step, "rollback", "%s rolled back: median step %v vs %v before; %s", t.kind, m.Round(time.Microsecond), t.base.Round(time.Microsecond), back)
		return s.switchTo(step, back), true
	}
	// The baseline: up to Window steps, none carrying a migration (the
	// step after a change) or from before the last change point.
	first := max(s.lastMove+2, s.regime, int64(s.p.Warmup)+1, step-W+1)
	if step < s.coolUntil || step-first+1 < 2 {
		return Table{}, false
	}
	base := median(s.times[first-1:])
	// Exploitation: move keys off the servers predicted slowest.
	if next, ok := s.rebalance(s.table, s.activeSet(loads), s.p.Imbalance); ok {
		s.trial = &trial{kind: "rebalance", prev: s.table.Clone(), start: step + 1, base: base}
		s.event(step, "rebalance", "%d keys move: %s", len(moves(s.table, next)), next)
		return s.switchTo(step, next), true
	}
	// Exploration: now and then try another number of servers.
	if step-max(s.lastMove, s.regime) < int64(s.p.ExploreEvery) || s.rng.Float64() >= s.p.ExploreProb {
		return Table{}, false
	}
	var cands []func() (Table, string, bool)
	for i := range loads {
		if loads[i] == 0 {
			cands = append(cands, func() (Table, string, bool) { return s.scaleOut(i, loads) })
			break
		}
	}
	for i := range loads {
		if loads[i] > 0 && s.strag[i] && active > 1 {
			cands = append(cands, func() (Table, string, bool) { return s.scaleIn(i, loads) })
		}
	}
	if len(cands) == 0 {
		return Table{}, false
	}
	next, kind, ok := cands[s.rng.Intn(len(cands))]()
	if !ok {
		return Table{}, false
	}
	s.trial = &trial{kind: kind, prev: s.table.Clone(), start: step + 1, base: base}
	s.event(step, kind, "%d keys move: %s", len(moves(s.table, next)), next)
	return s.switchTo(step, next), true
}

func (s *scheduler) switchTo(step int64, t Table) Table {
	t.Version = s.table.Version + 1
	s.table = t.Clone()
	// The step right after a switch carries the migration: measure from
	// the one after it.
	if s.trial != nil {
		s.trial.start = step + 1
	}
	s.lastMove = step
	return t
}

// detect marks stragglers: cost per byte above Straggler times the median
// of the other active servers.
func (s *scheduler) detect(step int64, loads []int) {
	for i := range s.cost {
		if s.cost[i] == 0 || loads[i] == 0 {
			continue
		}
		var others []float64
		for j := range s.cost {
			if j != i && s.cost[j] > 0 && loads[j] > 0 {
				others = append(others, s.cost[j])
			}
		}
		if len(others) == 0 {
			continue
		}
		m := medianF(others)
		slow := s.cost[i] > s.p.Straggler*m
		if slow && !s.strag[i] {
			s.event(step, "straggler", "server %d serves %.1fx slower per byte than the median", i, s.cost[i]/m)
		}
		s.strag[i] = slow
	}
}

func (s *scheduler) activeSet(loads []int) []bool {
	a := make([]bool, len(loads))
	for i, l := range loads {
		a[i] = l > 0
	}
	return a
}

// costs returns each server's cost per byte, unknown ones at the median.
func (s *scheduler) costs() []float64 {
	var known []float64
	for _, c := range s.cost {
		if c > 0 {
			known = append(known, c)
		}
	}
	m := medianF(known)
	if m == 0 {
		m = 1
	}
	c := slices.Clone(s.cost)
	for i := range c {
		if c[i] == 0 {
			c[i] = m
		}
	}
	return c
}

// rebalance moves keys, one at a time, from the server predicted slowest
// (load times cost per byte) to the fastest while that lowers the maximum,
// when the maximum exceeds the balanced time by more than slack.
func (s *scheduler) rebalance(t Table, active []bool, slack float64) (Table, bool) {
	c := s.costs()
	next := t.Clone()
	loads := next.Loads(s.layout, len(c))
	pred := func(i int) float64 { return float64(loads[i]) * c[i] }
	total, inv := 0.0, 0.0
	for i := range c {
		if active[i] {
			total += float64(loads[i])
			inv += 1 / c[i]
		}
	}
	if inv == 0 {
		return t, false
	}
	balanced := total / inv
	moved := 0
	for moved < s.p.MaxMoves {
		hi, lo := -1, -1
		for i := range c {
			if !active[i] {
				continue
			}
			if hi < 0 || pred(i) > pred(hi) {
				hi = i
			}
			if lo < 0 || pred(i) < pred(lo) {
				lo = i
			}
		}
		if hi == lo || pred(hi) <= balanced*(1+slack) && moved == 0 {
			break
		}
		best, bestMax := -1, pred(hi)
		for k, o := range next.Owner {
			if o != hi {
				continue
			}
			n := float64(s.layout.Keys[k].Len)
			m := math.Max(pred(hi)-n*c[hi], pred(lo)+n*c[lo])
			if m < bestMax*(1-1e-9) {
				best, bestMax = k, m
			}
		}
		if best < 0 {
			break
		}
		next.Owner[best] = lo
		n := s.layout.Keys[best].Len
		loads[hi] -= n
		loads[lo] += n
		moved++
	}
	return next, moved > 0
}

func (s *scheduler) scaleOut(idle int, loads []int) (Table, string, bool) {
	a := s.activeSet(loads)
	a[idle] = true
	next, ok := s.rebalance(s.table, a, 0)
	return next, "scale-out", ok
}

func (s *scheduler) scaleIn(drain int, loads []int) (Table, string, bool) {
	c := s.costs()
	next := s.table.Clone()
	l := slices.Clone(loads)
	l[drain] = 0
	for k, o := range next.Owner {
		if o != drain {
			continue
		}
		to := -1
		for i := range l {
			if i != drain && loads[i] > 0 && (to < 0 || float64(l[i])*c[i] < float64(l[to])*c[to]) {
				to = i
			}
		}
		if to < 0 {
			return s.table, "", false
		}
		next.Owner[k] = to
		l[to] += s.layout.Keys[k].Len
	}
	return next, "scale-in", true
}
