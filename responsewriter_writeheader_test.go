package squeeze_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// WriteHeader and 1xx

func TestWriteHeader(t *testing.T) {
	body := textBody(14, 3000)
	tests := []struct {
		name        string
		handler     func(w http.ResponseWriter, spy *spyWriter) error
		wantStatus  int
		wantInfo    []int
		wantEncoded bool
	}{
		{"first final status wins", func(w http.ResponseWriter, _ *spyWriter) error {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusNotFound)
			w.WriteHeader(http.StatusOK)
			_, err := w.Write(body)
			return err
		}, 404, nil, true},
		{"write implies 200", func(w http.ResponseWriter, _ *spyWriter) error {
			w.Header().Set("Content-Type", "text/plain")
			_, err := w.Write(body)
			w.WriteHeader(http.StatusInternalServerError)
			return err
		}, 200, nil, true},
		{"103 goes out at once, then the final status", func(w http.ResponseWriter, spy *spyWriter) error {
			w.Header().Set("Link", "</style.css>; rel=preload; as=style")
			w.WriteHeader(http.StatusEarlyHints)
			if !slices.Equal(spy.informational, []int{103}) {
				return fmt.Errorf("after WriteHeader(103) the writer saw 1xx %v", spy.informational)
			}
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusNotFound)
			_, err := w.Write(body)
			return err
		}, 404, []int{103}, true},
		{"two 1xx then final", func(w http.ResponseWriter, spy *spyWriter) error {
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusEarlyHints)
			w.Header().Set("Content-Type", "text/plain")
			_, err := w.Write(body)
			return err
		}, 200, []int{103, 103}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spy := newSpy()
			var herr error
			h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				herr = tt.handler(w, spy)
			}))
			h.ServeHTTP(spy, request("GET", "zstd"))
			if herr != nil {
				t.Fatal(herr)
			}
			if spy.status != tt.wantStatus {
				t.Errorf("status = %d, want %d", spy.status, tt.wantStatus)
			}
			if !slices.Equal(spy.informational, tt.wantInfo) {
				t.Errorf("1xx = %v, want %v", spy.informational, tt.wantInfo)
			}
			if got := spy.sent.Get("Content-Encoding") == squeeze.Zstd; got != tt.wantEncoded {
				t.Errorf("encoded = %v, want %v", got, tt.wantEncoded)
			}
			checkBody(t, spy.sent, spy.body.Bytes(), body)
		})
	}
}

// httpcompression turns 103 then 404 into a final 200.
func TestEarlyHintsOverRealServer(t *testing.T) {
	body := textBody(15, 3000)
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload; as=style")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write(body)
	}))
	forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
		var got1xx []int
		var link string
		trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, header textproto.MIMEHeader) error {
			got1xx = append(got1xx, code)
			link = header.Get("Link")
			return nil
		}}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), "GET", srv.URL, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got1xx, []int{103}) || !strings.Contains(link, "style.css") {
			t.Errorf("1xx = %v with Link %q, want one 103 with the Link", got1xx, link)
		}
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("final status = %d, want 404", res.StatusCode)
		}
		if ce := res.Header.Get("Content-Encoding"); ce != squeeze.Gzip {
			t.Errorf("Content-Encoding = %q, want gzip", ce)
		}
		checkBody(t, res.Header, raw, body)
	})
}

func TestHeaderChangesAfterWriteHeaderDoNotGoOut(t *testing.T) {
	for _, size := range []int{10, 4096, 100 << 10} { // plain, buffered, streamed
		h := squeeze.MustNew().Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("X-Before", "1")
			w.WriteHeader(http.StatusOK)
			w.Header().Set("X-After", "1")
			w.Header().Del("X-Before")
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(textBody(1, size))
		}))
		rec := serve(h, "GET", "zstd")
		if rec.Header().Get("X-After") != "" || rec.Header().Get("X-Before") != "1" || rec.Header().Get("Content-Type") != "text/plain" {
			t.Errorf("%d bytes: header %q, want the one at WriteHeader", size, rec.Header())
		}
	}
}

func TestWriteHeaderThenHijackSendsTheHeader(t *testing.T) {
	h := squeeze.MustNew().Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "5")
		w.WriteHeader(http.StatusOK)
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("hello")
		_ = rw.Flush()
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\nAccept-Encoding: zstd\r\n\r\n")
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no response header before the hijacked bytes: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || string(body) != "hello" {
		t.Errorf("got %d %q, want 200 hello", res.StatusCode, body)
	}
}

// A zero Middleware and a nil one serve with the default options.
func TestZeroMiddlewareIsUsable(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    *squeeze.Middleware
	}{{"zero", new(squeeze.Middleware)}, {"nil", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				_, _ = w.Write(textBody(1, 4096))
			}))
			rec := serve(h, "GET", "gzip")
			if rec.Header().Get("Content-Encoding") != "gzip" {
				t.Fatalf("%s Middleware sent Content-Encoding %q, want the defaults' gzip", tc.name, rec.Header().Get("Content-Encoding"))
			}
			if got := testtool.Decode(t, "gzip", rec.Body.Bytes()); !bytes.Equal(got, textBody(1, 4096)) {
				t.Errorf("body did not round-trip")
			}
			// Its other methods take it as the defaults too.
			if !tc.m.Compresses("text/html") || tc.m.Compresses("image/png") {
				t.Errorf("%s Middleware: Compresses disagrees with the default content types", tc.name)
			}
			files := tc.m.FileServer(fstest.MapFS{"app.js": {Data: textBody(2, 4096)}})
			rec = serveAt(files, "/app.js", "gzip")
			if rec.Code != http.StatusOK || rec.Header().Get("Content-Encoding") != "gzip" {
				t.Errorf("%s Middleware's FileServer: %d, Content-Encoding %q; want 200, gzip", tc.name, rec.Code, rec.Header().Get("Content-Encoding"))
			}
		})
	}
}

// WriteHeader with a code outside 100-999 panics in WriteHeader itself, as
// net/http does (checkWriteHeaderCode), where the handler, or a recovery
// middleware between squeeze and the handler, can catch it; not later, when
// the response commits in squeeze's deferred finish, past every recovery the
// application installed inside it.
func TestInvalidStatusPanicsInWriteHeader(t *testing.T) {
	var recovered any
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { recovered = recover() }()
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(1000)
	}))
	var escaped any
	func() {
		defer func() { escaped = recover() }()
		serve(h, "GET", "zstd")
	}()
	if recovered == nil {
		t.Errorf("WriteHeader(1000) did not panic in the handler; the panic escaped from the middleware instead: %v", escaped)
	}
}
