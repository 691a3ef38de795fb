//go:build unix

package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
)

// TestChromiumGetsTheNextReleaseAsADelta loads dict.html in headless
// Chromium: it fetches Underscore.js 1.13.6, which squeeze marks as a
// dictionary, then 1.13.7 until it comes as a delta (Chromium stores a
// dictionary asynchronously), and /api/orders until it comes as a delta
// against the standalone dictionary the page links. The server's record
// says how each went out; the page says what it decoded.
func TestChromiumGetsTheNextReleaseAsADelta(t *testing.T) {
	srv := startServer(t, 20*time.Millisecond)
	dom := dumpDOM(t, srv.URL+"/dict")
	if tag := regexp.MustCompile(`<body[^>]*>`).FindString(dom); attr(tag, "data-done") != "true" {
		t.Fatalf("the page's script did not finish: %s\nDOM:\n%s", tag, dom)
	}
	records := clientCodings(t, srv, "Chrome")
	v2, err := static.ReadFile("static/lib/underscore-1.13.7.min.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id, path string
		want     []byte
	}{
		{"dict-result", libV2, v2},
		{"orders-result", "/api/orders", orders()},
	} {
		el := element(t, dom, tc.id)
		rec := records[tc.path]
		t.Logf("%s: %s (server record %+v)", tc.path, el, rec)
		if rec.ContentEncoding != squeeze.DCZ && rec.ContentEncoding != squeeze.DCB {
			t.Errorf("%s went to Chromium as %q, want dcz or dcb; Chromium sent Accept-Encoding %q", tc.path, rec.ContentEncoding, rec.AcceptEncoding)
		}
		if attr(el, "data-encoding") != rec.ContentEncoding || attr(el, "data-bytes") != strconv.Itoa(len(tc.want)) || attr(el, "data-sha256") != sha256Hex(tc.want) {
			t.Errorf("the browser decoded %s as %s, want %d bytes with sha256 %s", tc.path, el, len(tc.want), sha256Hex(tc.want))
		}
		if !strings.Contains(rec.Vary, "Available-Dictionary") {
			t.Errorf("%s: Vary %q lacks Available-Dictionary", tc.path, rec.Vary)
		}
	}
	if rec := records[libV2]; rec.Bytes >= 1000 {
		t.Errorf("the delta of 1.13.7 took %d bytes on the wire, want under 1000", rec.Bytes)
	}
	wire := regexp.MustCompile(`(?s)<table id="wire".*?</table>`).FindString(dom)
	if !strings.Contains(wire, "<td>br</td>") || !strings.Contains(wire, "<td>dcz</td>") {
		t.Errorf("the page does not show br and dcz side by side: %s", wire)
	}
}
