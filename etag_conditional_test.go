package squeeze_test

import (
	"bytes"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// ETag, Accept-Ranges and conditional requests

func TestETagAndAcceptRanges(t *testing.T) {
	m := newMiddleware(t, squeeze.WithEncodings(allCodings...))
	tests := []struct {
		name     string
		ae       string
		etag     string
		size     int
		wantCE   string
		wantETag string
		wantAR   string
	}{
		{"strong tag gets zstd suffix", "zstd", `"abc"`, 4000, squeeze.Zstd, `"abc-zstd"`, ""},
		{"strong tag gets br suffix", "br", `"abc"`, 4000, squeeze.Brotli, `"abc-br"`, ""},
		{"strong tag gets gzip suffix", "gzip", `"abc"`, 4000, squeeze.Gzip, `"abc-gzip"`, ""},
		{"strong tag gets deflate suffix", "deflate", `"abc"`, 4000, squeeze.Deflate, `"abc-deflate"`, ""},
		{"x-gzip request still gets gzip suffix", "x-gzip", `"abc"`, 4000, squeeze.Gzip, `"abc-gzip"`, ""},
		{"empty strong tag", "zstd", `""`, 4000, squeeze.Zstd, `"-zstd"`, ""},
		{"weak tag untouched", "zstd", `W/"abc"`, 4000, squeeze.Zstd, `W/"abc"`, ""},
		{"not compressed: no Accept-Encoding", "", `"abc"`, 4000, "", `"abc"`, "bytes"},
		{"not compressed: below min size", "zstd", `"abc"`, 100, "", `"abc"`, "bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := textBody(12, tt.size)
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				w.Header().Set("ETag", tt.etag)
				w.Header().Set("Accept-Ranges", "bytes")
				_, _ = w.Write(body)
			}))
			res, raw := record(h, request("GET", tt.ae))
			if got := res.Header.Get("Content-Encoding"); got != tt.wantCE {
				t.Errorf("Content-Encoding = %q, want %q", got, tt.wantCE)
			}
			if got := res.Header.Get("ETag"); got != tt.wantETag {
				t.Errorf("ETag = %s, want %s", got, tt.wantETag)
			}
			if got := res.Header.Get("Accept-Ranges"); got != tt.wantAR {
				t.Errorf("Accept-Ranges = %q, want %q", got, tt.wantAR)
			}
			checkBody(t, res.Header, raw, body)
		})
	}
}

// The coding suffix is stripped from validators on the way in, so
// http.ServeContent still answers conditional requests, and the 304 carries
// the tag the 200 did (Caddy's 304 carries the plain tag: caddy #7096).
func TestConditionalRequestsThroughServeContent(t *testing.T) {
	content := textBody(13, 5000)
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("ETag", `"v1"`)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(content))
	}))
	tests := []struct {
		name       string
		ae         string
		hdr        []string
		wantStatus int
		wantCE     string
		wantETag   string
	}{
		{"plain GET", "zstd", nil, 200, squeeze.Zstd, `"v1-zstd"`},
		{"If-None-Match with the zstd tag", "zstd", []string{"If-None-Match", `"v1-zstd"`}, 304, "", `"v1-zstd"`},
		{"If-None-Match with the br tag", "br", []string{"If-None-Match", `"v1-br"`}, 304, "", `"v1-br"`},
		{"If-None-Match list", "gzip", []string{"If-None-Match", `"nope", "v1-gzip"`}, 304, "", `"v1-gzip"`},
		{"If-None-Match for identity", "", []string{"If-None-Match", `"v1"`}, 304, "", `"v1"`},
		{"If-None-Match with another version", "zstd", []string{"If-None-Match", `"v0-zstd"`}, 200, squeeze.Zstd, `"v1-zstd"`},
		{"If-Match with the zstd tag", "zstd", []string{"If-Match", `"v1-zstd"`}, 200, squeeze.Zstd, `"v1-zstd"`},
		{"If-Match with another version", "zstd", []string{"If-Match", `"v0-zstd"`}, 412, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request("GET", tt.ae)
			for i := 0; i+1 < len(tt.hdr); i += 2 {
				req.Header.Set(tt.hdr[i], tt.hdr[i+1])
			}
			res, raw := record(h, req)
			if res.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d", res.StatusCode, tt.wantStatus)
			}
			if got := res.Header.Get("Content-Encoding"); got != tt.wantCE {
				t.Errorf("Content-Encoding = %q, want %q", got, tt.wantCE)
			}
			if tt.wantETag != "" {
				if got := res.Header.Get("ETag"); got != tt.wantETag {
					t.Errorf("ETag = %s, want %s", got, tt.wantETag)
				}
			}
			if tt.wantStatus == 200 {
				if ar := res.Header.Get("Accept-Ranges"); ar != "" {
					t.Errorf("Accept-Ranges = %q on a compressed response", ar)
				}
				checkBody(t, res.Header, raw, content)
			} else if len(raw) != 0 {
				t.Errorf("%d response has a %d-byte body", res.StatusCode, len(raw))
			}
		})
	}
}

