package writers

import (
	"io"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/klauspost/compress/zstd"
)

func tcpu() time.Duration {
	var ts syscall.Timespec
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

func TestScratchZstdOptions(t *testing.T) {
	runtime.LockOSThread()
	for _, f := range []string{"jscookie.js", "axios.js", "vue.js"} {
		data, _ := os.ReadFile("/tmp/caddy2/" + f)
		mk := func(low bool) *zstd.Encoder {
			e, _ := zstd.NewWriter(nil, zstd.WithWindowSize(128<<10), zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true), zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithLowerEncoderMem(low))
			return e
		}
		encs := []*zstd.Encoder{mk(false), mk(true)}
		var tot [2]time.Duration
		n := 20000000 / len(data)
		for r := 0; r < 10; r++ {
			for i, e := range encs {
				t0 := tcpu()
				for k := 0; k < n; k++ {
					e.Reset(io.Discard)
					for p := 0; p < len(data); p += 32 << 10 {
						e.Write(data[p:min(p+32<<10, len(data))])
					}
					e.Close()
				}
				tot[i] += tcpu() - t0
			}
		}
		t.Logf("%s: caddy %v/op squeeze(lowmem) %v/op ratio caddy/squeeze %.3f", f, tot[0]/time.Duration(10*n), tot[1]/time.Duration(10*n), float64(tot[0])/float64(tot[1]))
	}
}
