package squeeze_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/squeezehttp/squeeze"
)

// TestDictionaryDeltasFollowTheDictionaryOptions: a WithEncodings list
// written for the other codings, as the README's options example and the
// migration table's rows are, leaves the dictionary codings on when a
// dictionary option asks for deltas; a list naming one of them offers only
// that one.
func TestDictionaryDeltasFollowTheDictionaryOptions(t *testing.T) {
	v1, v2 := versions(16 << 10)
	tests := []struct {
		name      string
		encodings []string
		ae        string
		want      string
	}{
		{"README options example", []string{squeeze.Zstd, squeeze.Gzip}, chromeAE, squeeze.DCZ},
		{"httpcompression migration row", []string{squeeze.Zstd, squeeze.Brotli, squeeze.Gzip, squeeze.Deflate}, chromeAE, squeeze.DCZ},
		{"br first", []string{squeeze.Brotli, squeeze.Zstd}, chromeAE, squeeze.DCZ},
		{"dcb named alone", []string{squeeze.Brotli, squeeze.DCB}, chromeAE, squeeze.DCB},
		{"dcz named alone, client names only dcb", []string{squeeze.Zstd, squeeze.DCZ}, "zstd, dcb", squeeze.Zstd},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := squeeze.New(squeeze.WithEncodings(tt.encodings...), squeeze.WithDictionaryMatch("/js/app.*.js"))
			if err != nil {
				t.Fatal(err)
			}
			h := m.Handler(scripts(map[string][]byte{"/js/app.v1.js": v1, "/js/app.v2.js": v2}))
			forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				res, _ := fetch(t, c, srv.URL+"/js/app.v1.js", tt.ae)
				if res.Header.Get("Use-As-Dictionary") == "" {
					t.Fatal("v1 went out without Use-As-Dictionary")
				}
				res, raw := fetch(t, c, srv.URL+"/js/app.v2.js", tt.ae, "Available-Dictionary", availableFor(v1))
				if ce := res.Header.Get("Content-Encoding"); ce != tt.want {
					t.Fatalf("v2 Content-Encoding = %q, want %q", ce, tt.want)
				}
				if tt.want == squeeze.DCZ || tt.want == squeeze.DCB {
					decodeDelta(t, res.Header, raw, v1, v2)
				} else {
					checkBody(t, res.Header, raw, v2)
				}
			})
		})
	}
}

// TestDictionaryDeltaNeverLargerThanTheCodingItReplaces: a whole body that
// the plain coding shrinks to less than the delta (a tiny, repetitive one,
// whose delta is mostly the 40-byte dcz header) goes out in that coding; a
// delta that is smaller still goes out.
func TestDictionaryDeltaNeverLargerThanTheCodingItReplaces(t *testing.T) {
	dict, tiny := beatenDelta()
	v1, v2 := versions(16 << 10)
	h := newMiddleware(t, squeeze.WithDictionaryMatch("/js/*")).Handler(scripts(map[string][]byte{
		"/js/dict.js": dict, "/js/tiny.js": tiny, "/js/app.v1.js": v1, "/js/app.v2.js": v2,
	}))
	for _, tc := range []struct {
		path       string
		dict, body []byte
		want       string
	}{
		{"/js/tiny.js", dict, tiny, squeeze.Zstd},
		{"/js/app.v2.js", v1, v2, squeeze.DCZ},
	} {
		t.Run(tc.path, func(t *testing.T) {
			forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				fetch(t, c, srv.URL+"/js/dict.js", chromeAE)
				fetch(t, c, srv.URL+"/js/app.v1.js", chromeAE)
				_, plain := fetch(t, c, srv.URL+tc.path, squeeze.Zstd)
				res, raw := fetch(t, c, srv.URL+tc.path, chromeAE, "Available-Dictionary", availableFor(tc.dict))
				ce := res.Header.Get("Content-Encoding")
				t.Logf("%s: %d bytes as %s, %d as zstd", tc.path, len(raw), ce, len(plain))
				if ce != tc.want {
					t.Fatalf("Content-Encoding %q (%d bytes), want %q; zstd alone takes %d", ce, len(raw), tc.want, len(plain))
				}
				if len(raw) > len(plain) {
					t.Errorf("%d bytes as %s, more than the %d of zstd", len(raw), ce, len(plain))
				}
				if ce == squeeze.DCZ {
					decodeDelta(t, res.Header, raw, tc.dict, tc.body)
				} else {
					checkBody(t, res.Header, raw, tc.body)
					wantDictVary(t, res.Header)
				}
			})
		})
	}
}

// BenchmarkDictionaryWholeDelta serves a 16 KiB script as a delta against
// its previous release, a whole body: the delta, and the coding it
// replaces tried against it (capped at the delta's size).
func BenchmarkDictionaryWholeDelta(b *testing.B) {
	v1, v2 := versions(16 << 10)
	h := newMiddleware(b, squeeze.WithDictionaryMatch("/js/app.*.js")).Handler(scripts(map[string][]byte{"/js/app.v1.js": v1, "/js/app.v2.js": v2}))
	serveAt(h, "/js/app.v1.js", chromeAE)
	benchDelta(b, h, "/js/app.v2.js", v1, v2, squeeze.DCZ)
}

// benchDelta checks that h answers a GET of path, from a client holding
// dict, with body in coding want, then serves that GET in a loop.
func benchDelta(b *testing.B, h http.Handler, path string, dict, body []byte, want string) {
	b.Helper()
	avail := availableFor(dict)
	if rec := serveAt(h, path, chromeAE, "Available-Dictionary", avail); rec.Header().Get("Content-Encoding") != want {
		b.Fatalf("%s went out as %q, want %s", path, rec.Header().Get("Content-Encoding"), want)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		serveAt(h, path, chromeAE, "Available-Dictionary", avail)
	}
}
