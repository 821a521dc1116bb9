package half_test

import (
	"fmt"

	"github.com/weft-hpc/weft/internal/half"
)

func Example() {
	for _, x := range []float32{1, 0.1, 65504, 65520, 1e-8, 3e-8} {
		h := half.F32ToF16(x)
		b := half.F32ToBF16(x)
		fmt.Printf("%-6g float16 %#04x = %-13g bfloat16 %#04x = %g\n", x, h, half.F16ToF32(h), b, half.BF16ToF32(b))
	}
	// Output:
	// 1      float16 0x3c00 = 1             bfloat16 0x3f80 = 1
	// 0.1    float16 0x2e66 = 0.099975586   bfloat16 0x3dcd = 0.100097656
	// 65504  float16 0x7bff = 65504         bfloat16 0x4780 = 65536
	// 65520  float16 0x7c00 = +Inf          bfloat16 0x4780 = 65536
	// 1e-08  float16 0x0000 = 0             bfloat16 0x322c = 1.0011718e-08
	// 3e-08  float16 0x0001 = 5.9604645e-08 bfloat16 0x3301 = 3.0035153e-08
}
