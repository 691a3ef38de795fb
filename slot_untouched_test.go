package squeeze_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
)

// Responses a handler returns from without choosing a status or writing a
// byte: in net/http the implicit 200 is the server's, after the outermost
// handler returns, so until then the response belongs to whoever writes
// next.

// A handler around the middleware that writes after an untouched inner
// handler chooses the status, as it would without squeeze; the middleware's
// header edits (Vary) are still made.
func TestUntouchedResponseIsLeftToTheOuterHandler(t *testing.T) {
	for _, tc := range []struct {
		name      string
		inner     http.HandlerFunc
		fallback  bool // the outer handler writes a 404 after the inner one
		status    int
		body      string
		wantVary  bool
		wantCType string
	}{
		{"nothing set, then a fallback", func(http.ResponseWriter, *http.Request) {}, true, http.StatusNotFound, "fallback", false, "text/plain; charset=utf-8"},
		{"a type set, then a fallback", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
		}, true, http.StatusNotFound, "fallback", true, "text/html; charset=utf-8"},
		{"a type set, then nothing", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
		}, false, http.StatusOK, "", true, "text/html; charset=utf-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := newMiddleware(t).Handler(tc.inner)
			outer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				inner.ServeHTTP(w, r)
				if tc.fallback {
					w.WriteHeader(http.StatusNotFound)
					_, _ = io.WriteString(w, "fallback")
				}
			})
			forEachProtocol(t, outer, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				res, raw := fetch(t, c, srv.URL, "zstd, br, gzip")
				if res.StatusCode != tc.status || string(raw) != tc.body {
					t.Errorf("%d %q, want %d %q", res.StatusCode, raw, tc.status, tc.body)
				}
				if ce := res.Header.Get("Content-Encoding"); ce != "" {
					t.Errorf("Content-Encoding %q on a body squeeze never saw", ce)
				}
				if got := res.Header.Get("Content-Type"); got != tc.wantCType {
					t.Errorf("Content-Type %q, want %q", got, tc.wantCType)
				}
				if got := countFold(varyTokens(res.Header), "Accept-Encoding") == 1; got != tc.wantVary {
					t.Errorf("Vary %q: Accept-Encoding there is %v, want %v", res.Header.Values("Vary"), got, tc.wantVary)
				}
			})
		})
	}
}

// handBackAfter returns a handler that serves through m a handler that
// returns without writing, then calls late with the writer that handler
// was given, as echo's error handler does behind echo.WrapMiddleware.
func handBackAfter(t *testing.T, m *squeeze.Middleware, late func(t *testing.T, w http.ResponseWriter)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var given http.ResponseWriter
		m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { given = w })).ServeHTTP(w, r)
		late(t, given)
	})
}

// Writes made through the writer of an untouched response after its
// handler returned reach the response, plain, with every method of the
// writer: the status and body echo's error handler writes survive.
func TestLateWritesToAnUntouchedResponseGoThrough(t *testing.T) {
	long := string(textBody(7, 8<<10)) // long enough to compress, had squeeze seen it
	must := func(t *testing.T, what string, err error) {
		if err != nil {
			t.Errorf("late %s: %v", what, err)
		}
	}
	for _, tc := range []struct {
		name   string
		late   func(t *testing.T, w http.ResponseWriter)
		status int
		body   string
	}{
		{"WriteHeader and Write", func(t *testing.T, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, err := w.Write([]byte(`{"message":"Bad Request"}`))
			must(t, "Write", err)
		}, http.StatusBadRequest, `{"message":"Bad Request"}`},
		{"WriteString of a long body", func(t *testing.T, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusNotFound)
			_, err := io.WriteString(w, long)
			must(t, "WriteString", err)
		}, http.StatusNotFound, long},
		{"io.Copy", func(t *testing.T, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusInternalServerError)
			_, err := io.Copy(w, strings.NewReader(long))
			must(t, "io.Copy", err)
		}, http.StatusInternalServerError, long},
		{"Write and Flush", func(t *testing.T, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, err := io.WriteString(w, "data: one\n\n")
			must(t, "WriteString", err)
			must(t, "Flush", http.NewResponseController(w).Flush())
		}, http.StatusOK, "data: one\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachProtocol(t, handBackAfter(t, newMiddleware(t), tc.late), func(t *testing.T, srv *httptest.Server, c *http.Client) {
				res, raw := fetch(t, c, srv.URL, "zstd, br, gzip")
				if res.StatusCode != tc.status || string(raw) != tc.body {
					t.Errorf("%d %q, want %d %q", res.StatusCode, prefix(raw), tc.status, prefix([]byte(tc.body)))
				}
				if ce := res.Header.Get("Content-Encoding"); ce != "" {
					t.Errorf("Content-Encoding %q on a late body, which goes out plain", ce)
				}
			})
		})
	}
}

