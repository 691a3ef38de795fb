package squeeze_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// Responses with Compression Dictionary Transport (RFC 9842): deltas against
// remembered bodies and standalone dictionaries, and every case that falls
// back to the codings of RFC 9110.

var zeroTime time.Time

// chromeAE is the Accept-Encoding Chromium sends once it holds a dictionary.
const chromeAE = "gzip, deflate, br, zstd, dcb, dcz"

// versions returns two versions of a script of about n bytes that differ in
// a few places, as two releases of a library do.
func versions(n int) (v1, v2 []byte) {
	v1 = textBody(7, n)
	v2 = bytes.Clone(v1)
	for i := n / 5; i < n; i += n / 5 {
		copy(v2[i:], "changed in v2")
	}
	return v1, v2
}

// scripts serves files as application/javascript by path, with a strong
// ETag and an hour's freshness, and 404 for anything else.
func scripts(files map[string][]byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/javascript")
		w.Header().Set("ETag", fmt.Sprintf(`"%x"`, sha256.Sum256(body)))
		// A browser keeps a dictionary only while it is fresh: without a
		// freshness, squeeze sends no Use-As-Dictionary.
		if w.Header().Get("Cache-Control") == "" {
			w.Header().Set("Cache-Control", "max-age=3600")
		}
		_, _ = w.Write(body)
	}
}

// fresh gives the responses of h an hour's freshness, without which a
// browser keeps no dictionary and squeeze sends no Use-As-Dictionary.
func fresh(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=3600")
		h(w, r)
	}
}

// decodeDelta decodes a dcz or dcb body with the dictionary and compares it
// with want.
func decodeDelta(t *testing.T, h http.Header, raw, dict, want []byte) {
	t.Helper()
	ce := h.Get("Content-Encoding")
	got, err := testtool.DecodeDictionary(ce, raw, dict)
	if err != nil {
		t.Fatalf("decoding %d-byte %s body: %v", len(raw), ce, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("decoded %s body differs: got %d bytes, want %d", ce, len(got), len(want))
	}
}

func wantDictVary(t *testing.T, h http.Header) {
	t.Helper()
	v := varyTokens(h)
	if countFold(v, "Accept-Encoding") != 1 || countFold(v, "Available-Dictionary") != 1 || countFold(v, "Sec-Fetch-Site") != 1 {
		t.Errorf("Vary = %q, want Accept-Encoding, Available-Dictionary and Sec-Fetch-Site once each", h.Values("Vary"))
	}
}

func TestDictionaryDeltaAgainstAnEarlierVersion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		size   int // below the 32 KiB buffer: sent whole; above: streamed
		opts   []squeeze.Option
		coding string
	}{
		{"dcz whole", 16 << 10, nil, squeeze.DCZ},
		{"dcz streamed", 200 << 10, nil, squeeze.DCZ},
		{"dcb whole", 16 << 10, []squeeze.Option{squeeze.WithEncodings(squeeze.DCB, squeeze.DCZ, squeeze.Zstd)}, squeeze.DCB},
		{"dcb streamed", 200 << 10, []squeeze.Option{squeeze.WithEncodings(squeeze.DCB, squeeze.Zstd)}, squeeze.DCB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v1, v2 := versions(tc.size)
			opts := append([]squeeze.Option{squeeze.WithDictionaryMatch("/js/app.*.js")}, tc.opts...)
			h := newMiddleware(t, opts...).Handler(scripts(map[string][]byte{"/js/app.v1.js": v1, "/js/app.v2.js": v2}))
			forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				res, raw := fetch(t, c, srv.URL+"/js/app.v1.js", chromeAE)
				if got := res.Header.Get("Use-As-Dictionary"); got != `match="/js/app.*.js"` {
					t.Errorf("v1 Use-As-Dictionary = %q", got)
				}
				wantDictVary(t, res.Header)
				if ce := res.Header.Get("Content-Encoding"); ce != squeeze.Zstd && ce != squeeze.Brotli {
					t.Errorf("v1 (no dictionary yet) Content-Encoding = %q, want zstd or br", ce)
				}
				checkBody(t, res.Header, raw, v1)

				res, raw = fetch(t, c, srv.URL+"/js/app.v2.js", chromeAE, "Available-Dictionary", availableFor(v1))
				if ce := res.Header.Get("Content-Encoding"); ce != tc.coding {
					t.Fatalf("v2 Content-Encoding = %q, want %s", ce, tc.coding)
				}
				wantDictVary(t, res.Header)
				decodeDelta(t, res.Header, raw, v1, v2)
				if len(raw) > 400 {
					t.Errorf("v2 as %s is %d bytes; a delta of a few changes should be under 400", tc.coding, len(raw))
				}
				wantTag := fmt.Sprintf(`"%x-%s"`, sha256.Sum256(v2), tc.coding)
				if got := res.Header.Get("ETag"); got != wantTag {
					t.Errorf("ETag = %s, want %s", got, wantTag)
				}
				if cl := res.Header.Get("Content-Length"); tc.size < 32<<10 && cl != strconv.Itoa(len(raw)) {
					t.Errorf("whole delta Content-Length = %q, want %d", cl, len(raw))
				}
			})
		})
	}
}

