package cuda

import (
	"fmt"
	"os"
	"strconv"
	"sync"
)

// Every environment knob of the package, read once (NCCL's NCCL_PARAM).
// docs/LAUNCH.md lists them.
var params = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"WEFT_LIBCUDART", // path of libcudart.so.*, tried before the sonames
		"WEFT_LIBCUDA",   // path of libcuda.so.1
		"WEFT_LIBNVRTC",  // path of libnvrtc.so.*
		"WEFT_LIBCUBLAS", // path of libcublas.so.*
		"CUDA_HOME",      // a CUDA toolkit whose lib64 is searched
		"WEFT_FAKE_GPUS", // n > 0: the host-memory fake with n devices in place of CUDA (UseFake)
	} {
		m[k] = os.Getenv(k)
	}
	return m
})

func envLib(name string) string { return params()[name] }

func cudaHome() string { return params()["CUDA_HOME"] }

// fakeGPUs is WEFT_FAKE_GPUS as a count (0 when unset), or an error naming
// the variable when it is not a count.
func fakeGPUs() (int, error) { return fakeGPUsFrom(params()["WEFT_FAKE_GPUS"]) }

func fakeGPUsFrom(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("cuda: WEFT_FAKE_GPUS=%q: want a number of fake devices (0 for none): %w", v, ErrInvalid)
	}
	return n, nil
}
