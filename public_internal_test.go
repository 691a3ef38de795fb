package squeeze

import (
	"net/http"
	"strings"
	"testing"
)

func TestPublicResponseRefusesWhatIsPrivate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		req, resp http.Header
		want      bool
	}{
		{"plain", nil, nil, true},
		{"max-age", nil, http.Header{"Cache-Control": {"max-age=60"}}, true},
		{"private", nil, http.Header{"Cache-Control": {"max-age=60, private"}}, false},
		{"private with fields", nil, http.Header{"Cache-Control": {`private="Set-Cookie"`}}, false},
		{"no-store", nil, http.Header{"Cache-Control": {"No-Store"}}, false},
		{"lower-case key", nil, http.Header{"cache-control": {"private"}}, false},
		{"set-cookie", nil, http.Header{"Set-Cookie": {"a=b"}}, false},
		{"set-cookie lower-case", nil, http.Header{"set-cookie": {"a=b"}}, false},
		{"vary star", nil, http.Header{"Vary": {"*"}}, false},
		{"authorization", http.Header{"Authorization": {"Bearer x"}}, nil, false},
		{"cookie", http.Header{"Cookie": {"s=1"}}, nil, false},
		{"cookie lower-case", http.Header{"cookie": {"s=1"}}, nil, false},
		{"cookie, public", http.Header{"Cookie": {"s=1"}}, http.Header{"Cache-Control": {"public, max-age=60"}}, true},
		{"authorization, s-maxage", http.Header{"Authorization": {"x"}}, http.Header{"Cache-Control": {"s-maxage=60"}}, false},
		{"authorization, must-revalidate", http.Header{"Authorization": {"x"}}, http.Header{"Cache-Control": {"must-revalidate"}}, false},
		{"cookie, public but private too", http.Header{"Cookie": {"s=1"}}, http.Header{"Cache-Control": {"public, private"}}, false},
		{"public, set-cookie", nil, http.Header{"Cache-Control": {"public"}, "Set-Cookie": {"a=b"}}, false},
		{"empty cookie line", http.Header{"Cookie": {}}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := publicResponse(tc.req, tc.resp); got != tc.want {
				t.Errorf("publicResponse(%v, %v) = %v, want %v", tc.req, tc.resp, got, tc.want)
			}
		})
	}
}

func TestPathHasTokenFindsTokensNotWordsSlugsOrVersions(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/reset/k7Qx9fA2mZ4pL8wR3tY6", true},                 // 22 base64 characters
		{"/share/550e8400-e29b-41d4-a716-446655440000", true}, // a UUID
		{"/dl/9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08/report.pdf", true},
		{"/reset/k7Qx9fA2mZ4pL8wR3tY6/", true},
		{"/a/b/c/k7Qx-9fA2_mZ4p.L8wR", true}, // separators skipped
		{"", false},
		{"/", false},
		{"/docs/internationalization.html", false},
		{"/news/2026-12-07-release-notes", false},
		{"/docs/python3.12/library/asyncio-task.html", false},
		{"/pool/main/libc6-dev_2.36", false},
		{"/pool/main/libc6-dev_2.36-9+deb12u4_amd64.deb", true}, // a package's file name: the guess errs toward not sampling
		{"/k7Qx9fA2mZ4pL8w", false},                             // 15 letters and digits
		{"/abcdefghijklmnop1234567890", false},                  // one change
		{"/reset/ABCDEFGHIJKLMNOPQRSTUVWX", false},              // letters alone: the guess misses it
	} {
		if got := pathHasToken(tc.path); got != tc.want {
			t.Errorf("pathHasToken(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}

// FuzzPathHasToken checks pathHasToken against the same rule read the
// slow way: split into segments, each counted on its own.
func FuzzPathHasToken(f *testing.F) {
	for _, s := range []string{"/reset/k7Qx9fA2mZ4pL8wR3tY6", "/docs/python3.12", "", "//", "/a1b2c3d4e5f6g7h8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		want := false
		for _, seg := range strings.Split(path, "/") {
			var classes []bool // true for a digit
			for _, c := range []byte(seg) {
				if '0' <= c && c <= '9' {
					classes = append(classes, true)
				} else if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
					classes = append(classes, false)
				}
			}
			changes := 0
			for i := 1; i < len(classes); i++ {
				if classes[i] != classes[i-1] {
					changes++
				}
			}
			want = want || len(classes) >= tokenLetters && changes >= tokenChanges
		}
		if got := pathHasToken(path); got != want {
			t.Errorf("pathHasToken(%q) = %v, want %v", path, got, want)
		}
	})
}