// TestDictionaryFallsBackToPlainCodings: without every condition of RFC
// 9842 the response is negotiated as without dictionaries, and still varies
// on Available-Dictionary.
func TestDictionaryFallsBackToPlainCodings(t *testing.T) {
	v1, v2 := versions(16 << 10)
	other := textBody(99, 16<<10)
	files := map[string][]byte{"/js/app.v1.js": v1, "/js/app.v2.js": v2, "/js/other.js": other, "/lib/x.js": v2}
	avail := availableFor(v1)
	tests := []struct {
		name, path, ae string
		hdr            []string
		opts           []squeeze.Option
		want           string
	}{
		{"no dictionary coding in Accept-Encoding", "/js/app.v2.js", "gzip, br, zstd", []string{"Available-Dictionary", avail}, nil, squeeze.Zstd},
		{"only * in Accept-Encoding", "/js/app.v2.js", "*", []string{"Available-Dictionary", avail}, nil, squeeze.Zstd},
		{"dcz refused with q=0", "/js/app.v2.js", "zstd, dcz;q=0", []string{"Available-Dictionary", avail}, []squeeze.Option{squeeze.WithEncodings(squeeze.DCZ, squeeze.Zstd)}, squeeze.Zstd},
		{"no Available-Dictionary", "/js/app.v2.js", chromeAE, nil, nil, squeeze.Zstd},
		{"Available-Dictionary not a byte sequence", "/js/app.v2.js", chromeAE, []string{"Available-Dictionary", strings.Trim(avail, ":")}, nil, squeeze.Zstd},
		{"Available-Dictionary of an unknown body", "/js/app.v2.js", chromeAE, []string{"Available-Dictionary", availableFor(other)}, nil, squeeze.Zstd},
		{"path outside the dictionary's pattern", "/lib/x.js", chromeAE, []string{"Available-Dictionary", avail}, nil, squeeze.Zstd},
		{"path of another pattern", "/js/other.js", chromeAE, []string{"Available-Dictionary", avail}, nil, squeeze.Zstd},
		{"cross-site request", "/js/app.v2.js", chromeAE, []string{"Available-Dictionary", avail, "Sec-Fetch-Site", "cross-site"}, nil, squeeze.Zstd},
		{"same-site but not same-origin", "/js/app.v2.js", chromeAE, []string{"Available-Dictionary", avail, "Sec-Fetch-Site", "same-site"}, nil, squeeze.Zstd},
		{"range request", "/js/app.v2.js", chromeAE, []string{"Available-Dictionary", avail, "Range", "bytes=0-99"}, nil, ""},
		{"only the other dictionary coding listed", "/js/app.v2.js", "br, zstd, dcb", []string{"Available-Dictionary", avail}, []squeeze.Option{squeeze.WithEncodings(squeeze.Brotli, squeeze.Zstd, squeeze.DCZ)}, squeeze.Brotli},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]squeeze.Option{squeeze.WithDictionaryMatch("/js/app.*.js", "/js/other.js")}, tt.opts...)
			h := newMiddleware(t, opts...).Handler(scripts(files))
			// Chromium's own request for v1, which squeeze remembers.
			if rec := serveAt(h, "/js/app.v1.js", chromeAE); rec.Header().Get("Use-As-Dictionary") == "" {
				t.Fatal("v1 went out without Use-As-Dictionary")
			}
			rec := serveAt(h, tt.path, tt.ae, tt.hdr...)
			if ce := rec.Header().Get("Content-Encoding"); ce != tt.want {
				t.Fatalf("Content-Encoding = %q, want %q", ce, tt.want)
			}
			if rec.Code == http.StatusOK {
				checkBody(t, rec.Header(), rec.Body.Bytes(), files[tt.path])
			}
			if tt.path != "/lib/x.js" {
				wantDictVary(t, rec.Header())
			} else if countFold(varyTokens(rec.Header()), "Available-Dictionary") != 0 {
				t.Errorf("Vary = %q on a path no pattern matches", rec.Header().Values("Vary"))
			}
		})
	}
}

