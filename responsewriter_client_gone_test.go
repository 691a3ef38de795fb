package squeeze_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
)

// A client that goes away mid-stream leaves the handler writing into a dead
// connection; the handler returns and the pools stay healthy.
func TestClientGoneMidStream(t *testing.T) {
	m := newMiddleware(t, squeeze.WithEncodings(allCodings...))
	chunk := textBody(23, 16<<10)
	for _, coding := range []string{squeeze.Zstd, squeeze.Brotli, squeeze.Gzip} {
		t.Run(coding, func(t *testing.T) {
			// One pair of signals per protocol, chosen by the request's.
			starts := map[int]chan struct{}{1: make(chan struct{}), 2: make(chan struct{})}
			finishes := map[int]chan int{1: make(chan int, 1), 2: make(chan int, 1)}
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				started, finished := starts[r.ProtoMajor], finishes[r.ProtoMajor]
				if r.URL.Query().Get("gone") == "" {
					writeText("text/plain", chunk, 0)(w, r)
					return
				}
				w.Header().Set("Content-Type", "text/plain")
				errs, i := 0, 0
				// Bounded: stop after enough failed writes to show the
				// connection is gone, or after 10 s. Not a count of
				// writes: this text compresses so well that 2,000 chunks
				// fit in the loopback's socket buffers, and a loaded
				// machine can let them all go before the client leaves.
				for t0 := time.Now(); time.Since(t0) < 10*time.Second && errs < 20; i++ {
					if _, err := w.Write(chunk); err != nil {
						errs++
					}
					if err := http.NewResponseController(w).Flush(); err != nil {
						errs++
					}
					if i == 0 {
						close(started)
					}
				}
				finished <- errs
			}))
			forEachProtocolQuiet(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				started, finished := starts[1], finishes[1]
				if srv.EnableHTTP2 {
					started, finished = starts[2], finishes[2]
				}
				ctx, cancel := context.WithCancel(t.Context())
				req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/?gone=1", nil)
				req.Header.Set("Accept-Encoding", coding)
				res, err := c.Do(req)
				if err != nil {
					cancel()
					t.Fatal(err)
				}
				<-started
				_, _ = io.ReadFull(res.Body, make([]byte, 100))
				cancel()
				res.Body.Close()
				select {
				case errs := <-finished:
					if errs == 0 {
						t.Errorf("handler saw no write errors on a dead connection")
					}
				case <-time.After(15 * time.Second):
					t.Fatal("handler still writing 15s after the client left")
				}
				for range 3 {
					res, raw := fetch(t, c, srv.URL, coding)
					if ce := res.Header.Get("Content-Encoding"); ce != coding {
						t.Fatalf("after the client left: Content-Encoding %q, want %q", ce, coding)
					}
					checkBody(t, res.Header, raw, chunk)
				}
			})
		})
	}
}
