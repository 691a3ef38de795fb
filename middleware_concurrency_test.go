package squeeze_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// Each of 400 concurrent requests over a real server gets its own body back,
// across codings and across the min-size and buffer boundaries.
func TestConcurrentRequestsGetTheirOwnBodies(t *testing.T) {
	sizes := []int{0, 1, squeeze.DefaultMinSize - 1, squeeze.DefaultMinSize, squeeze.DefaultMinSize + 1, 8000,
		squeeze.DefaultBufferSize - 1, squeeze.DefaultBufferSize, squeeze.DefaultBufferSize + 1, 45000}
	accepts := []struct{ ae, coding string }{
		{"zstd", squeeze.Zstd}, {"br", squeeze.Brotli}, {"gzip", squeeze.Gzip}, {"deflate", squeeze.Deflate}, {"", ""},
		{"gzip;q=0.5, br;q=0.9", squeeze.Brotli}, {"*", squeeze.Zstd}, {"identity", ""}, {"x-gzip, zstd;q=0", squeeze.Gzip},
	}
	bodyFor := func(id, n int) []byte {
		if id%11 == 0 {
			return randomBody(id, n)
		}
		return textBody(id, n)
	}
	m := newMiddleware(t, squeeze.WithEncodings(allCodings...))
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.URL.Query().Get("id"))
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		body := bodyFor(id, n)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		chunk := 1 + (id*7919)%9000
		for off := 0; off < len(body); off += chunk {
			if _, err := w.Write(body[off:min(off+chunk, len(body))]); err != nil {
				return
			}
			if id%5 == 0 {
				w.(http.Flusher).Flush()
			}
		}
	}))
	forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
		c.Timeout = 2 * time.Minute // generous: -race on a loaded 2-core machine; a hang still ends
		// 400 requests, at most 64 in flight: with all 400 at once, HTTP/2
		// opens a second connection past the server's 250 streams, and on
		// a loaded machine under -race its client missed the server's 2 s
		// wait for SETTINGS (net/http's HTTP/2 server), which closed it.
		const requests, inFlight = 400, 64
		sem := make(chan struct{}, inFlight)
		var wg sync.WaitGroup
		for id := range requests {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				n := sizes[id%len(sizes)]
				a := accepts[(id/len(sizes))%len(accepts)]
				req, _ := http.NewRequestWithContext(t.Context(), "GET", fmt.Sprintf("%s/?id=%d&n=%d", srv.URL, id, n), nil)
				if a.ae != "" {
					req.Header.Set("Accept-Encoding", a.ae)
				}
				res, err := c.Do(req)
				if err != nil {
					t.Errorf("request %d: %v", id, err)
					return
				}
				raw, err := io.ReadAll(res.Body)
				res.Body.Close()
				if err != nil {
					t.Errorf("request %d: reading: %v", id, err)
					return
				}
				ce := res.Header.Get("Content-Encoding")
				if ce != "" && ce != a.coding {
					t.Errorf("request %d (Accept-Encoding %q): Content-Encoding %q, want %q or none", id, a.ae, ce, a.coding)
					return
				}
				got, err := testtool.TryDecode(ce, raw)
				if err != nil {
					t.Errorf("request %d (%q, %d bytes): decoding: %v", id, ce, n, err)
					return
				}
				if want := bodyFor(id, n); !bytes.Equal(got, want) {
					t.Errorf("request %d (%q, %d bytes): got %d bytes not its own body", id, ce, n, len(got))
				}
			})
		}
		wg.Wait()
	})
}

// waitGoroutines waits for the goroutine count to fall back to at most
// want, for ten seconds at most, collecting garbage as it waits (some
// goroutines end with a finalizer), and returns the last count seen. The
// goroutines a test started end once their connections close, which a
// loaded machine may take seconds to schedule; one that leaked never ends.
func waitGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(10 * time.Second); n > want && time.Now().Before(deadline); {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

func TestNoGoroutineOutlivesAResponse(t *testing.T) {
	m := newMiddleware(t, squeeze.WithEncodings(allCodings...))
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Type", "text/plain")
		writeChunks(w, textBody(n, n), 4000)
		if n%3 == 0 {
			w.(http.Flusher).Flush()
		}
	}))
	sizes := []int{10, 2000, 20000, 40000}

	t.Run("in process", func(t *testing.T) {
		before := runtime.NumGoroutine()
		for i := range 100 {
			n := sizes[i%len(sizes)]
			req := request("GET", allCodings[i%len(allCodings)])
			req.URL.RawQuery = "n=" + strconv.Itoa(n)
			res, raw := record(h, req)
			checkBody(t, res.Header, raw, textBody(n, n))
		}
		if after := waitGoroutines(before); after > before {
			t.Errorf("goroutines: %d before, %d after 100 in-process responses", before, after)
		}
	})
	t.Run("over a real server", func(t *testing.T) {
		for _, p := range protocols {
			t.Run(p.name, func(t *testing.T) {
				before := runtime.NumGoroutine()
				srv, c := startServer(t, p, h, false)
				for i := range 100 {
					n := sizes[i%len(sizes)]
					res, raw := fetch(t, c, srv.URL+"/?n="+strconv.Itoa(n), allCodings[i%len(allCodings)])
					checkBody(t, res.Header, raw, textBody(n, n))
				}
				c.CloseIdleConnections()
				srv.Close()
				if after := waitGoroutines(before); after > before {
					t.Errorf("goroutines: %d before, %d after 100 served requests and shutdown", before, after)
				}
			})
		}
	})
}

type handlerPanic struct{ stage string }