// remembered reports whether h holds body as a dictionary for path: whether
// a request naming it gets a dcz response. It asks with POST, whose
// response is never remembered itself.
func remembered(h http.Handler, path string, body []byte) bool {
	rec := serveMethod(h, http.MethodPost, path, chromeAE, "Available-Dictionary", availableFor(body))
	return rec.Header().Get("Content-Encoding") == squeeze.DCZ
}

func TestDictionaryRemembersOnlyWholeEligibleGETs(t *testing.T) {
	v1, _ := versions(16 << 10)
	big := textBody(3, 100<<10)
	tests := []struct {
		name    string
		handler http.HandlerFunc
		method  string
		useAs   bool
		want    bool
	}{
		{"GET 200 remembered", writeText("text/javascript", v1, 0), http.MethodGet, true, true},
		// Served without the hour's freshness (fresh): a browser would
		// not keep it.
		{"GET 200 without freshness", writeText("text/javascript", v1, 0), http.MethodGet, false, false},
		{"GET streamed remembered", writeText("text/javascript", big, 4096), http.MethodGet, true, true},
		{"HEAD carries the header, remembers nothing", writeText("text/javascript", v1, 0), http.MethodHead, true, false},
		{"POST", writeText("text/javascript", v1, 0), http.MethodPost, false, false},
		{"404", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/javascript")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write(v1)
		}, http.MethodGet, false, false},
		{"ineligible type", writeText("image/png", v1, 0), http.MethodGet, false, false},
		{"length mismatch", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/javascript")
			w.Header().Set("Content-Length", strconv.Itoa(len(v1)+10))
			_, _ = w.Write(v1)
		}, http.MethodGet, true, false},
		{"streamed length mismatch", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/javascript")
			w.Header().Set("Content-Length", strconv.Itoa(len(big)+10))
			writeChunks(w, big, 4096)
		}, http.MethodGet, true, false},
		{"handler's own Use-As-Dictionary", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/javascript")
			w.Header().Set("Use-As-Dictionary", `match="/elsewhere/*"`)
			_, _ = w.Write(v1)
		}, http.MethodGet, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			handler := fresh(tt.handler)
			if tt.name == "GET 200 without freshness" {
				handler = tt.handler
			}
			h := newMiddleware(t, squeeze.WithDictionaryMatch("/js/*")).Handler(handler)
			rec := serveMethod(h, tt.method, "/js/a.js", chromeAE)
			if got := rec.Header().Get("Use-As-Dictionary") != ""; got != tt.useAs {
				t.Errorf("Use-As-Dictionary present = %v, want %v", got, tt.useAs)
			}
			body := v1
			if strings.Contains(tt.name, "streamed") {
				body = big
			}
			if got := remembered(h, "/js/b.js", body); got != tt.want {
				t.Errorf("remembered = %v, want %v", got, tt.want)
			}
		})
	}
}

