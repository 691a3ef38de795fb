package squeeze_test

import (
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/corpus"
)

// BenchmarkLengthHiding serves a 16 KiB slice of real HTML, whole, and a
// 64 KiB one, a stream (over the buffer), in each coding at its default
// level, through a Middleware without and one with WithLengthHiding(32),
// alternately, so that both see the same load on a shared machine: off-ns
// and on-ns are the thread's CPU time per response of each, on/off their
// ratio (docs/reference.md), pad-bytes what padding added to this page.
func BenchmarkLengthHiding(b *testing.B) {
	html := corpus.HTML(b)
	for _, body := range []struct {
		name string
		page []byte
	}{
		{"whole-16K", corpus.Prefix(b, html, 16<<10)},
		{"stream-64K", corpus.Prefix(b, html, 64<<10)},
	} {
		handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write(body.page)
		})
		for _, coding := range []string{squeeze.Gzip, squeeze.Zstd, squeeze.Brotli} {
			b.Run(coding+"/"+body.name, func(b *testing.B) {
				off := newMiddleware(b, squeeze.WithEncodings(coding))
				on := newMiddleware(b, squeeze.WithEncodings(coding), squeeze.WithLengthHiding(32))
				wOff, serveOff := reusedWriter(off.Handler(handler), request("GET", coding))
				wOn, serveOn := reusedWriter(on.Handler(handler), request("GET", coding))
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var tOff, tOn time.Duration
				for b.Loop() {
					t0 := threadCPUTime()
					serveOff()
					t1 := threadCPUTime()
					serveOn()
					tOff, tOn = tOff+t1-t0, tOn+threadCPUTime()-t1
				}
				n := float64(b.N)
				b.ReportMetric(float64(tOff.Nanoseconds())/n, "off-ns")
				b.ReportMetric(float64(tOn.Nanoseconds())/n, "on-ns")
				b.ReportMetric(float64(tOn)/float64(tOff), "on/off")
				b.ReportMetric(float64(wOn.n-wOff.n), "pad-bytes")
			})
		}
	}
}
