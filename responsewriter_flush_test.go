package squeeze_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// prefixDecodes checks that the bytes sent so far decode to at least want.
func prefixDecodes(coding string, sent, want []byte) error {
	r, err := testtool.NewReader(coding, bytes.NewReader(sent))
	if err != nil {
		return fmt.Errorf("%s header: %w", coding, err)
	}
	defer r.Close()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(r, got); err != nil {
		return fmt.Errorf("decoding the %d bytes sent so far: %w", len(sent), err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("bytes sent so far decode to %q, want %q", got, want)
	}
	return nil
}

func TestFlush(t *testing.T) {
	type step struct {
		write string
		flush string // "", "flusher" or "controller"
	}
	tests := []struct {
		name   string
		ct     string
		ae     string
		steps  []step
		wantCE string
	}{
		{"flush commits compression below min size", "text/plain", "zstd",
			[]step{{write: "hello"}, {flush: "flusher"}, {write: " world"}, {flush: "flusher"}}, squeeze.Zstd},
		{"flush through ResponseController", "text/plain", "br",
			[]step{{write: "hello"}, {flush: "controller"}, {write: " world"}, {flush: "controller"}}, squeeze.Brotli},
		{"flush before the first write", "text/plain", "gzip",
			[]step{{flush: "flusher"}, {write: "hello"}, {flush: "flusher"}}, squeeze.Gzip},
		{"controller flush before the first write", "application/json", "zstd",
			[]step{{flush: "controller"}, {write: `{"a":1}`}, {flush: "controller"}}, squeeze.Zstd},
		{"flush on ineligible content passes through", "image/png", "zstd",
			[]step{{write: "\x89PNG"}, {flush: "flusher"}, {write: "more"}, {flush: "controller"}}, ""},
		{"flush without Accept-Encoding passes through", "text/plain", "",
			[]step{{write: "hello"}, {flush: "flusher"}, {write: " world"}, {flush: "controller"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spy := newSpy()
			var written []byte
			var errs []error
			h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ct)
				for _, s := range tt.steps {
					if s.write != "" {
						_, _ = io.WriteString(w, s.write)
						written = append(written, s.write...)
						continue
					}
					before := spy.flushes
					switch s.flush {
					case "flusher":
						w.(http.Flusher).Flush()
					case "controller":
						if err := http.NewResponseController(w).Flush(); err != nil {
							errs = append(errs, fmt.Errorf("ResponseController.Flush: %w", err))
						}
					}
					if spy.status != http.StatusOK {
						errs = append(errs, fmt.Errorf("after Flush the status has not gone out"))
						continue
					}
					if spy.flushes == before {
						errs = append(errs, fmt.Errorf("Flush did not reach the underlying writer"))
					}
					if ce := spy.sent.Get("Content-Encoding"); ce != tt.wantCE {
						errs = append(errs, fmt.Errorf("headers sent with Content-Encoding %q, want %q", ce, tt.wantCE))
					} else if err := prefixDecodes(ce, spy.body.Bytes(), written); err != nil {
						errs = append(errs, err)
					}
				}
			}))
			h.ServeHTTP(spy, request("GET", tt.ae))
			for _, err := range errs {
				t.Error(err)
			}
			if cl := spy.sent.Get("Content-Length"); cl != "" && tt.wantCE != "" {
				t.Errorf("flushed compressed response has Content-Length %s", cl)
			}
			checkBody(t, spy.sent, spy.body.Bytes(), written)
		})
	}
}

// chi sends the headers without Content-Encoding on a Flush before the first
// write, then a gzip body.
func TestFlushBeforeFirstWriteOverRealServer(t *testing.T) {
	for _, ct := range []string{"text/plain", ""} {
		t.Run("Content-Type "+ct, func(t *testing.T) {
			body := textBody(16, 3000)
			h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if ct != "" {
					w.Header().Set("Content-Type", ct)
				}
				w.(http.Flusher).Flush()
				_, _ = w.Write(body)
			}))
			forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				res, raw := fetch(t, c, srv.URL, "gzip")
				if ct != "" && res.Header.Get("Content-Encoding") != squeeze.Gzip {
					t.Errorf("Content-Encoding = %q, want gzip", res.Header.Get("Content-Encoding"))
				}
				checkBody(t, res.Header, raw, body)
			})
		})
	}
}

// Each server-sent event must reach the client, decodable, while the handler
// is still blocked before the next one (httpcompression #58, nytimes #87).
func TestServerSentEventsStreamPerEvent(t *testing.T) {
	m := newMiddleware(t, squeeze.WithEncodings(allCodings...))
	for _, coding := range allCodings {
		t.Run(coding, func(t *testing.T) {
			// One release per protocol, chosen by the request's.
			releases := map[int]chan struct{}{1: make(chan struct{}), 2: make(chan struct{})}
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				release := releases[r.ProtoMajor]
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Cache-Control", "no-cache")
				_, _ = io.WriteString(w, "data: event 1\n\n")
				w.(http.Flusher).Flush()
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
				_, _ = io.WriteString(w, "data: event 2\n\n")
				_ = http.NewResponseController(w).Flush()
			}))
			forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				release := releases[1]
				if srv.EnableHTTP2 {
					release = releases[2]
				}
				// Bounds a response that holds event 1 back (the handler waits
				// for the client); a few seconds is ample even under -race.
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
				req.Header.Set("Accept-Encoding", coding)
				res, err := c.Do(req)
				if err != nil {
					close(release)
					t.Fatal(err)
				}
				defer res.Body.Close()
				if ce := res.Header.Get("Content-Encoding"); ce != coding {
					close(release)
					t.Fatalf("Content-Encoding = %q, want %q", ce, coding)
				}
				dec, err := testtool.NewReader(coding, res.Body)
				if err != nil {
					close(release)
					t.Fatalf("decoder: %v", err)
				}
				defer dec.Close()
				ev := make([]byte, len("data: event 1\n\n"))
				_, err = io.ReadFull(dec, ev)
				close(release)
				if err != nil || string(ev) != "data: event 1\n\n" {
					t.Fatalf("first event before the second was written: %q, %v", ev, err)
				}
				rest, err := io.ReadAll(dec)
				if err != nil || string(rest) != "data: event 2\n\n" {
					t.Fatalf("rest of stream: %q, %v", rest, err)
				}
			})
		})
	}
}