// A streamed body is remembered only up to the largest body the store takes
// (a quarter of its size): past that, collecting it stops.
func TestDictionaryStreamPastTheLargestBodyNotRemembered(t *testing.T) {
	for _, tt := range []struct {
		name string
		body []byte
		want bool
	}{
		{"within a quarter of the store", textBody(5, 40<<10), true},
		{"past a quarter of the store", textBody(6, 100<<10), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := newMiddleware(t, squeeze.WithDictionaryMatch("/js/*"), squeeze.WithDictionaryStoreSize(200<<10))
			h := m.Handler(fresh(writeText("text/javascript", tt.body, 4096)))
			serveAt(h, "/js/a.js", chromeAE)
			if got := remembered(h, "/js/b.js", tt.body); got != tt.want {
				t.Errorf("remembered = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDictionaryNotRememberedAfterPanic(t *testing.T) {
	v1, _ := versions(16 << 10)
	first := true
	h := newMiddleware(t, squeeze.WithDictionaryMatch("/js/*")).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = w.Write(v1)
		if first {
			first = false
			panic(http.ErrAbortHandler)
		}
	}))
	func() {
		defer func() { _ = recover() }()
		serveAt(h, "/js/a.js", chromeAE)
	}()
	if remembered(h, "/js/a.js", v1) {
		t.Error("a body cut short by a panic was remembered")
	}
}

func TestDictionaryStoreEvictsLeastRecentlyUsed(t *testing.T) {
	a, b, c := textBody(1, 10<<10), textBody(2, 10<<10), textBody(3, 10<<10)
	files := map[string][]byte{"/d/a": a, "/d/b": b, "/d/c": c, "/d/big": textBody(4, 11<<10+1)}
	// A budget of 44 KiB holds four 10 KiB bodies, each charged 1 KiB more
	// for its entry, and refuses one over 11 KiB, a quarter of it.
	h := newMiddleware(t, squeeze.WithDictionaryMatch("/d/*"), squeeze.WithDictionaryStoreSize(44<<10),
		squeeze.WithMinSize(0)).Handler(scripts(files))
	for _, p := range []string{"/d/a", "/d/b", "/d/big"} {
		serveAt(h, p, "gzip")
	}
	if remembered(h, "/d/a", files["/d/big"]) {
		t.Error("a body over a quarter of the budget was remembered")
	}
	if !remembered(h, "/d/a", a) { // a is now the most recently used
		t.Fatal("a was not remembered")
	}
	serveAt(h, "/d/c", "gzip")          // 33 KiB: all fit
	serveAt(h, "/d/x", "gzip")          // 404: not remembered
	files["/d/e"] = textBody(5, 10<<10) // 44 KiB: all fit
	serveAt(h, "/d/e", "gzip")          //
	files["/d/f"] = textBody(6, 10<<10) // 55 KiB: b, the least recently used, goes
	serveAt(h, "/d/f", "gzip")          //
	for _, tc := range []struct {
		name string
		body []byte
		want bool
	}{{"b", b, false}, {"a", a, true}, {"c", c, true}, {"f", files["/d/f"], true}} {
		if got := remembered(h, "/d/a", tc.body); got != tc.want {
			t.Errorf("%s remembered = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDictionaryVaryMergesWithTheHandlers(t *testing.T) {
	v1, _ := versions(16 << 10)
	for _, vary := range [][]string{nil, {"Accept-Encoding"}, {"Origin"}, {"accept-encoding, available-dictionary"}, {"Origin", "Available-Dictionary"}} {
		t.Run(strings.Join(vary, "|"), func(t *testing.T) {
			h := newMiddleware(t, squeeze.WithDictionaryMatch("/js/*")).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/javascript")
				w.Header()["Vary"] = vary
				_, _ = w.Write(v1)
			}))
			for _, ae := range []string{chromeAE, ""} {
				rec := serveAt(h, "/js/a.js", ae)
				wantDictVary(t, rec.Header())
				if strings.Contains(strings.Join(vary, ","), "Origin") && countFold(varyTokens(rec.Header()), "Origin") != 1 {
					t.Errorf("Vary %q lost the handler's Origin", rec.Header()["Vary"])
				}
			}
		})
	}
}

func TestDictionaryETagAndConditionalRequests(t *testing.T) {
	v1, v2 := versions(16 << 10)
	h := newMiddleware(t, squeeze.WithDictionaryMatch("/js/*")).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := v2
		if r.URL.Path == "/js/v1.js" {
			body = v1
		}
		w.Header().Set("Cache-Control", "max-age=3600") // a browser keeps only a fresh dictionary
		http.ServeContent(w, r, "app.js", zeroTime, bytes.NewReader(body))
	}))
	r1 := serveAt(h, "/js/v1.js", chromeAE)
	if r1.Code != http.StatusOK || r1.Header().Get("Use-As-Dictionary") == "" {
		t.Fatalf("v1: %d, Use-As-Dictionary %q", r1.Code, r1.Header().Get("Use-As-Dictionary"))
	}
	avail := availableFor(v1)
	h2 := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v2"`)
		h.ServeHTTP(w, r)
	})
	rec := serveAt(h2, "/js/v2.js", chromeAE, "Available-Dictionary", avail)
	if got := rec.Header().Get("ETag"); got != `"v2-dcz"` || rec.Header().Get("Content-Encoding") != squeeze.DCZ {
		t.Fatalf("ETag %q, Content-Encoding %q; want \"v2-dcz\", dcz", got, rec.Header().Get("Content-Encoding"))
	}
	rec = serveAt(h2, "/js/v2.js", chromeAE, "Available-Dictionary", avail, "If-None-Match", `"v2-dcz"`)
	if rec.Code != http.StatusNotModified || rec.Header().Get("ETag") != `"v2-dcz"` {
		t.Errorf("If-None-Match \"v2-dcz\": %d with ETag %q, want 304 with \"v2-dcz\"", rec.Code, rec.Header().Get("ETag"))
	}
	wantDictVary(t, rec.Header())
}