// serveContent answers with http.ServeContent, so its preconditions and
// 304s are net/http's own.
func serveContent(etag string, body []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("ETag", etag)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	})
}

func varies(h http.Header) bool {
	for _, v := range h.Values("Vary") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "Accept-Encoding") {
				return true
			}
		}
	}
	return false
}

func TestConditionalRequestsMatchEveryFormOfTheTag(t *testing.T) {
	body := textBody(1, 8<<10)
	m := squeeze.MustNew()
	tests := []struct {
		name       string
		etag       string
		method     string
		hdr        []string
		wantStatus int
		wantETag   string
	}{
		{"If-None-Match with the coded tag", `"abc"`, "GET", []string{"If-None-Match", `"abc-zstd"`}, 304, `"abc-zstd"`},
		{"If-None-Match with the weak coded tag", `"abc"`, "GET", []string{"If-None-Match", `W/"abc-zstd"`}, 304, `"abc-zstd"`},
		{"If-None-Match with the plain tag", `"abc"`, "GET", []string{"If-None-Match", `"abc"`}, 304, `"abc"`},
		// "*" names no representation, and ServeContent's 304 has no type
		// to tell whether its 200 was encoded: the handler's tag stays.
		{"If-None-Match star", `"abc"`, "GET", []string{"If-None-Match", `*`}, 304, `"abc"`},
		{"If-None-Match with another coding's tag", `"abc"`, "GET", []string{"If-None-Match", `"abc-gzip"`}, 200, `"abc-zstd"`},
		{"handler's own tag ending like a suffix, If-None-Match", `"v1-zstd"`, "GET", []string{"If-None-Match", `"v1-zstd"`}, 304, `"v1-zstd"`},
		{"handler's own tag ending like a suffix, If-Match", `"doc-pt-br"`, "GET", []string{"If-Match", `"doc-pt-br"`}, 200, `"doc-pt-br-zstd"`},
		{"If-Match with the coded tag", `"abc"`, "GET", []string{"If-Match", `"abc-br"`}, 200, `"abc-zstd"`},
		{"If-Match with a stale tag", `"abc"`, "GET", []string{"If-Match", `"old-zstd"`}, 412, ``},
		{"HEAD carries the GET's coded tag", `"abc"`, "HEAD", nil, 200, `"abc-zstd"`},
		{"conditional HEAD with the GET's tag", `"abc"`, "HEAD", []string{"If-None-Match", `"abc-zstd"`}, 304, `"abc-zstd"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(m.Handler(serveContent(tt.etag, body)), tt.method, "zstd", tt.hdr...)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d", rec.Code, tt.wantStatus)
			}
			if tt.wantETag != "" && rec.Header().Get("ETag") != tt.wantETag {
				t.Errorf("ETag = %s, want %s", rec.Header().Get("ETag"), tt.wantETag)
			}
			if rec.Code != 412 && !varies(rec.Header()) {
				t.Errorf("Vary = %q, want Accept-Encoding: the %d stands for a response that varies", rec.Header().Values("Vary"), rec.Code)
			}
		})
	}
}

func TestHeadAnswersWithTheHeadersOfGet(t *testing.T) {
	body := textBody(1, 8<<10)
	for _, name := range []string{"ServeContent (declares, writes nothing)", "handler writes the body"} {
		t.Run(name, func(t *testing.T) {
			h := serveContent(`"abc"`, body)
			if !strings.HasPrefix(name, "ServeContent") {
				h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/html; charset=utf-8")
					w.Header().Set("ETag", `"abc"`)
					_, _ = w.Write(body)
				})
			}
			h = squeeze.MustNew().Handler(h)
			get, head := serve(h, "GET", "gzip"), serve(h, "HEAD", "gzip")
			for _, k := range []string{"Content-Encoding", "Etag", "Vary", "Content-Type", "Accept-Ranges"} {
				if !slices.Equal(get.Header()[k], head.Header()[k]) {
					t.Errorf("%s: GET %q, HEAD %q", k, get.Header()[k], head.Header()[k])
				}
			}
			if cl := head.Header().Get("Content-Length"); cl != "" && cl != get.Header().Get("Content-Length") {
				t.Errorf("HEAD Content-Length %s, GET %s", cl, get.Header().Get("Content-Length"))
			}
		})
	}
}

// A 304 to a request that names no tag (If-Modified-Since alone) carries
// the tag its 200 would where squeeze can tell: the coded one for a type
// it compresses, declared on the 304, so that a cache holding the encoded
// response can freshen it (RFC 9111 §4.3.4); the plain one for a type it
// does not, and for a client that accepts no coding. Where it cannot tell
// (no type, as from http.ServeContent), the handler's tag stays: a wrong
// coded tag would be worse than the plain one (see
// TestNotModifiedSinceSmallBodyKeepsPlainTag and TestNotModifiedSinceImageKeepsPlainTag).
func TestNotModifiedBySinceCarriesTheTagOfItsOK(t *testing.T) {
	mod := time.Unix(1700000000, 0)
	since := mod.UTC().Format(http.TimeFormat)
	page := textBody(1, 8<<10)
	tests := []struct {
		name, contentType, ae, want string
	}{
		{"page, gzip", "text/html; charset=utf-8", "gzip", `"v1-gzip"`},
		{"page, zstd", "text/html; charset=utf-8", "zstd", `"v1-zstd"`},
		{"page, no coding accepted", "text/html; charset=utf-8", "identity", `"v1"`},
		{"image", "image/png", "gzip", `"v1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := squeeze.MustNew().Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("ETag", `"v1"`)
				w.Header().Set("Content-Type", tt.contentType)
				if r.Header.Get("If-Modified-Since") == since {
					// As ServeContent would, but keeping the type, so
					// that the type decides.
					w.WriteHeader(http.StatusNotModified)
					return
				}
				_, _ = w.Write(page)
			}))
			ok := serve(h, "GET", tt.ae)
			nm := serve(h, "GET", tt.ae, "If-Modified-Since", since)
			if nm.Code != http.StatusNotModified {
				t.Fatalf("status %d, want 304", nm.Code)
			}
			if got := nm.Header().Get("ETag"); got != tt.want || got != ok.Header().Get("ETag") {
				t.Errorf("304 ETag %s, want %s; the 200 carries %s", got, tt.want, ok.Header().Get("ETag"))
			}
		})
	}
	// A FileServer behind a Middleware encodes for itself: its 304 carries
	// its 200's coded tag already, and gets no second suffix.
	fsys := fstest.MapFS{"a.html": {Data: page, ModTime: mod}}
	fm := squeeze.MustNew()
	for name, h := range map[string]http.Handler{"own Middleware": fm.Handler(fm.FileServer(fsys)), "another Middleware": squeeze.MustNew().Handler(fm.FileServer(fsys))} {
		ok := serveAt(h, "/a.html", "br")
		nm := serveAt(h, "/a.html", "br", "If-Modified-Since", since)
		if tag := ok.Header().Get("ETag"); nm.Code != http.StatusNotModified || nm.Header().Get("ETag") != tag || !strings.HasSuffix(tag, `-br"`) {
			t.Errorf("FileServer behind %s: 200 ETag %s; then status %d, ETag %s", name, tag, nm.Code, nm.Header().Get("ETag"))
		}
	}
	// http.ServeContent drops Content-Type from its 304: squeeze cannot
	// tell a page from an image, nor a page long enough to encode from
	// one that is not, so the handler's tag stays.
	h := squeeze.MustNew().Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		http.ServeContent(w, r, "page.html", mod, bytes.NewReader(page))
	}))
	if ok := serve(h, "GET", "gzip"); ok.Header().Get("ETag") != `"v1-gzip"` {
		t.Fatalf("200 ETag %s, want \"v1-gzip\"", ok.Header().Get("ETag"))
	}
	nm := serve(h, "GET", "gzip", "If-Modified-Since", since)
	if nm.Code != http.StatusNotModified || nm.Header().Get("ETag") != `"v1"` {
		t.Errorf("ServeContent's 304: status %d, ETag %s; want 304 with \"v1\"", nm.Code, nm.Header().Get("ETag"))
	}
}

