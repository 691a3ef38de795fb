package squeeze_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// A body below WithMinSize goes out plain with the plain tag; the 304 to
// If-Modified-Since alone must carry the same tag, not the coded one.
func TestReview7NotModifiedSinceSmallBodyKeepsPlainTag(t *testing.T) {
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
func TestReview7NotModifiedSinceFileServerOtherCoding(t *testing.T) {
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
func TestReview7NotModifiedSinceImageKeepsPlainTag(t *testing.T) {
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

// roundTripFunc answers requests in process.
type review7RT func(*http.Request) (*http.Response, error)

func (f review7RT) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A server (or many virtual hosts of one attacker, *.evil.example) that
// gives each origin one tiny dictionary: the heap the store holds must stay
// within DictionaryStoreSize.
func TestReview7ClientDictionaryStoreOneDictionaryPerOriginWithinBudget(t *testing.T) {
	review7ClientStoreHeap(t, func(r *http.Request) string { return `match="/*"` })
}

// A full-URL match of the request's own origin whose user information runs
// to 2 KiB: the stored pattern is "/*", charged 2 bytes, but it is a
// substring of the whole parsed value, which the store keeps alive.
func TestReview7ClientDictionaryPatternSubstringRetainsItsURL(t *testing.T) {
	review7ClientStoreHeap(t, func(r *http.Request) string {
		return `match="https://` + strings.Repeat("u", 1990) + "@" + r.Host + `/*"`
	})
}

func review7ClientStoreHeap(t *testing.T, useAs func(*http.Request) string) {
	const budget = 4 << 20
	base := review7RT(func(r *http.Request) (*http.Response, error) {
		h := http.Header{}
		h.Set("Use-As-Dictionary", useAs(r))
		h.Set("Cache-Control", "max-age=3600")
		h.Set("Content-Type", "text/plain")
		return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader("x")), Request: r, ContentLength: 1}, nil
	})
	tr := &squeeze.Transport{Base: base, DictionaryStoreSize: budget}
	get := func(i int) {
		req, _ := http.NewRequest("GET", "https://10.0.0.1/p", nil)
		req.Host = fmt.Sprintf("h%07d.evil.example", i)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	get(-1)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range 40000 {
		get(i)
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap grew %d bytes against a %d-byte budget (%.2fx)", grew, budget, float64(grew)/budget)
	if grew > budget {
		t.Errorf("one dictionary per origin: the store holds %.2f MiB of heap against a %.0f MiB DictionaryStoreSize", float64(grew)/(1<<20), float64(budget)/(1<<20))
	}
	runtime.KeepAlive(tr)
}
