package squeeze_test

import (
	"bytes"
	"io/fs"
	"net/http"
	"testing"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// The FileServer's version deltas are upgraded in the background like its
// plain codings: once the upgrade ran, a returning client holding the old
// release gets the delta at the best level against it, byte for byte,
// smaller than the first, decoding to the new release. With its own store
// and with a Cache as the store: the encoder is claimed against either's
// budget, at the best level or the first fallback level there is room for.
func TestFileServerUpgradesDeltasToTheBestLevel(t *testing.T) {
	rel := corpus.Releases(t)[0]
	files := map[string][]byte{"app.v1.js": rel.Old, "app.v2.js": rel.New}
	eachFS(t, files, func(t *testing.T, fsys fs.FS) {
		for _, coding := range []string{squeeze.DCZ, squeeze.DCB} {
			for _, cached := range []bool{false, true} {
				name := coding + "/own store"
				opts := []squeeze.Option{squeeze.WithDictionaryMatch("/static/app.*.js")}
				if cached {
					name = coding + "/cache"
					opts = append(opts, squeeze.WithCache(newCache(t, 256<<20)))
				}
				t.Run(name, func(t *testing.T) {
					h, _ := fileServer(t, newMiddleware(t, opts...), fsys)
					sp := http.StripPrefix("/static/", h)
					get := func() []byte {
						w := fsGet(sp, "GET", "/static/app.v2.js", "Accept-Encoding", coding+", br", "Available-Dictionary", availableFor(rel.Old))
						if got := w.Header().Get("Content-Encoding"); got != coding {
							t.Fatalf("Content-Encoding %q, want %s", got, coding)
						}
						got, err := testtool.DecodeDictionary(coding, w.Body.Bytes(), rel.Old)
						if err != nil || !bytes.Equal(got, rel.New) {
							t.Fatalf("decoding the delta: %v (%d bytes, want %d)", err, len(got), len(rel.New))
						}
						return bytes.Clone(w.Body.Bytes())
					}
					first := get()
					squeeze.WaitFileServer(h)
					later := get()
					best, err := squeeze.BestDelta(coding, rel.Old, rel.New)
					if err != nil {
						t.Fatal(err)
					}
					if !cached && coding == squeeze.DCZ {
						// zstd's best encoder with a dictionary holds more
						// than the file server's own store has room for
						// (defaultFileStoreSize): the upgrade falls back
						// to level 9, as a Cache's does.
						if best, err = squeeze.EncodeDelta(coding, 9, rel.Old, rel.New); err != nil {
							t.Fatal(err)
						}
					}
					if !bytes.Equal(later, best) || len(later) >= len(first) {
						t.Errorf("after the upgrade: %d bytes, want the upgraded level's %d (first %d)", len(later), len(best), len(first))
					}
				})
			}
		}
	})
}
