package squeeze_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// Hijack, Unwrap, ResponseController, ReaderFrom

func TestHijackPassesThrough(t *testing.T) {
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, "hijack: "+err.Error(), http.StatusInternalServerError)
			return
		}
		defer conn.Close()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		_ = brw.Flush()
		line, err := brw.ReadString('\n')
		if err != nil {
			return
		}
		_, _ = brw.WriteString(line)
		_ = brw.Flush()
	}))
	forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
		if srv.EnableHTTP2 {
			// HTTP/2 has neither Hijack nor Upgrade (RFC 9113, 8.6): the
			// middleware reports http.ErrNotSupported, as the server's own
			// writer does.
			res, raw := fetch(t, c, srv.URL, "zstd, gzip")
			msg := testtool.Decode(t, res.Header.Get("Content-Encoding"), raw)
			if res.StatusCode != http.StatusInternalServerError || !strings.Contains(string(msg), http.ErrNotSupported.Error()) {
				t.Fatalf("status = %d (%s), want 500 with the handler's %q", res.StatusCode, msg, http.ErrNotSupported)
			}
			return
		}
		c.Timeout = 0 // a client timeout wraps the 101 body, hiding its Write
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
		req.Header.Set("Accept-Encoding", "zstd, gzip")
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "echo")
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusSwitchingProtocols {
			b, _ := io.ReadAll(res.Body)
			t.Fatalf("status = %d (%s), want 101", res.StatusCode, b)
		}
		rw, ok := res.Body.(io.ReadWriteCloser)
		if !ok {
			t.Fatalf("101 body is %T, not writable", res.Body)
		}
		if _, err := io.WriteString(rw, "ping\n"); err != nil {
			t.Fatal(err)
		}
		got, err := bufio.NewReader(rw).ReadString('\n')
		if err != nil || got != "ping\n" {
			t.Fatalf("echo over hijacked connection = %q, %v", got, err)
		}
	})
}

func TestUnwrapAndResponseController(t *testing.T) {
	t.Run("Unwrap returns the underlying writer", func(t *testing.T) {
		spy := newSpy()
		var got http.ResponseWriter
		h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, ok := w.(interface{ Unwrap() http.ResponseWriter })
			if ok {
				got = u.Unwrap()
			}
		}))
		h.ServeHTTP(spy, request("GET", "zstd"))
		if got != http.ResponseWriter(spy) {
			t.Fatalf("Unwrap() = %T %p, want the spy %p", got, got, spy)
		}
	})
	t.Run("Hijack is refused when the underlying writer cannot", func(t *testing.T) {
		var err error
		h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _, err = http.NewResponseController(w).Hijack()
		}))
		h.ServeHTTP(newSpy(), request("GET", "zstd"))
		if !errors.Is(err, http.ErrNotSupported) {
			t.Fatalf("Hijack over a writer without it: %v, want http.ErrNotSupported", err)
		}
	})
	t.Run("deadlines over a real server", func(t *testing.T) {
		body := textBody(17, 4000)
		h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rc := http.NewResponseController(w)
			if err := rc.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
				http.Error(w, "SetWriteDeadline: "+err.Error(), http.StatusInternalServerError)
				return
			}
			if err := rc.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
				http.Error(w, "SetReadDeadline: "+err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write(body)
		}))
		forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
			res, raw := fetch(t, c, srv.URL, "zstd")
			if res.StatusCode != 200 {
				t.Fatalf("status %d: %s", res.StatusCode, raw)
			}
			checkBody(t, res.Header, raw, body)
		})
	})
}

// When the response is not being encoded, io.Copy must reach the underlying
// writer's ReadFrom (sendfile and splice live there); when it is, the bytes
// must go through the encoder.
func TestReadFrom(t *testing.T) {
	tests := []struct {
		name     string
		ae       string
		header   map[string]string
		size     int
		serve    bool // through http.ServeContent (declares Content-Length) rather than io.Copy
		wantPass bool
	}{
		{"ineligible content type", "zstd", map[string]string{"Content-Type": "image/png"}, 100000, false, true},
		{"no Accept-Encoding", "", map[string]string{"Content-Type": "text/plain"}, 100000, false, true},
		{"already encoded", "zstd", map[string]string{"Content-Type": "text/plain", "Content-Encoding": "gzip"}, 100000, false, true},
		{"no-transform", "zstd", map[string]string{"Content-Type": "text/plain", "Cache-Control": "no-transform"}, 100000, false, true},
		{"compressing", "zstd", map[string]string{"Content-Type": "text/plain"}, 100000, false, false},
		{"small static image through ServeContent", "zstd", map[string]string{"Content-Type": "image/png"}, 10000, true, true},
		{"small static text without Accept-Encoding through ServeContent", "", map[string]string{"Content-Type": "text/plain"}, 10000, true, true},
		{"static text compressed through ServeContent", "zstd", map[string]string{"Content-Type": "text/plain"}, 10000, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := textBody(18, tt.size)
			spy := newSpy()
			h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				if tt.serve {
					http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
					return
				}
				if _, err := io.Copy(w, onlyReader{bytes.NewReader(body)}); err != nil {
					t.Errorf("io.Copy: %v", err)
				}
			}))
			h.ServeHTTP(spy, request("GET", tt.ae))
			if pass := spy.readFroms > 0; pass != tt.wantPass {
				t.Errorf("underlying ReadFrom called %d times, want passthrough %v", spy.readFroms, tt.wantPass)
			}
			if tt.wantPass {
				if !bytes.Equal(spy.body.Bytes(), body) {
					t.Errorf("body changed: %d bytes, want %d", spy.body.Len(), len(body))
				}
				return
			}
			if ce := spy.sent.Get("Content-Encoding"); ce != squeeze.Zstd {
				t.Errorf("Content-Encoding = %q, want zstd", ce)
			}
			checkBody(t, spy.sent, spy.body.Bytes(), body)
		})
	}
}

