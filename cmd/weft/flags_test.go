package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestNumericFlags feeds every numeric flag of every command zero,
// negative, huge, NaN, infinite and malformed values. Each flag is range
// checked (a seed, where every value is one, excepted); the values outside
// the range are refused at parsing, before the command runs, with an
// error that names the flag and the value; none panics.
func TestNumericFlags(t *testing.T) {
	always := []string{"NaN", "nan", "Inf", "-Inf", "1e300", "4611686018427387904", "99999999999999999999", "abc", "", "1.5x", "0x"}
	edge := []string{"0", "-1", "-7"}
	checked := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		visit := func(fl *pflag.Flag) {
			switch fl.Value.(type) {
			case *rangeValue[int], *rangeValue[int64], *floatValue:
			default:
				switch fl.Value.Type() {
				case "int", "int64", "int32", "uint", "uint32", "float64", "float32", "duration":
					if !strings.Contains(fl.Name, "seed") {
						t.Errorf("%s --%s is a plain %s flag: register it with intFlag, int64Flag or floatFlag and its range", c.CommandPath(), fl.Name, fl.Value.Type())
					}
				}
				return
			}
			checked++
			if err := fl.Value.Set(fl.DefValue); err != nil {
				t.Errorf("%s --%s refuses its default %s: %v", c.CommandPath(), fl.Name, fl.DefValue, err)
			}
			path := strings.Fields(c.CommandPath())[1:]
			for _, v := range append(always, edge...) {
				valid := fl.Value.Set(v) == nil // on this tree's flag: the command never runs
				if valid {
					if slices.Contains(always, v) {
						t.Errorf("%s --%s accepted %q", c.CommandPath(), fl.Name, v)
					}
					continue
				}
				// The whole command line, parsed by a fresh tree: the error
				// names the flag and the value.
				args := append(append([]string{}, path...), "--"+fl.Name+"="+v)
				_, err := weft(t, args...)
				if err == nil || !strings.Contains(err.Error(), `"`+v+`" for "`) || !strings.Contains(err.Error(), "--"+fl.Name+`" flag`) {
					t.Errorf("weft %s: %v, want pflag's error naming --%s and %q", strings.Join(args, " "), err, fl.Name, v)
				}
			}
		}
		c.LocalFlags().VisitAll(visit)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot())
	if checked < 60 {
		t.Errorf("checked %d numeric flags, want all of them (over 60)", checked)
	}
	t.Logf("%d numeric flags", checked)
}

// TestBadFlagValues runs the values a careless user gives, each refused
// with an error that names the flag, before any work starts.
func TestBadFlagValues(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"ps --steps -5", `"-5" for "--steps" flag`},
		{"ps --batch -3", `"-3" for "--batch" flag`},
		{"ps --partition 3", "--partition: 3 bytes: want at least 4"},
		{"ps --partition 0", "--partition: 0 bytes"},
		{"ps --params NaN", `--params: "NaN"`},
		{"ps --params 1e30", `--params: "1e30"`},
		{"ps --params -2M", `--params: "-2M"`},
		{"ps --workers 0", `"0" for "--workers" flag`},
		{"ps --lr NaN", `"NaN" for "--lr" flag`},
		{"ps bench --factor 0.5", `"0.5" for "--factor" flag`},
		{"ps bench --steps 8", "--onset 8 with --steps 8: want at least two steps from the onset on (--steps at least 10)"},
		{"train gnn --dropout 1", `"1" for "--dropout" flag: want a number in [0, 1)`},
		{"train gnn --lr NaN", `"NaN" for "--lr" flag`},
		{"train gnn --ranks -2", `"-2" for "--ranks" flag`},
		{"train gnn --net-gbps -1", `"-1" for "--net-gbps" flag`},
		{"train gnn --roots -1", `"-1" for "--roots" flag`},
		{"train gnn --data x.h5 --cache NaN%", `--cache "NaN%"`},
		{"train gnn --data x.h5 --cache 99999999999G", `--cache "99999999999G"`},
		{"train mlp --momentum 1", `"1" for "--momentum" flag`},
		{"gen rmat --scale 41 -o x.h5", `"41" for "--scale" flag`},
		{"convert --num-nodes 2000000000000 -o x.h5 in.txt", `"2000000000000" for "--num-nodes" flag`},
		{"partition --parts 0 x.h5", `"0" for "-k, --parts" flag`},
		{"partition --train-fraction 0 x.h5", `"0" for "--train-fraction" flag: want a number in (0, 1]`},
	} {
		out, err := weft(t, strings.Fields(tc.args)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("weft %s: %v, want an error with %q", tc.args, err, tc.want)
		}
		if out != "" {
			t.Errorf("weft %s printed before refusing:\n%s", tc.args, out)
		}
	}
}
