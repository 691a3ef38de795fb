package squeeze_test

import (
	"fmt"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/corpus"
)

// BenchmarkSecret serves real HTML (slices of the Go specification: 8 KiB
// and 30 KiB whole, 128 KiB a stream) with a CSRF token in a form, in each
// coding that can isolate a secret, three ways alternately, so that all
// see the same load on a shared machine: the token written plainly
// (unmarked), written with WriteSecret (write), and marked with
// TemplateSecret before the page is written in 4 KiB writes (template,
// which scans the body for it). plain-ns, write-ns and template-ns are the
// thread's CPU time per response, write/plain and template/plain their
// ratios, plain-B, write-B and template-B the encoded bytes
// (BENCHMARKS.md, "Secrets").
func BenchmarkSecret(b *testing.B) {
	const token = "Zk3q9XbT0wPzLm4sYc7eRv2nHa8uJd1gQ5tW6yE0rN3m"
	html := corpus.HTML(b)
	for _, size := range []int{8 << 10, 30 << 10, 128 << 10} {
		page := corpus.Prefix(b, html, size)
		at := len(page) / 3
		handler := func(mode string) http.HandlerFunc {
			return func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				if mode == "template" {
					_, _ = squeeze.TemplateSecret(w, token)
				}
				writeIn(w, page[:at], 4<<10)
				_, _ = w.Write([]byte(`<input type="hidden" name="csrf" value="`))
				if mode == "write" {
					_, _ = squeeze.WriteSecret(w, []byte(token))
				} else {
					_, _ = w.Write([]byte(token))
				}
				_, _ = w.Write([]byte(`">`))
				writeIn(w, page[at:], 4<<10)
			}
		}
		for _, coding := range []string{squeeze.Zstd, squeeze.Gzip, squeeze.Deflate} {
			b.Run(fmt.Sprintf("%s/%dKiB", coding, size>>10), func(b *testing.B) {
				m := newMiddleware(b, squeeze.WithEncodings(coding))
				modes := []string{"plain", "write", "template"}
				var writers [3]*allocWriter
				var serves [3]func()
				for i, mode := range modes {
					writers[i], serves[i] = reusedWriter(m.Handler(handler(mode)), request("GET", coding))
				}
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var spent [3]time.Duration
				for b.Loop() {
					for i := range modes {
						t0 := threadCPUTime()
						serves[i]()
						spent[i] += threadCPUTime() - t0
					}
				}
				n := float64(b.N)
				for i, mode := range modes {
					b.ReportMetric(float64(spent[i].Nanoseconds())/n, mode+"-ns")
					b.ReportMetric(float64(writers[i].n), mode+"-B")
				}
				b.ReportMetric(float64(spent[1])/float64(spent[0]), "write/plain")
				b.ReportMetric(float64(spent[2])/float64(spent[0]), "template/plain")
			})
		}
	}
}

// writeIn writes p to w in writes of n bytes.
func writeIn(w http.ResponseWriter, p []byte, n int) {
	for len(p) > 0 {
		k := min(n, len(p))
		_, _ = w.Write(p[:k])
		p = p[k:]
	}
}
