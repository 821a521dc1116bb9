package cuda

import (
	"slices"
	"strings"
	"testing"
)

func TestTableMatchesSources(t *testing.T) {
	declared := map[string][]string{}
	where := map[string]string{}
	for _, f := range Files() {
		src, err := Source(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(src) == "" {
			t.Fatalf("%s is empty", f)
		}
		if !strings.Contains(src, `#include "`+Header+`"`) {
			t.Errorf("%s does not include %s", f, Header)
		}
		code := stripComments(src)
		if strings.Count(code, "{") != strings.Count(code, "}") || strings.Count(code, "(") != strings.Count(code, ")") {
			t.Errorf("%s: unbalanced braces or parentheses", f)
		}
		d := Declared(src)
		if len(d) == 0 {
			t.Errorf("%s declares no kernel", f)
		}
		for name, args := range d {
			if prev, dup := where[name]; dup {
				t.Errorf("kernel %s defined in %s and %s", name, prev, f)
			}
			declared[name], where[name] = args, f
		}
	}
	if h, err := Source(Header); err != nil || !strings.Contains(h, "#pragma once") {
		t.Errorf("header %s: %v", Header, err)
	}
	seen := map[string]bool{}
	for _, k := range Table {
		if seen[k.Name] {
			t.Errorf("%s twice in Table", k.Name)
		}
		seen[k.Name] = true
		ctypes, ok := declared[k.Name]
		if !ok {
			t.Errorf("%s is in Table but no source defines it", k.Name)
			continue
		}
		if where[k.Name] != k.File {
			t.Errorf("%s: Table says %s, defined in %s", k.Name, k.File, where[k.Name])
		}
		var got []Arg
		for _, c := range ctypes {
			a, ok := ArgOf(c)
			if !ok {
				t.Errorf("%s: parameter type %q cannot be launched", k.Name, c)
			}
			got = append(got, a)
		}
		if !slices.Equal(got, k.Args) {
			t.Errorf("%s: source parameters %v (%q), Table %v", k.Name, got, ctypes, k.Args)
		}
	}
	for name := range declared {
		if !seen[name] {
			t.Errorf("kernel %s (%s) is missing from Table", name, where[name])
		}
	}
	if _, ok := Lookup("weft_sum_f32"); !ok {
		t.Error("Lookup(weft_sum_f32) failed")
	}
	if _, err := Source("nope.cu"); err == nil {
		t.Error("Source of a missing file succeeded")
	}
}

func TestDeclared(t *testing.T) {
	d := Declared(`extern "C" __global__ void k(const float* x, weft_u64 n) {}
extern "C" __global__ void j(float *y, float a) {}`)
	if !slices.Equal(d["k"], []string{"const float*", "weft_u64"}) || !slices.Equal(d["j"], []string{"float*", "float"}) {
		t.Fatalf("Declared = %q", d)
	}
}

// stripComments drops // comments (the sources use no other kind).
func stripComments(src string) string {
	var b strings.Builder
	for _, line := range strings.Split(src, "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
