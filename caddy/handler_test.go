package squeezecaddy_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/squeezehttp/squeeze"
	squeezecaddy "github.com/squeezehttp/squeeze/caddy"
	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// provisioned returns h provisioned as Caddy does, cleaned up when the
// test ends.
func provisioned(t *testing.T, h *squeezecaddy.Handler) *squeezecaddy.Handler {
	t.Helper()
	if err := h.Provision(caddy.Context{}); err != nil {
		t.Fatal(err)
	}
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Cleanup(); err != nil {
			t.Error(err)
		}
	})
	return h
}

// route is h in front of next, as Caddy's route runs it: the error the
// route returns is Caddy's to answer, with its status.
func route(h caddyhttp.MiddlewareHandler, next caddyhttp.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.ServeHTTP(w, r, next); err != nil {
			var he caddyhttp.HandlerError
			if !errors.As(err, &he) {
				he.StatusCode = http.StatusInternalServerError
			}
			w.WriteHeader(he.StatusCode)
		}
	})
}

// Over HTTP/1.1 and HTTP/2, the provisioned handler compresses what the
// rest of the route sends, marks a script under its dictionary pattern as
// a dictionary, sends the next release as a dcz delta to a client that
// names it, and passes the route's error on to Caddy.
func TestHandlerSendsDeltasAndPassesErrorsOn(t *testing.T) {
	pair := corpus.Releases(t)[1]
	h := provisioned(t, &squeezecaddy.Handler{Dictionaries: []string{"/js/lodash-*.js"}})
	next := func(w http.ResponseWriter, r *http.Request) error {
		var body []byte
		switch r.URL.Path {
		case "/js/lodash-4.17.15.js":
			body = pair.Old
		case "/js/lodash-4.17.21.js":
			body = pair.New
		default:
			return caddyhttp.Error(http.StatusNotFound, errors.New("no such file"))
		}
		w.Header().Set("Content-Type", "text/javascript")
		w.Header().Set("Cache-Control", "max-age=3600")
		_, err := w.Write(body)
		return err
	}
	hash := sha256.Sum256(pair.Old)
	for _, proto := range testtool.Protocols() {
		srv, client := testtool.StartServer(t, proto.Name, proto.Major, route(h, next), true)
		for _, tc := range []struct {
			name, path, ae, dict string
			status               int
			coding, header       string
			want                 []byte
		}{
			{"the first release", "/js/lodash-4.17.15.js", "zstd, gzip", "", http.StatusOK, squeeze.Zstd, "Use-As-Dictionary", pair.Old},
			{"the next release as a delta", "/js/lodash-4.17.21.js", "zstd, gzip, dcz", ":" + base64.StdEncoding.EncodeToString(hash[:]) + ":", http.StatusOK, squeeze.DCZ, "Use-As-Dictionary", pair.New},
			{"a missing file", "/js/nothing.js", "zstd", "", http.StatusNotFound, "", "", nil},
		} {
			t.Run(proto.Name+" "+tc.name, func(t *testing.T) {
				var hdr []string
				if tc.dict != "" {
					hdr = []string{"Available-Dictionary", tc.dict}
				}
				res, raw := testtool.Fetch(t, client, srv.URL+tc.path, tc.ae, hdr...)
				ce := res.Header.Get("Content-Encoding")
				if res.StatusCode != tc.status || ce != tc.coding {
					t.Fatalf("%d with Content-Encoding %q, want %d with %q", res.StatusCode, ce, tc.status, tc.coding)
				}
				if tc.header != "" && res.Header.Get(tc.header) == "" {
					t.Errorf("no %s header", tc.header)
				}
				if tc.want == nil {
					return
				}
				var got []byte
				var err error
				if ce == squeeze.DCZ {
					got, err = testtool.DecodeDictionary(ce, raw, pair.Old)
					t.Logf("the delta: %d bytes for %d", len(raw), len(pair.New))
				} else {
					got, err = testtool.TryDecode(ce, raw)
				}
				if err != nil || string(got) != string(tc.want) {
					t.Errorf("decoded %d bytes (%v), want the %d of the release", len(got), err, len(tc.want))
				}
			})
		}
	}
}

// Provision refuses what squeeze refuses, and Validate what squeeze does
// not see, each error naming what the configuration said.
func TestHandlerRefusesInvalidConfigurations(t *testing.T) {
	for _, tc := range []struct {
		h    squeezecaddy.Handler
		want string
	}{
		{squeezecaddy.Handler{Prefer: []string{"zstd", "lzma"}}, `"lzma"`},
		{squeezecaddy.Handler{Levels: map[string]int{"br": 12}}, "level must be 0 to 11"},
		{squeezecaddy.Handler{Prefer: []string{"zstd"}, Levels: map[string]int{"gzip": 5}}, "gzip is not offered"},
		{squeezecaddy.Handler{Dictionaries: []string{"/js/(app).js"}}, "/js/(app).js"},
		{squeezecaddy.Handler{Types: []string{"text"}}, `"text"`},
		{squeezecaddy.Handler{MinLength: -1}, "minimum_length -1"},
		{squeezecaddy.Handler{CacheSize: -1}, "cache -1"},
		{squeezecaddy.Handler{Redis: &squeezecaddy.Redis{}}, "store redis needs"},
		{squeezecaddy.Handler{Redis: &squeezecaddy.Redis{Address: "redis-host"}}, `"redis-host": want host:port or a redis://`},
		{squeezecaddy.Handler{Redis: &squeezecaddy.Redis{Address: "http://redis-host:6379"}}, "invalid URL scheme"},
		{squeezecaddy.Handler{Redis: &squeezecaddy.Redis{Address: "redis://squeeze:hunter2@redis-host:port/0"}}, `invalid port ":port"`},
	} {
		err := tc.h.Provision(caddy.Context{})
		if err == nil {
			err = tc.h.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%+v: error %v, want one with %q (and no password)", tc.h, err, tc.want)
		}
	}
}