func TestDictionaryRangeAndNoTransformStayPlain(t *testing.T) {
	v1, v2 := versions(16 << 10)
	h := newMiddleware(t, squeeze.WithDictionaryMatch("/js/*")).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := v2
		if r.URL.Path == "/js/v1.js" {
			body = v1
		}
		if r.URL.Query().Has("nt") {
			w.Header().Set("Cache-Control", "no-transform")
		}
		http.ServeContent(w, r, "app.js", zeroTime, bytes.NewReader(body))
	}))
	serveAt(h, "/js/v1.js", chromeAE)
	avail := availableFor(v1)
	rec := serveAt(h, "/js/v2.js", chromeAE, "Available-Dictionary", avail, "Range", "bytes=10-19")
	if rec.Code != http.StatusPartialContent || rec.Header().Get("Content-Encoding") != "" || rec.Body.String() != string(v2[10:20]) {
		t.Errorf("range: %d, Content-Encoding %q, body %q", rec.Code, rec.Header().Get("Content-Encoding"), rec.Body.String())
	}
	rec = serveAt(h, "/js/v2.js?nt", chromeAE, "Available-Dictionary", avail)
	if rec.Header().Get("Content-Encoding") != "" || !bytes.Equal(rec.Body.Bytes(), v2) {
		t.Errorf("no-transform: Content-Encoding %q", rec.Header().Get("Content-Encoding"))
	}
	wantDictVary(t, rec.Header())
}

func TestDictionaryHEADAnswersWithTheHeadersOfGET(t *testing.T) {
	v1, v2 := versions(16 << 10)
	h := newMiddleware(t, squeeze.WithDictionaryMatch("/js/*")).Handler(scripts(map[string][]byte{"/js/v1.js": v1, "/js/v2.js": v2}))
	serveAt(h, "/js/v1.js", chromeAE)
	hdr := []string{"Available-Dictionary", availableFor(v1)}
	get := serveAt(h, "/js/v2.js", chromeAE, hdr...)
	head := serveMethod(h, http.MethodHead, "/js/v2.js", chromeAE, hdr...)
	for _, k := range []string{"Content-Encoding", "Vary", "Etag", "Use-As-Dictionary", "Content-Type"} {
		if g, hd := get.Header().Values(k), head.Header().Values(k); strings.Join(g, "|") != strings.Join(hd, "|") {
			t.Errorf("%s: GET %q, HEAD %q", k, g, hd)
		}
	}
}