func TestNotModifiedCarriesVaryOfItsOK(t *testing.T) {
	h := squeeze.MustNew().Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"p"`)
		w.Header().Set("Content-Type", "image/png")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(randomBody(1, 4096)))
	}))
	rec := serve(h, "GET", "zstd", "If-None-Match", `"p"`)
	if rec.Code != 304 {
		t.Fatalf("status %d", rec.Code)
	}
	// ServeContent drops Content-Type from its 304, so squeeze cannot tell
	// a PNG from a page: the 304 may vary, never the other way round.
	if !varies(rec.Header()) {
		t.Errorf("304 without Content-Type has no Vary: Accept-Encoding")
	}
	h = squeeze.MustNew().Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.WriteHeader(http.StatusNotModified)
	}))
	if rec := serve(h, "GET", "zstd"); varies(rec.Header()) {
		t.Errorf("304 of a declared PNG varies: %q", rec.Header().Values("Vary"))
	}
}

// Entity tags have no quoted-pair: etagc is %x21 / %x23-7E / obs-text, so a
// backslash is an ordinary character (RFC 9110 §8.8.3). A tag ending in a
// backslash in an If-None-Match list swallows nothing after it: the client's
// suffixed tag that follows still gets its 304, as http.ServeContent's own
// parser (scanETag) reads the same list.
func TestIfNoneMatchListWithBackslashTagStillMatches(t *testing.T) {
	body := textBody(8, 8000)
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"abc"`)
		http.ServeContent(w, r, "a.txt", time.Time{}, bytes.NewReader(body))
	}))
	// The suffixed tag this client holds, after an unrelated tag that ends
	// in a backslash.
	rec := serve(h, "GET", "zstd", "If-None-Match", `"old\", "abc-zstd"`)
	if rec.Code != http.StatusNotModified {
		t.Errorf("status %d, want 304: the list names %q, the tag of the zstd response", rec.Code, `"abc-zstd"`)
	}
	if got := rec.Header().Get("Etag"); rec.Code == http.StatusNotModified && got != `"abc-zstd"` {
		t.Errorf("304 ETag %q, want the one the client named", got)
	}
}

