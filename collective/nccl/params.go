package nccl

import (
	"os"
	"sync"
	"time"
)

// Every environment knob of the package, read once (NCCL's NCCL_PARAM).
// docs/LAUNCH.md lists them.
var params = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"WEFT_LIBNCCL",      // path of libnccl.so.2, tried before the sonames
		"WEFT_NCCL_TIMEOUT", // communicator creation and Close timeout (Go duration), default 2m
		"CUDA_HOME",         // a CUDA toolkit whose lib64 is searched
	} {
		m[k] = os.Getenv(k)
	}
	return m
})

func envLib(name string) string { return params()[name] }

func cudaHome() string { return params()["CUDA_HOME"] }

// defaultTimeout bounds communicator creation and Close when no WithTimeout
// is given.
func defaultTimeout() time.Duration {
	if d, err := time.ParseDuration(params()["WEFT_NCCL_TIMEOUT"]); err == nil && d > 0 {
		return d
	}
	return 2 * time.Minute
}