func TestStandaloneDictionary(t *testing.T) {
	dict := []byte(strings.Repeat(`{"id":0,"name":"","email":"@example.com","roles":["reader","writer"],"active":true}`, 20))
	api := []byte(strings.Repeat(`{"id":17,"name":"Ada","email":"ada@example.com","roles":["reader"],"active":true}`, 30))
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte("<!doctype html><title>x</title>"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(api)
	})
	h := newMiddleware(t, squeeze.WithDictionary("/dict/api.dat", "/api/*", dict)).Handler(app)
	forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
		res, _ := fetch(t, c, srv.URL+"/", chromeAE)
		if got := res.Header.Get("Link"); got != `</dict/api.dat>; rel="compression-dictionary"` {
			t.Errorf("HTML Link = %q", got)
		}
		res, raw := fetch(t, c, srv.URL+"/dict/api.dat", "identity")
		if !bytes.Equal(raw, dict) {
			t.Fatalf("dictionary body: %d bytes, want %d", len(raw), len(dict))
		}
		if got := res.Header.Get("Use-As-Dictionary"); got != `match="/api/*"` {
			t.Errorf("Use-As-Dictionary = %q", got)
		}
		if et := res.Header.Get("ETag"); !strings.HasPrefix(et, `"`) || res.Header.Get("Cache-Control") == "" {
			t.Errorf("ETag %q, Cache-Control %q: want a strong tag and a lifetime", et, res.Header.Get("Cache-Control"))
		}
		res2, _ := fetch(t, c, srv.URL+"/dict/api.dat", "identity", "If-None-Match", res.Header.Get("ETag"))
		if res2.StatusCode != http.StatusNotModified {
			t.Errorf("revalidation: %d, want 304", res2.StatusCode)
		}
		res, raw = fetch(t, c, srv.URL+"/api/users", chromeAE, "Available-Dictionary", availableFor(dict))
		if ce := res.Header.Get("Content-Encoding"); ce != squeeze.DCZ {
			t.Fatalf("API Content-Encoding = %q, want dcz", ce)
		}
		decodeDelta(t, res.Header, raw, dict, api)
		wantDictVary(t, res.Header)
		res, _ = fetch(t, c, srv.URL+"/other", chromeAE, "Available-Dictionary", availableFor(dict))
		if ce := res.Header.Get("Content-Encoding"); ce != squeeze.Zstd {
			t.Errorf("outside the match: Content-Encoding = %q, want zstd", ce)
		}
		if res.Header.Get("Link") != "" {
			t.Error("a JSON response carries the Link")
		}
	})
}

// TestDictionaryConcurrentDeltas runs delta responses of both codings,
// plain responses and new dictionaries at once, for -race; every body must
// decode to what was served.
func TestDictionaryConcurrentDeltas(t *testing.T) {
	const n = 8
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = textBody(100+i, (8+i*12)<<10)
	}
	h := newMiddleware(t, squeeze.WithDictionaryMatch("/v/*"), squeeze.WithDictionaryStoreSize(2<<20)).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/v/"))
		w.Header().Set("Content-Type", "text/plain")
		writeChunks(w, bodies[i%n], 5000)
	}))
	for i := range bodies {
		serveAt(h, "/v/"+strconv.Itoa(i), "gzip")
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for k := range 10 {
				i := (g + k) % n
				dict := bodies[(i+1)%n]
				ae := []string{"dcz, zstd", "dcb, br", "gzip"}[(g+k)%3]
				rec := serveAt(h, "/v/"+strconv.Itoa(i), ae, "Available-Dictionary", availableFor(dict))
				ce := rec.Header().Get("Content-Encoding")
				var got []byte
				var err error
				if ce == squeeze.DCZ || ce == squeeze.DCB {
					got, err = testtool.DecodeDictionary(ce, rec.Body.Bytes(), dict)
				} else {
					got, err = testtool.TryDecode(ce, rec.Body.Bytes())
				}
				if err != nil || !bytes.Equal(got, bodies[i]) {
					t.Errorf("/v/%d as %q: %v", i, ce, err)
				}
			}
		})
	}
	wg.Wait()
}

func TestObserverReportsDictionaryDeltas(t *testing.T) {
	v1, v2 := versions(16 << 10)
	var events []squeeze.ResponseInfo
	h := newMiddleware(t, squeeze.WithDictionaryMatch("/js/app.*.js"),
		squeeze.WithObserver(squeeze.Observer{Response: func(e squeeze.ResponseInfo) { events = append(events, e) }}),
	).Handler(scripts(map[string][]byte{"/js/app.v1.js": v1, "/js/app.v2.js": v2}))
	serveAt(h, "/js/app.v1.js", chromeAE)
	rec := serveAt(h, "/js/app.v2.js", chromeAE, "Available-Dictionary", availableFor(v1))
	if len(events) != 2 {
		t.Fatalf("%d events, want 2", len(events))
	}
	if e := events[0]; e.Dictionary || e.Coding == squeeze.DCZ {
		t.Errorf("v1 event %+v: no dictionary was held yet", e)
	}
	e := events[1]
	if !e.Dictionary || e.Coding != squeeze.DCZ || e.In != int64(len(v2)) || e.Out != int64(rec.Body.Len()) {
		t.Errorf("v2 event %+v; want Dictionary, dcz, In %d, Out %d", e, len(v2), rec.Body.Len())
	}
}
