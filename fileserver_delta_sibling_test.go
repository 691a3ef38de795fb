package squeeze_test

import (
	"bytes"
	"io/fs"
	"net/http"
	"testing"

	"github.com/squeezehttp/squeeze"
)

// A delta goes out only when it is smaller than the precompressed sibling
// the client would get without it: a delta is made at the Middleware's
// level, a sibling at the best one, so against a dictionary that shares
// little with the file, br 11 wins. The README's static recipe (precompress,
// then WithDictionaryMatch) must never make a returning visitor download
// more than a new one.
func TestFileServerNeverSendsADeltaLargerThanTheSibling(t *testing.T) {
	v1 := textBody(21, 40000)
	unrelated := textBody(22, 40000) // shares the vocabulary, not the text
	near := append(bytes.Clone(v1[:39000]), textBody(23, 1000)...)
	files := map[string][]byte{
		"app.v1.js": v1,
		"app.v2.js": unrelated, "app.v2.js.br": encodeAt(t, "br", 11, unrelated),
		"app.v3.js": near, "app.v3.js.br": encodeAt(t, "br", 11, near),
	}
	eachFS(t, files, func(t *testing.T, fsys fs.FS) {
		for _, coding := range []string{squeeze.DCZ, squeeze.DCB} {
			t.Run(coding, func(t *testing.T) {
				m := newMiddleware(t, squeeze.WithDictionaryMatch("/static/app.*.js"))
				h, _ := fileServer(t, m, fsys)
				sp := http.StripPrefix("/static/", h)
				for _, tt := range []struct {
					file string
					want string // the coding that is smaller
				}{
					{"app.v2.js", "br"},
					{"app.v3.js", coding},
				} {
					for round := range 2 {
						w := fsGet(sp, "GET", "/static/"+tt.file, "Accept-Encoding", coding+", br", "Available-Dictionary", availableFor(v1))
						if got := w.Header().Get("Content-Encoding"); got != tt.want {
							t.Fatalf("%s, round %d: Content-Encoding %q (%d bytes; the sibling has %d), want %s",
								tt.file, round, got, w.Body.Len(), len(files[tt.file+".br"]), tt.want)
						}
						if tt.want == "br" && !bytes.Equal(w.Body.Bytes(), files[tt.file+".br"]) {
							t.Errorf("%s: the body is not the sibling", tt.file)
						}
						if v := varyTokens(w.Header()); countFold(v, "Available-Dictionary") != 1 {
							t.Errorf("%s: Vary %q", tt.file, v)
						}
						if got := w.Header().Get("Use-As-Dictionary"); got != `match="/static/app.*.js"` {
							t.Errorf("%s: Use-As-Dictionary %q", tt.file, got)
						}
					}
				}
			})
		}
	})
}
