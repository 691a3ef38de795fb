package squeeze_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// localeRecord returns the generated JSON record of locale i: the same
// keys in every record, with values of its own, the shape of CLDR's
// per-locale files.
func localeRecord(i int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"main":{"locale-%d":{"identity":{"language":"l%d"},"numbers":{`, i, i)
	x := uint32(i*7919 + 7)
	for k := range 120 {
		x = x*1664525 + 1013904223
		fmt.Fprintf(&b, `"symbols-numberSystem-%s":{"decimal":"%c","group":"%c","percentSign":"%%","pattern":"#,##0.%03d"},`,
			searchWords[k%len(searchWords)], 'a'+x%7, 'b'+x%5, x%1000)
	}
	b.WriteString(`"end":1}}}}`)
	return b.Bytes()
}

// chromiumAccepts is what Chromium sends in Accept-Encoding with a
// dictionary: both delta codings, at the same weight.
const chromiumAccepts = "gzip, deflate, br, zstd, dcb, dcz"

// TestLearnedRouteOffersTheSmallerDeltaCodingFirst learns a dictionary on
// JSON records, on whose held-out samples dcb comes out smaller than dcz
// by more than the slack: a client that accepts both at the same weight
// (as Chromium does) gets dcb, though squeeze prefers dcz by default, and
// fewer bytes than the dcz a client naming dcz alone still gets.
func TestLearnedRouteOffersTheSmallerDeltaCodingFirst(t *testing.T) {
	m := newMiddleware(t, squeeze.WithLearnedDictionary("/api/*", squeeze.LearnedSamples(16), squeeze.LearnedInterval(time.Hour)))
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<!doctype html><title>index</title>"))
			return
		}
		var i int
		fmt.Sscanf(r.URL.Path, "/api/%d", &i)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=60")
		_, _ = w.Write(localeRecord(i))
	}))
	for i := range 16 {
		serveAt(h, fmt.Sprintf("/api/%d", i), "br")
	}
	squeeze.WaitLearned(m)
	url := learnedLink(serveAt(h, "/", "br").Header())
	if url == "" {
		t.Fatal("no dictionary was learned")
	}
	dict := serveAt(h, url, "").Body.Bytes()
	forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
		var dcb, dcz int
		for i := 100; i < 104; i++ {
			path := fmt.Sprintf("/api/%d", i)
			for _, tc := range []struct{ accept, want string }{{chromiumAccepts, squeeze.DCB}, {"dcz, zstd", squeeze.DCZ}} {
				res, raw := fetch(t, c, srv.URL+path, tc.accept, "Available-Dictionary", availableFor(dict))
				if got := res.Header.Get("Content-Encoding"); got != tc.want {
					t.Fatalf("%s to a client accepting %q went out as %q, want %s", path, tc.accept, got, tc.want)
				}
				if plain, err := testtool.DecodeDictionary(tc.want, raw, dict); err != nil || !bytes.Equal(plain, localeRecord(i)) {
					t.Fatalf("%s as %s does not decode to the record: %v", path, tc.want, err)
				}
				if tc.want == squeeze.DCB {
					dcb += len(raw)
				} else {
					dcz += len(raw)
				}
			}
		}
		t.Logf("4 records: dcb %d bytes, dcz %d", dcb, dcz)
		if dcb >= dcz {
			t.Errorf("the records took %d bytes as dcb, %d as dcz: dcb went first but is not the smaller", dcb, dcz)
		}
	})
}