// With WithMinSize(0), a HEAD whose handler declares a length below 2 (or
// writes and declares nothing) has the Content-Encoding and Content-Length of
// the GET of the same resource, which always goes out plain since no encoding
// of 0 or 1 bytes is smaller. RFC 9110 §9.3.2: HEAD answers with the header
// fields GET would send.
func TestHeadOfATinyBodyMatchesGet(t *testing.T) {
	for _, body := range []string{"", "x"} {
		t.Run(strconv.Itoa(len(body))+" bytes", func(t *testing.T) {
			h := newMiddleware(t, squeeze.WithMinSize(0)).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				http.ServeContent(w, r, "", time.Time{}, strings.NewReader(body))
			}))
			get, head := serve(h, "GET", "zstd"), serve(h, "HEAD", "zstd")
			if g, hd := get.Header().Get("Content-Encoding"), head.Header().Get("Content-Encoding"); g != hd {
				t.Errorf("Content-Encoding: GET %q, HEAD %q", g, hd)
			}
			if g, hd := get.Header().Get("Content-Length"), head.Header().Get("Content-Length"); g != hd {
				t.Errorf("Content-Length: GET %q, HEAD %q", g, hd)
			}
		})
	}
}

// A body below WithMinSize goes out plain with the plain tag; the 304 to
// If-Modified-Since alone must carry the same tag, not the coded one.
func TestNotModifiedSinceSmallBodyKeepsPlainTag(t *testing.T) {
	mod := time.Unix(1700000000, 0)
	since := mod.UTC().Format(http.TimeFormat)
	small := []byte("<p>tiny page</p>")
	h := squeeze.MustNew().Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		http.ServeContent(w, r, "page.html", mod, bytes.NewReader(small))
	}))
	ok := serve(h, "GET", "gzip")
	if ok.Code != 200 || ok.Header().Get("Content-Encoding") != "" {
		t.Fatalf("200: %d %q", ok.Code, ok.Header().Get("Content-Encoding"))
	}
	nm := serve(h, "GET", "gzip", "If-Modified-Since", since)
	if nm.Code != 304 || nm.Header().Get("ETag") != ok.Header().Get("ETag") {
		t.Errorf("200 ETag %s; 304 (status %d) ETag %s", ok.Header().Get("ETag"), nm.Code, nm.Header().Get("ETag"))
	}
}

