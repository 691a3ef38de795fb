package squeeze_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A handler that returns without touching its response, leaving a
// goroutine behind that writes once the request is over, gets an error
// from every method of its writer: nothing reaches net/http's response
// after the server finished it (net/http's HTTP/2 writer panics then, and
// its HTTP/1 writer writes into a buffer it pooled for other connections).
// Writes made while the request is still being served, by a handler around
// the Middleware, still reach the response
// (TestLateWritesToAnUntouchedResponseGoThrough).
func TestUntouchedResponseRefusesWritesAfterTheRequestEnds(t *testing.T) {
	calls := []struct {
		name string
		call func(w http.ResponseWriter) error
	}{
		{"Write", func(w http.ResponseWriter) error { _, err := w.Write([]byte("late")); return err }},
		{"WriteString", func(w http.ResponseWriter) error { _, err := io.WriteString(w, "late"); return err }},
		{"WriteHeader", func(w http.ResponseWriter) error { w.WriteHeader(http.StatusTeapot); return nil }},
		{"Flush", func(w http.ResponseWriter) error { return http.NewResponseController(w).Flush() }},
		{"Hijack", func(w http.ResponseWriter) error {
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				c.Close()
			}
			return err
		}},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			type result struct {
				err      error
				panicked any
			}
			late := make(chan result, 1)
			m := newMiddleware(t)
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/late" {
					w.Header().Set("Content-Type", "text/plain")
					_, _ = w.Write([]byte("on time"))
					return
				}
				go func() {
					var res result
					defer func() {
						res.panicked = recover()
						late <- res
					}()
					<-r.Context().Done()
					time.Sleep(20 * time.Millisecond) // the server has finished the response
					res.err = tc.call(w)
				}()
			}))
			forEachProtocolQuiet(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				res, raw := fetch(t, c, srv.URL+"/late", "")
				if res.StatusCode != http.StatusOK || len(raw) != 0 {
					t.Errorf("GET /late: %d %q, want an empty 200", res.StatusCode, raw)
				}
				got := <-late
				if got.panicked != nil {
					t.Fatalf("%s after the request ended panicked: %v", tc.name, got.panicked)
				}
				if tc.name != "WriteHeader" && got.err == nil {
					t.Errorf("%s after the request ended: nil error, want one", tc.name)
				}
				// The connection serves the next request as it should.
				res, raw = fetch(t, c, srv.URL+"/next", "")
				if res.StatusCode != http.StatusOK || string(raw) != "on time" {
					t.Errorf("next response %d %q, want 200 %q", res.StatusCode, raw, "on time")
				}
			})
		})
	}
}
