package main

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"

	"github.com/spf13/pflag"
)

// Numeric flags are checked as they are parsed: a value out of the flag's
// range is the flag's error, before any work starts, in pflag's words
// (invalid argument "-5" for "--steps" flag: must be between 1 and
// 1000000000). Seeds, where every value is a seed, stay plain pflag
// flags; every other numeric flag is one of these (TestNumericFlags checks
// it).

// maxCount bounds counts that have no natural limit (steps, epochs,
// iterations): far beyond any run, small enough that no product with
// another count overflows.
const maxCount = 1_000_000_000

// maxRanks bounds rank counts and indices of a launched job; maxLocal
// bounds goroutine ranks in one process (--local, --ranks).
const (
	maxRanks = 1 << 20
	maxLocal = 1024
)

// rangeValue is an integer flag with a closed range.
type rangeValue[T int | int64] struct {
	p      *T
	lo, hi T
}

// intFlag registers an int flag --name (and -short, unless empty) that
// accepts lo..hi.
func intFlag(fs *pflag.FlagSet, p *int, name, short string, def, lo, hi int, usage string) {
	*p = def
	fs.VarP(&rangeValue[int]{p, lo, hi}, name, short, usage)
}

// int64Flag is intFlag for an int64.
func int64Flag(fs *pflag.FlagSet, p *int64, name, short string, def, lo, hi int64, usage string) {
	*p = def
	fs.VarP(&rangeValue[int64]{p, lo, hi}, name, short, usage)
}

func (v *rangeValue[T]) Set(s string) error {
	n, err := parseInt(s, int64(v.lo), int64(v.hi))
	if err != nil {
		return err
	}
	*v.p = T(n)
	return nil
}

func (v *rangeValue[T]) String() string { return strconv.FormatInt(int64(*v.p), 10) }
func (v *rangeValue[T]) Type() string   { return "int" }

func parseInt(s string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("want an integer from %d to %s", lo, bound(hi))
	}
	return n, nil
}

// bound writes a large power of two as 2^k (the node limit reads 2^40,
// not 1099511627776).
func bound(n int64) string {
	if n >= 1<<30 && n&(n-1) == 0 {
		return fmt.Sprintf("2^%d", bits.TrailingZeros64(uint64(n)))
	}
	return strconv.FormatInt(n, 10)
}

// span is a float flag's range: lo to hi, each end included unless open.
// NaN and infinities are never in one.
type span struct {
	lo, hi         float64
	openLo, openHi bool
}

// upTo is [0, hi]; above0 is (0, hi]. Every float flag has a finite
// upper end: a learning rate of 1e300 or a 1e300 Gbit/s link is a typo.
func upTo(hi float64) span   { return span{lo: 0, hi: hi} }
func above0(hi float64) span { return span{lo: 0, hi: hi, openLo: true} }

func (r span) has(x float64) bool {
	return !math.IsNaN(x) && !math.IsInf(x, 0) &&
		(x > r.lo || !r.openLo && x == r.lo) && (x < r.hi || !r.openHi && x == r.hi)
}

func (r span) String() string {
	lb, rb := "[", "]"
	if r.openLo {
		lb = "("
	}
	if r.openHi {
		rb = ")"
	}
	return fmt.Sprintf("a number in %s%g, %g%s", lb, r.lo, r.hi, rb)
}

// floatValue is a float64 flag with a range.
type floatValue struct {
	p *float64
	r span
}

func floatFlag(fs *pflag.FlagSet, p *float64, name string, def float64, r span, usage string) {
	*p = def
	fs.Var(&floatValue{p, r}, name, usage)
}

func (v *floatValue) Set(s string) error {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || !v.r.has(x) {
		return fmt.Errorf("want %s", v.r)
	}
	*v.p = x
	return nil
}

func (v *floatValue) String() string { return strconv.FormatFloat(*v.p, 'g', -1, 64) }
func (v *floatValue) Type() string   { return "float" }