// A response whose handler wrote anything, a status alone included, is
// finished when the handler returns: late writes fail and reach nothing.
func TestLateWritesToAWrittenResponseFail(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		status  int
		body    string
	}{
		{"a status", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }, http.StatusNoContent, ""},
		{"a body", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "done") }, http.StatusOK, "done"},
		{"a flush", func(w http.ResponseWriter, _ *http.Request) { _ = http.NewResponseController(w).Flush() }, http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMiddleware(t)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var given http.ResponseWriter
				m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					given = w
					tc.handler(w, r)
				})).ServeHTTP(w, r)
				given.WriteHeader(http.StatusTeapot)
				if _, err := given.Write([]byte("late")); err == nil {
					t.Error("a late Write succeeded")
				}
				if _, err := io.WriteString(given, "late"); err == nil {
					t.Error("a late WriteString succeeded")
				}
			})
			forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				res, raw := fetch(t, c, srv.URL, "gzip")
				if res.StatusCode != tc.status || string(raw) != tc.body {
					t.Errorf("%d %q, want %d %q", res.StatusCode, raw, tc.status, tc.body)
				}
			})
		})
	}
}

// The writer of an untouched response passes late writes to that
// response's own underlying writer, never to that of a later response
// served from the same pooled state, even from a goroutine still writing
// while the later responses are served.
func TestHandedBackWriterReachesOnlyItsOwnResponse(t *testing.T) {
	m := newMiddleware(t)
	var given http.ResponseWriter
	untouched := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { given = w }))
	own := newSpy()
	untouched.ServeHTTP(own, httptest.NewRequest(http.MethodGet, "/", nil))
	given.Header().Set("Content-Type", "text/plain")
	given.WriteHeader(http.StatusNotFound)

	var wg sync.WaitGroup
	wg.Add(1)
	stop := make(chan struct{})
	writes := 0
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := io.WriteString(given, "late."); err != nil {
				t.Errorf("late write: %v", err)
				return
			}
			writes++
		}
	}()
	page := textBody(3, 4<<10)
	others := m.Handler(writeText("text/plain", page, 512))
	for i := range 200 {
		ae := allCodings[i%len(allCodings)]
		if i%5 == 0 {
			ae = ""
		}
		spy := newSpy()
		others.ServeHTTP(spy, request(http.MethodGet, ae))
		if bytes.Contains(spy.body.Bytes(), []byte("late.")) {
			t.Fatalf("response %d got the handed-back writer's bytes", i)
		}
		checkBody(t, spy.header, spy.body.Bytes(), page)
	}
	close(stop)
	wg.Wait()
	if own.status != http.StatusNotFound || own.body.String() != strings.Repeat("late.", writes) {
		t.Errorf("the untouched response got %d and %d bytes, want 404 and %d writes of 5", own.status, own.body.Len(), writes)
	}
}

// An untouched response whose handler panicked is handed back too: a
// recovering framework around the middleware (echo's Recover, before
// echo.WrapMiddleware) writes its 500 through the same writer.
func TestUntouchedResponseOfAPanickedHandlerIsHandedBack(t *testing.T) {
	m := newMiddleware(t)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var given http.ResponseWriter
		func() {
			defer func() { _ = recover() }()
			m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				given = w
				panic(errors.New("handler failed"))
			})).ServeHTTP(w, r)
		}()
		http.Error(given, "recovered", http.StatusInternalServerError)
	})
	forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
		res, raw := fetch(t, c, srv.URL, "gzip")
		if res.StatusCode != http.StatusInternalServerError || string(raw) != "recovered\n" {
			t.Errorf("%d %q, want 500 %q", res.StatusCode, raw, "recovered\n")
		}
	})
}

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
