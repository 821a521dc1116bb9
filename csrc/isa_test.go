package csrc_test

import (
	"errors"
	"testing"

	"github.com/weft-hpc/weft/csrc"
)

func TestLevels(t *testing.T) {
	isas := csrc.ISAs()
	if csrc.Available() != (len(isas) > 0) || csrc.Available() != (csrc.Best() != csrc.None) {
		t.Fatalf("Available %v, ISAs %v, Best %s disagree", csrc.Available(), isas, csrc.Best())
	}
	if len(isas) > 0 && (isas[0] != csrc.Generic || isas[len(isas)-1] != csrc.Best()) {
		t.Fatalf("ISAs() = %v, Best() = %s", isas, csrc.Best())
	}
	if csrc.Current() != csrc.Best() {
		t.Fatalf("Current() = %s at start, want Best() = %s", csrc.Current(), csrc.Best())
	}
	for i, name := range []string{"none", "generic", "avx2", "avx512", "ISA(4)"} {
		isa := csrc.ISA(i)
		if isa.String() != name {
			t.Errorf("ISA(%d).String() = %q, want %q", i, isa.String(), name)
		}
		if isa.Supported() != (isa != csrc.None && isa <= csrc.Best()) {
			t.Errorf("%s.Supported() = %v with Best() = %s", isa, isa.Supported(), csrc.Best())
		}
	}
	if _, err := csrc.SetISA(csrc.None); !errors.Is(err, csrc.ErrNotBuilt) {
		t.Fatalf("SetISA(None) = %v, want ErrNotBuilt", err)
	}
	if _, err := csrc.SetISA(csrc.Best() + 1); !errors.Is(err, csrc.ErrNotBuilt) {
		t.Fatalf("SetISA(Best()+1) = %v, want ErrNotBuilt", err)
	}
	for _, isa := range isas {
		prev, err := csrc.SetISA(isa)
		if err != nil || csrc.Current() != isa {
			t.Fatalf("SetISA(%s) = %s, %v; Current() = %s", isa, prev, err, csrc.Current())
		}
		csrc.SetISA(prev)
	}
}
