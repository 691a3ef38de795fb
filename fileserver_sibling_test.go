package squeeze_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/squeezehttp/squeeze/internal/testtool"
)

// A sibling replaced while it is served, by a deploy that renames the next
// version into place or by a copy that rewrites it in place, never goes out
// under a tag it was not verified for: every complete response decodes to
// the bytes its ETag names, and for a file with a sibling, to a version of
// the file. A response the file server cannot vouch for is cut short, which
// a client sees as an error, never as a complete body. Four readers race
// one writer, for the file with a sibling and for a sibling whose file is
// missing, decoded for clients that accept no coding. (A sibling of a
// missing file read while it was rewritten in place is what was read: br
// has no checksum, so torn bytes may decode, and then go out as a version
// of their own, under their own tag.)
func TestFileServerSendsASiblingOnlyFromTheBytesItVerified(t *testing.T) {
	const readers, requests = 4, 60
	var versions [3][]byte
	tags := map[string][]byte{} // a version's plain ETag, unquoted, to the version
	var brs [][]byte            // every sibling the writer writes
	for i := range versions {
		versions[i] = textBody(40+i, 30000)
		tags[strings.Trim(plainTag(versions[i]), `"`)] = versions[i]
		brs = append(brs, encodeAt(t, "br", 11, versions[i]), encodeAt(t, "br", 4, versions[i]))
	}
	for _, mode := range []string{"renames", "in place"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			www, stage := filepath.Join(dir, "www"), filepath.Join(dir, "stage")
			writeTree(t, www, map[string][]byte{"app.js": versions[0], "app.js.br": brs[0], "only.js.br": brs[0]})
			if err := os.MkdirAll(stage, 0o755); err != nil {
				t.Fatal(err)
			}
			place := func(name string, data []byte) {
				if mode == "in place" && strings.HasSuffix(name, ".br") {
					_ = os.WriteFile(filepath.Join(www, name), data, 0o644)
					return
				}
				tmp := filepath.Join(stage, name)
				if os.WriteFile(tmp, data, 0o644) == nil {
					_ = os.Rename(tmp, filepath.Join(www, name))
				}
			}
			h, _ := fileServer(t, newMiddleware(t), os.DirFS(www))
			forEachProtocolQuiet(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				var done atomic.Bool
				var wrote sync.WaitGroup
				wrote.Add(1)
				go func() { // the deploy
					defer wrote.Done()
					for i := 0; !done.Load(); i++ {
						v := i % len(versions)
						// The sibling lands before its file half the time.
						if i%2 == 0 {
							place("app.js", versions[v])
						}
						place("app.js.br", brs[2*v+i/3%2])
						place("only.js.br", brs[2*v+i/5%2])
						if i%2 == 1 {
							place("app.js", versions[v])
						}
					}
				}()
				var wrong, cut, missing, siblings atomic.Int64
				var reading sync.WaitGroup
				for r := range readers {
					reading.Add(1)
					go func() {
						defer reading.Done()
						for n := range requests {
							target, ae := "/app.js", "br"
							switch (n + r) % 3 {
							case 1:
								target = "/only.js"
							case 2:
								target, ae = "/only.js", ""
							}
							switch checkVersion(c, srv.URL+target, ae, tags, target == "/app.js", brs) {
							case versionWrong:
								if wrong.Add(1) <= 3 {
									t.Errorf("GET %s, Accept-Encoding %q: the body is not the version its ETag names", target, ae)
								}
							case versionCut:
								cut.Add(1)
							case versionMissing:
								missing.Add(1)
							case versionSibling:
								siblings.Add(1)
							}
						}
					}()
				}
				reading.Wait()
				done.Store(true)
				wrote.Wait()
				t.Logf("%d responses: %d wrong, %d cut short, %d not found, %d siblings", readers*requests, wrong.Load(), cut.Load(), missing.Load(), siblings.Load())
				if wrong.Load() > 0 {
					t.Errorf("%d of %d responses were not the version their ETag names", wrong.Load(), readers*requests)
				}
			})
		})
	}
}

// versionCheck is what checkVersion found of one response.
type versionCheck int

const (
	versionRight   versionCheck = iota // the version its ETag names
	versionSibling                     // that, and byte for byte a sibling
	versionCut                         // cut short: the client saw an error
	versionMissing                     // 404 for a missing file's sibling that did not decode
	versionWrong                       // complete, and not the version its ETag names
)

// checkVersion GETs url with Accept-Encoding ae and checks that the body,
// decoded as its Content-Encoding says, is what its ETag names, and with
// known, one of the versions in tags (which maps a plain ETag's opaque value
// to its bytes).
func checkVersion(c *http.Client, url, ae string, tags map[string][]byte, known bool, siblings [][]byte) versionCheck {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return versionWrong
	}
	if ae != "" {
		req.Header.Set("Accept-Encoding", ae)
	}
	res, err := c.Do(req)
	if err != nil {
		return versionCut
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return versionCut
	}
	if res.StatusCode == http.StatusNotFound && !known {
		return versionMissing // a sibling emptied as it is rewritten decodes to nothing
	}
	if res.StatusCode != http.StatusOK {
		return versionWrong
	}
	ce := res.Header.Get("Content-Encoding")
	opaque := strings.Trim(res.Header.Get("Etag"), `"`)
	if ce != "" {
		var ok bool
		if opaque, ok = strings.CutSuffix(opaque, "-"+ce); !ok {
			return versionWrong
		}
	}
	plain := body
	if ce != "" {
		if plain, err = testtool.TryDecode(ce, body); err != nil {
			return versionWrong
		}
	}
	if sum := sha256.Sum256(plain); hex.EncodeToString(sum[:16]) != opaque {
		return versionWrong
	}
	if _, ok := tags[opaque]; known && !ok {
		return versionWrong
	}
	for _, s := range siblings {
		if bytes.Equal(body, s) {
			return versionSibling
		}
	}
	return versionRight
}
