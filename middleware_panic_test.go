package squeeze_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// A handler that panics must not end with a valid end-of-stream: the client
// has to see a broken response, not a short body that looks complete. The
// panic propagates, and the pools serve correct responses afterwards.
func TestPanickingHandler(t *testing.T) {
	m := newMiddleware(t, squeeze.WithEncodings(allCodings...))
	body := textBody(22, 40000)
	panicky := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		switch stage := r.URL.Query().Get("stage"); stage {
		case "buffered":
			_, _ = w.Write(body[:2000])
			panic(handlerPanic{stage})
		case "flushed":
			_, _ = w.Write(body[:100])
			w.(http.Flusher).Flush()
			panic(handlerPanic{stage})
		case "streaming":
			_, _ = w.Write(body)
			panic(handlerPanic{stage})
		case "abort":
			_, _ = w.Write(body)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
	}))
	checkHealthy := func(t *testing.T, coding string) {
		t.Helper()
		for _, size := range []int{3000, len(body), 3000, len(body)} {
			h := m.Handler(writeText("text/plain", body[:size], 3000))
			res, raw := record(h, request("GET", coding))
			if ce := res.Header.Get("Content-Encoding"); ce != coding {
				t.Fatalf("after panics: Content-Encoding %q, want %q", ce, coding)
			}
			checkBody(t, res.Header, raw, body[:size])
		}
	}

	for _, coding := range allCodings {
		for _, stage := range []string{"buffered", "flushed", "streaming"} {
			t.Run(coding+"/"+stage+"/recorder", func(t *testing.T) {
				req := request("GET", coding)
				req.URL.RawQuery = "stage=" + stage
				rec := httptest.NewRecorder()
				func() {
					defer func() {
						if p := recover(); p != (handlerPanic{stage}) {
							t.Errorf("recovered %v, want the handler's panic to propagate", p)
						}
					}()
					panicky.ServeHTTP(rec, req)
				}()
				raw := rec.Body.Bytes()
				if ce := rec.Header().Get("Content-Encoding"); ce != "" && len(raw) > 0 {
					if got, err := testtool.TryDecode(ce, raw); err == nil {
						t.Errorf("%d bytes sent before the panic decode as a complete %s stream of %d bytes", len(raw), ce, len(got))
					}
				}
			})
		}
		t.Run(coding+"/server", func(t *testing.T) {
			forEachProtocolQuiet(t, panicky, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				for _, stage := range []string{"streaming", "abort"} {
					req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/?stage="+stage, nil)
					req.Header.Set("Accept-Encoding", coding)
					res, err := c.Do(req)
					if err != nil {
						continue // the server gave up before the headers: broken, as it should be
					}
					raw, rerr := io.ReadAll(res.Body)
					res.Body.Close()
					if rerr == nil {
						if got, err := testtool.TryDecode(res.Header.Get("Content-Encoding"), raw); err == nil {
							t.Errorf("%s: client read a complete, valid response of %d bytes from a panicking handler", stage, len(got))
						}
					}
				}
				checkHealthy(t, coding)
			})
		})
	}
}