// store redis takes host:port or a redis:// or rediss:// URL with an ACL
// user, a password and a database; Provision connects to nothing.
func TestHandlerTakesRedisAddressesAndURLs(t *testing.T) {
	for _, addr := range []string{
		"127.0.0.1:6379",
		"redis.internal:6379",
		"redis://squeeze:secret@127.0.0.1:6379/2",
		"rediss://squeeze:secret@redis.internal:6380",
	} {
		provisioned(t, &squeezecaddy.Handler{Dictionaries: []string{"/js/*"}, Redis: &squeezecaddy.Redis{Address: addr}})
	}
}

// headerWriter is a ResponseWriter that discards the body and keeps one
// header map, cleared between requests, so that what a request allocates
// is the handlers'.
type headerWriter struct{ h http.Header }

func (w *headerWriter) Header() http.Header         { return w.h }
func (w *headerWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *headerWriter) WriteHeader(int)             {}

// The Caddy handler builds its squeeze handler once, at Provision: a
// request through it, with the Caddy variables Caddy's server gives every
// request, allocates no more than the same request through the bare
// squeeze handler in front of the same route.
func TestHandlerAllocatesNothingBeyondSqueeze(t *testing.T) {
	body := []byte(strings.Repeat("function squeeze(a, b) { return a + b; }\n", 500))
	file := func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = []string{"text/javascript"}
		w.Write(body)
	}
	h := provisioned(t, &squeezecaddy.Handler{})
	bare := squeeze.MustNew().Handler(http.HandlerFunc(file))
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		file(w, r)
		return nil
	})
	ctx := context.WithValue(context.Background(), caddyhttp.VarsCtxKey, map[string]any{})
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/app.js", nil)
	req.Header.Set("Accept-Encoding", "zstd")
	w := &headerWriter{h: http.Header{}}
	allocs := func(serve func()) float64 {
		return testing.AllocsPerRun(200, func() {
			clear(w.h)
			serve()
		})
	}
	for range 2 { // each pool warmed by the other's first round
		viaCaddy := allocs(func() {
			if err := h.ServeHTTP(w, req, next); err != nil {
				t.Fatal(err)
			}
		})
		viaSqueeze := allocs(func() { bare.ServeHTTP(w, req) })
		if viaCaddy > viaSqueeze {
			t.Errorf("a request through the Caddy handler allocates %v times, through squeeze's %v: the adapter adds %v", viaCaddy, viaSqueeze, viaCaddy-viaSqueeze)
		}
		t.Logf("allocations per request: Caddy handler %v, squeeze %v", viaCaddy, viaSqueeze)
	}
	if w.h.Get("Content-Encoding") != "zstd" {
		t.Fatalf("Content-Encoding %q: want the route's body encoded", w.h.Get("Content-Encoding"))
	}
}

// Cleanup closes the Middleware it provisioned, which waits for its
// background work: a learned round that the route's eighth sample started
// has returned when Cleanup does.
func TestHandlerCleanupWaitsForBackgroundWork(t *testing.T) {
	h := &squeezecaddy.Handler{Learned: []squeezecaddy.Learned{{Pattern: "/search/*", Samples: 8}}}
	if err := h.Provision(caddy.Context{}); err != nil {
		t.Fatal(err)
	}
	srv := route(h, func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Cache-Control", "public, max-age=60")
		var b strings.Builder
		for i := range 400 {
			fmt.Fprintf(&b, "<li><a href=\"/doc/%d\">%s result %d of the query</a></li>\n", i*31%997, r.URL.Path, i)
		}
		_, err := io.WriteString(w, b.String())
		return err
	})
	for i := range 8 {
		req := httptest.NewRequest(http.MethodGet, fmt.Sprintf("/search/%d", i), nil)
		req.Header.Set("Accept-Encoding", "zstd")
		srv.ServeHTTP(httptest.NewRecorder(), req)
	}
	if err := h.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if n := goroutinesIn("squeeze.(*learnedRoute).round("); n > 0 {
		t.Errorf("%d frames of a learned round still run after Cleanup", n)
	}
}

// goroutinesIn counts the goroutines with frame on their stacks.
func goroutinesIn(frame string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), frame)
		}
		buf = make([]byte, 2*len(buf))
	}
}