// The writer is an http.CloseNotifier, as net/http's is (gin's
// Context.Stream asserts it): its channel receives true when the client
// goes away mid-stream, and a channel asked for once the response has
// finished is ready at once.
func TestCloseNotifyReportsTheClientGone(t *testing.T) {
	notified := make(chan bool, 2)
	var finished http.ResponseWriter
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/finished" {
			finished = w
			return
		}
		//lint:ignore SA1019 the writer has it for frameworks that assert it (gin)
		cn, ok := w.(http.CloseNotifier) //nolint:staticcheck // SA1019, as above
		if !ok {
			http.Error(w, "the writer is no http.CloseNotifier", http.StatusInternalServerError)
			return
		}
		gone := cn.CloseNotify()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: first\n\n")
		_ = http.NewResponseController(w).Flush()
		select {
		case v := <-gone:
			notified <- v
		case <-time.After(10 * time.Second):
			notified <- false
		}
	}))
	forEachProtocolQuiet(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
		ctx, cancel := context.WithCancel(t.Context())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/stream", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != http.StatusOK {
			raw, _ := io.ReadAll(res.Body)
			t.Fatalf("%d %s", res.StatusCode, raw)
		}
		if _, err := res.Body.Read(make([]byte, 1)); err != nil {
			t.Fatalf("reading the first event: %v", err)
		}
		cancel()
		res.Body.Close()
		if !<-notified {
			t.Error("CloseNotify's channel did not receive true within 10s of the client leaving")
		}

		fetch(t, c, srv.URL+"/finished", "gzip")
		//lint:ignore SA1019 as above
		notifier := finished.(http.CloseNotifier) //nolint:staticcheck // SA1019, as above
		select {
		case <-notifier.CloseNotify():
		case <-time.After(10 * time.Second):
			t.Error("CloseNotify on a finished response's writer did not report it")
		}
	})
}

// io.WriteString reaches the writer's WriteString, which takes the
// string's bytes without copying them: the body decodes to what was
// written whether it is held back and sent whole, streamed past the
// buffer through the encoder, or passed through plain.
func TestWriteStringBodiesDecode(t *testing.T) {
	for _, n := range []int{3 << 10, 300 << 10} {
		body := string(textBody(n, n))
		h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if _, ok := w.(io.StringWriter); !ok {
				t.Error("the writer is no io.StringWriter")
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			for off := 0; off < len(body); off += 1000 {
				if _, err := io.WriteString(w, body[off:min(off+1000, len(body))]); err != nil {
					t.Errorf("WriteString: %v", err)
					return
				}
			}
		}))
		forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
			for _, ae := range []string{squeeze.Zstd, squeeze.Gzip, ""} {
				res, raw := fetch(t, c, srv.URL, ae)
				if ae != "" && res.Header.Get("Content-Encoding") != ae {
					t.Errorf("%d bytes, Accept-Encoding %q: Content-Encoding %q", n, ae, res.Header.Get("Content-Encoding"))
				}
				checkBody(t, res.Header, raw, []byte(body))
			}
		})
	}
}

// stutterReader hands out its data one byte at a time and answers every
// other Read with (0, nil), which io.Reader allows ("discouraged", not
// forbidden): a pipe or a decoder that has nothing ready yet.
type stutterReader struct {
	data  []byte
	empty bool
}

func (s *stutterReader) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	if s.empty = !s.empty; s.empty {
		return 0, nil
	}
	p[0] = s.data[0]
	s.data = s.data[1:]
	return 1, nil
}

// A source that answers some Reads with (0, nil) between Reads that make
// progress is copied in full through ReadFrom, as by io.Copy and by
// net/http's own response.ReadFrom: only consecutive empty Reads (bufio's
// ErrNoProgress rule) may end a copy with io.ErrNoProgress.
func TestReadFromToleratesScatteredEmptyReads(t *testing.T) {
	body := textBody(3, 600)
	var copyErr error
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, copyErr = io.Copy(w, &stutterReader{data: body})
	}))
	res, raw := record(h, request("GET", "zstd"))
	if copyErr != nil {
		t.Errorf("io.Copy onto the writer: %v, want nil (the reader made progress on every other Read)", copyErr)
	}
	checkBody(t, res.Header, raw, body)
}

// A ReadFrom whose source is empty writes nothing, so the status stays
// open, as with net/http's own response.ReadFrom (its io.CopyBuffer never
// calls Write): a handler that copies an empty body and then sets the status
// sends that status, over a real server and through the middleware alike.
func TestEmptyReadFromLeavesTheStatusOpen(t *testing.T) {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.Copy(w, onlyReader{strings.NewReader("")})
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "created")
	})
	for name, h := range map[string]http.Handler{"net/http alone": inner, "middleware": newMiddleware(t).Handler(inner)} {
		t.Run(name, func(t *testing.T) {
			forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				res, raw := fetch(t, c, srv.URL, "gzip")
				if res.StatusCode != http.StatusCreated {
					t.Errorf("status %d after an empty ReadFrom, want the handler's 201", res.StatusCode)
				}
				checkBody(t, res.Header, raw, []byte("created"))
			})
		})
	}
	rec := serve(newMiddleware(t).Handler(inner), http.MethodGet, "gzip")
	if rec.Code != http.StatusCreated {
		t.Errorf("recorded status %d after an empty ReadFrom, want the handler's 201", rec.Code)
	}
}
