package launch

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestExpandHostlist(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"node01", []string{"node01"}},
		{"node[01-04,07]", []string{"node01", "node02", "node03", "node04", "node07"}},
		{"a1,b[2-3],c", []string{"a1", "b2", "b3", "c"}},
		{"r[1-2]-n[01-02]", []string{"r1-n01", "r1-n02", "r2-n01", "r2-n02"}},
		{"n[8-10]", []string{"n8", "n9", "n10"}},
		{"n[08-10]", []string{"n08", "n09", "n10"}},
		{"n[098-100]", []string{"n098", "n099", "n100"}},
		{"n[007]", []string{"n007"}},
		{"n[5,3]", []string{"n5", "n3"}},
		{"n[1-2]x", []string{"n1x", "n2x"}},
		{"[1-3]", []string{"1", "2", "3"}},
		{"a,a", []string{"a", "a"}},
		{"gpu-a100-[1-2].cluster", []string{"gpu-a100-1.cluster", "gpu-a100-2.cluster"}},
		{"x[0-0]", []string{"x0"}},
	}
	for _, tt := range tests {
		got, err := ExpandHostlist(tt.in)
		if err != nil {
			t.Errorf("ExpandHostlist(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ExpandHostlist(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestExpandHostlistCap(t *testing.T) {
	got, err := ExpandHostlist(fmt.Sprintf("n[0-%d]", MaxHosts-1))
	if err != nil {
		t.Fatalf("a list of exactly MaxHosts: %v", err)
	}
	if len(got) != MaxHosts || got[0] != "n0" || got[MaxHosts-1] != fmt.Sprint("n", MaxHosts-1) {
		t.Errorf("got %d hosts from %q to %q", len(got), got[0], got[len(got)-1])
	}
	for _, in := range []string{
		fmt.Sprintf("n[0-%d]", MaxHosts),
		fmt.Sprintf("a,n[0-%d]", MaxHosts-1),
		"n[0-1023]m[0-1024]",
		"n[0-999999999999999999]",
		"n[0-600000,0-600000]",
		"n[0-999]m[0-999]o[0-999]p[0-999]q[0-999]r[0-999]",
	} {
		_, err := ExpandHostlist(in)
		if err == nil || !strings.Contains(err.Error(), "expands to more than 1048576 hosts") {
			t.Errorf("ExpandHostlist(%.40q...): error %v, want the cap", in, err)
		}
	}
}

func TestExpandHostlistErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `launch: host list "": empty`},
		{",", `launch: host list ",": empty item at offset 0`},
		{"a,", `launch: host list "a,": empty item at offset 2`},
		{",a", `launch: host list ",a": empty item at offset 0`},
		{"a,,b", `launch: host list "a,,b": empty item at offset 2`},
		{"n[1-2", `launch: host list "n[1-2": unclosed '[' at offset 1`},
		{"n1-2]", `launch: host list "n1-2]": unmatched ']' at offset 4`},
		{"n[[1]]", `launch: host list "n[[1]]": nested '[' at offset 2`},
		{"n[]", `launch: host list "n[]": empty brackets at offset 1`},
		{"n[1,]", `launch: host list "n[1,]": empty range in "[1,]" at offset 4`},
		{"n[,1]", `launch: host list "n[,1]": empty range in "[,1]" at offset 2`},
		{"n[-3]", `launch: host list "n[-3]": range "-3" at offset 2: missing number`},
		{"n[1-]", `launch: host list "n[1-]": range "1-" at offset 2: missing number`},
		{"n[3-1]", `launch: host list "n[3-1]": range "3-1" at offset 2: high bound below low bound`},
		{"n[1,5-2]", `launch: host list "n[1,5-2]": range "5-2" at offset 4: high bound below low bound`},
		{"n[a-b]", `launch: host list "n[a-b]": range "a-b" at offset 2: "a" is not a number`},
		{"n[1-2-3]", `launch: host list "n[1-2-3]": range "1-2-3" at offset 2: "2-3" is not a number`},
		{"n[+1]", `launch: host list "n[+1]": range "+1" at offset 2: "+1" is not a number`},
		{"n[1 -2]", `launch: host list "n[1 -2]": invalid character ' ' at offset 3`},
		{"a b", `launch: host list "a b": invalid character ' ' at offset 1`},
		{"a\tb", `launch: host list "a\tb": invalid character '\t' at offset 1`},
		{"n[1234567890123456789]", `launch: host list "n[1234567890123456789]": range "1234567890123456789" at offset 2: number "1234567890123456789" too long`},
	}
	for _, tt := range tests {
		got, err := ExpandHostlist(tt.in)
		if err == nil {
			t.Errorf("ExpandHostlist(%q) = %q, want error %q", tt.in, got, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("ExpandHostlist(%q) error\n got %q\nwant %q", tt.in, err, tt.want)
		}
	}
}

func TestParseTasksPerNode(t *testing.T) {
	got, err := parseTasksPerNode("2(x3),1,4(x1)")
	want := []tasksRun{{2, 3}, {1, 1}, {4, 1}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parseTasksPerNode = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"", "0", "2(x0)", "2(x)", "(x2)", "2x3", "2(x3", "2(x3))", "1,,1", "-1", "2(x99999999999)"} {
		if got, err := parseTasksPerNode(bad); err == nil {
			t.Errorf("parseTasksPerNode(%q) = %v, want an error", bad, got)
		}
	}
}

func FuzzExpandHostlist(f *testing.F) {
	for _, s := range []string{
		"node[01-04,07]", "a1,b[2-3],c", "r[1-2]-n[01-02]", "plain", "n[1-2", "n1-2]",
		"n[3-1]", "n[]", "a,,b", "[1-3]", "n[098-100]x", "n[0-99999]", "n[1-2]m[3-4]o[5-6]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := ExpandHostlist(s)
		if err != nil {
			if hosts != nil {
				t.Fatalf("ExpandHostlist(%q) returned hosts with error %v", s, err)
			}
			if !strings.HasPrefix(err.Error(), "launch: host list ") {
				t.Fatalf("ExpandHostlist(%q) error %q lacks the prefix", s, err)
			}
			return
		}
		if len(hosts) == 0 || len(hosts) > MaxHosts {
			t.Fatalf("ExpandHostlist(%q) gave %d hosts", s, len(hosts))
		}
		for i, h := range hosts {
			if h == "" {
				t.Fatalf("ExpandHostlist(%q): host %d is empty", s, i)
			}
			if strings.ContainsAny(h, "[],") {
				t.Fatalf("ExpandHostlist(%q): host %d %q keeps list syntax", s, i, h)
			}
		}
		if !strings.ContainsAny(s, "[]") && !reflect.DeepEqual(hosts, strings.Split(s, ",")) {
			t.Fatalf("ExpandHostlist(%q) = %q, want the plain comma split", s, hosts)
		}
	})
}