// An orphan .br sibling behind a Middleware that prefers zstd: the 200 is
// br with tag "h-br"; the 304 to If-Modified-Since must carry the same.
func TestNotModifiedSinceFileServerOrphanSiblingKeepsItsTag(t *testing.T) {
	mod := time.Unix(1700000000, 0)
	since := mod.UTC().Format(http.TimeFormat)
	page := textBody(1, 8<<10)
	enc := testtool.Encode(t, "br", page)
	fsys := fstest.MapFS{"a.html.br": {Data: enc, ModTime: mod}}
	m := squeeze.MustNew()
	h := m.Handler(m.FileServer(fsys))
	ok := serveAt(h, "/a.html", "gzip, br, zstd")
	nm := serveAt(h, "/a.html", "gzip, br, zstd", "If-Modified-Since", since)
	t.Logf("200 CE %q ETag %s; 304 status %d ETag %s", ok.Header().Get("Content-Encoding"), ok.Header().Get("ETag"), nm.Code, nm.Header().Get("ETag"))
	if nm.Code != 304 || nm.Header().Get("ETag") != ok.Header().Get("ETag") {
		t.Errorf("200 ETag %s; 304 (status %d) ETag %s", ok.Header().Get("ETag"), nm.Code, nm.Header().Get("ETag"))
	}
}

// http.ServeContent drops Content-Type from its 304, so a 304 for an image
// (a type squeeze never encodes) to If-Modified-Since alone gets a coded tag
// that no 200 of it ever carries.
func TestNotModifiedSinceImageKeepsPlainTag(t *testing.T) {
	mod := time.Unix(1700000000, 0)
	since := mod.UTC().Format(http.TimeFormat)
	img := append([]byte("\x89PNG\r\n\x1a\n"), randomBody(1, 5000)...)
	m := squeeze.MustNew()
	for name, h := range map[string]http.Handler{
		"ServeContent": m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("ETag", `"v1"`)
			http.ServeContent(w, r, "b.png", mod, bytes.NewReader(img))
		})),
		"FileServer behind Middleware": m.Handler(m.FileServer(fstest.MapFS{"b.png": {Data: img, ModTime: mod}})),
	} {
		for _, hdr := range [][]string{{"If-Modified-Since", since}, {"If-None-Match", "*"}} {
			ok := serveAt(h, "/b.png", "gzip, br")
			nm := serveAt(h, "/b.png", "gzip, br", hdr...)
			if ok.Code != 200 || ok.Header().Get("Content-Encoding") != "" {
				t.Fatalf("%s: 200: %d %q", name, ok.Code, ok.Header().Get("Content-Encoding"))
			}
			if nm.Code != 304 || nm.Header().Get("ETag") != ok.Header().Get("ETag") {
				t.Errorf("%s %v: 200 ETag %s; 304 (status %d) ETag %s", name, hdr, ok.Header().Get("ETag"), nm.Code, nm.Header().Get("ETag"))
			}
		}
	}
}
