package squeeze_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
	"github.com/squeezehttp/squeeze/writers"
)

// fsModTime is the modification time of every test file.
var fsModTime = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// eachFS runs test over files as an fstest.MapFS and as an os.DirFS of a
// temporary directory holding the same files.
func eachFS(t *testing.T, files map[string][]byte, test func(t *testing.T, fsys fs.FS)) {
	t.Helper()
	t.Run("MapFS", func(t *testing.T) {
		m := fstest.MapFS{}
		for name, data := range files {
			m[name] = &fstest.MapFile{Data: data, ModTime: fsModTime}
		}
		test(t, m)
	})
	t.Run("DirFS", func(t *testing.T) {
		test(t, os.DirFS(writeTree(t, t.TempDir(), files)))
	})
}

// writeTree writes files under dir and returns dir.
func writeTree(t *testing.T, dir string, files map[string][]byte) string {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, fsModTime, fsModTime); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// encodeAt encodes b with coding at level, as a precompressing tool would.
func encodeAt(t testing.TB, coding string, level int, b []byte) []byte {
	t.Helper()
	enc, err := writers.NewEncoder(coding, level)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	enc.Reset(&out)
	if _, err := enc.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// fsGet serves one request to h with the header fields hdr (name, value,
// ...) and returns the recorded response.
func fsGet(h http.Handler, method, target string, hdr ...string) *httptest.ResponseRecorder {
	return serveMethod(h, method, target, "", hdr...)
}

// plainTag returns the ETag the file server gives plain bytes b.
func plainTag(b []byte) string {
	sum := sha256.Sum256(b)
	return fmt.Sprintf(`"%x"`, sum[:16])
}

// logLines is a log the test can read: a FileServer logs into it
// through logf.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *logLines) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, substr) {
			n++
		}
	}
	return n
}

func fileServer(t *testing.T, m *squeeze.Middleware, fsys fs.FS, opts ...squeeze.FileServerOption) (http.Handler, *logLines) {
	t.Helper()
	h := m.FileServer(fsys, opts...)
	logs := &logLines{}
	squeeze.SetFileServerLog(h, logs.logf)
	t.Cleanup(func() { squeeze.WaitFileServer(h) })
	return h, logs
}

func TestFileServerNegotiatesAsTheMiddlewareDoes(t *testing.T) {
	js := textBody(1, 20000)
	files := map[string][]byte{"app.js": js}
	m := newMiddleware(t)
	// The middleware in front of a plain handler, for the coding it picks.
	ref := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = w.Write(js)
	}))
	eachFS(t, files, func(t *testing.T, fsys fs.FS) {
		h, _ := fileServer(t, m, fsys)
		for _, ae := range []string{"", "gzip", "br", "zstd", "br, gzip", "gzip;q=0.5, br;q=0.9", "zstd;q=0, *", "identity", "deflate"} {
			t.Run(ae, func(t *testing.T) {
				want := fsGet(ref, "GET", "/app.js", "Accept-Encoding", ae).Header().Get("Content-Encoding")
				for round := range 2 { // encoded now, then from the store
					w := fsGet(h, "GET", "/app.js", "Accept-Encoding", ae)
					if w.Code != 200 {
						t.Fatalf("status %d", w.Code)
					}
					res := w.Result()
					ce := res.Header.Get("Content-Encoding")
					if ce != want {
						t.Fatalf("round %d: Content-Encoding %q, the middleware chooses %q", round, ce, want)
					}
					raw := w.Body.Bytes()
					if cl := res.Header.Get("Content-Length"); cl != fmt.Sprint(len(raw)) {
						t.Errorf("Content-Length %q for %d bytes", cl, len(raw))
					}
					checkBody(t, res.Header, raw, js)
					if ce != "" {
						if got := testtool.DecodeCLI(t, ce, raw); !bytes.Equal(got, js) {
							t.Errorf("the %s CLI decodes %d bytes, want %d", ce, len(got), len(js))
						}
					}
					wantTag := plainTag(js)
					if ce != "" {
						wantTag = wantTag[:len(wantTag)-1] + "-" + ce + `"`
					}
					if got := res.Header.Get("ETag"); got != wantTag {
						t.Errorf("ETag %s, want %s", got, wantTag)
					}
					if got := varyTokens(res.Header); countFold(got, "Accept-Encoding") != 1 {
						t.Errorf("Vary %q", got)
					}
					if got := res.Header.Get("Last-Modified"); got != fsModTime.Format(http.TimeFormat) {
						t.Errorf("Last-Modified %q", got)
					}
					if ce != "" && res.Header.Get("Accept-Ranges") != "" {
						t.Errorf("an encoded response says Accept-Ranges: %s", res.Header.Get("Accept-Ranges"))
					}
				}
			})
		}
	})
}

func TestFileServerSendsSiblingsByteForByte(t *testing.T) {
	js := textBody(2, 30000)
	// Level 1 siblings: nothing squeeze would make itself at any level it
	// uses, so a body equal to them came from them.
	sibs := map[string][]byte{
		"br":   encodeAt(t, "br", 1, js),
		"zstd": encodeAt(t, "zstd", 1, js),
		"gzip": encodeAt(t, "gzip", 1, js),
	}
	files := map[string][]byte{"app.js": js, "app.js.br": sibs["br"], "app.js.zst": sibs["zstd"], "app.js.gz": sibs["gzip"]}
	eachFS(t, files, func(t *testing.T, fsys fs.FS) {
		h, logs := fileServer(t, newMiddleware(t), fsys)
		for coding, want := range sibs {
			w := fsGet(h, "GET", "/app.js", "Accept-Encoding", coding)
			if got := w.Header().Get("Content-Encoding"); got != coding {
				t.Fatalf("%s: Content-Encoding %q", coding, got)
			}
			if !bytes.Equal(w.Body.Bytes(), want) {
				t.Errorf("%s: body of %d bytes is not the sibling's %d", coding, w.Body.Len(), len(want))
			}
			if got := w.Header().Get("Content-Length"); got != fmt.Sprint(len(want)) {
				t.Errorf("%s: Content-Length %s, want %d", coding, got, len(want))
			}
		}
		if n := len(logs.lines); n != 0 {
			t.Errorf("logged %q", logs.lines)
		}
	})
}

func TestFileServerNeverSendsASiblingOfOtherBytes(t *testing.T) {
	js := textBody(3, 30000)
	stale := encodeAt(t, "br", 1, textBody(4, 30000))
	files := map[string][]byte{"app.js": js, "app.js.br": stale, "app.js.gz": []byte("not gzip at all")}
	eachFS(t, files, func(t *testing.T, fsys fs.FS) {
		h, logs := fileServer(t, newMiddleware(t), fsys)
		for range 3 {
			for _, coding := range []string{"br", "gzip"} {
				w := fsGet(h, "GET", "/app.js", "Accept-Encoding", coding)
				if bytes.Equal(w.Body.Bytes(), stale) {
					t.Fatal("the stale sibling was sent")
				}
				checkBody(t, w.Header(), w.Body.Bytes(), js)
			}
		}
		if n := logs.count("app.js.br decodes to other bytes than app.js"); n != 1 {
			t.Errorf("the stale br sibling was logged %d times, want once: %q", n, logs.lines)
		}
		if n := logs.count("app.js.gz does not decode"); n != 1 {
			t.Errorf("the broken gz sibling was logged %d times, want once: %q", n, logs.lines)
		}
	})
}

func TestFileServerSendsSiblingsOfMissingFiles(t *testing.T) {
	js := textBody(5, 30000)
	br := encodeAt(t, "br", 1, js)
	files := map[string][]byte{"only.js.br": br}
	eachFS(t, files, func(t *testing.T, fsys fs.FS) {
		h, _ := fileServer(t, newMiddleware(t), fsys)
		w := fsGet(h, "GET", "/only.js", "Accept-Encoding", "br")
		if !bytes.Equal(w.Body.Bytes(), br) || w.Header().Get("Content-Encoding") != "br" {
			t.Fatalf("br client: status %d, %q, %d bytes", w.Code, w.Header().Get("Content-Encoding"), w.Body.Len())
		}
		if got, want := w.Header().Get("ETag"), strings.TrimSuffix(plainTag(js), `"`)+`-br"`; got != want {
			t.Errorf("ETag %s, want %s", got, want)
		}
		if ct := w.Header().Get("Content-Type"); ct != mime.TypeByExtension(".js") {
			t.Errorf("Content-Type %q", ct)
		}
		for _, ae := range []string{"", "gzip"} {
			w = fsGet(h, "GET", "/only.js", "Accept-Encoding", ae)
			if w.Header().Get("Content-Encoding") != "" || !bytes.Equal(w.Body.Bytes(), js) {
				t.Fatalf("%q client: %q, %d bytes, want the decoded %d", ae, w.Header().Get("Content-Encoding"), w.Body.Len(), len(js))
			}
			if got := w.Header().Get("Content-Length"); got != fmt.Sprint(len(js)) {
				t.Errorf("Content-Length %s", got)
			}
		}
		w = fsGet(h, "GET", "/only.js", "Range", "bytes=100-199")
		if w.Code != http.StatusPartialContent || !bytes.Equal(w.Body.Bytes(), js[100:200]) {
			t.Errorf("range of a decoded sibling: status %d, %q", w.Code, prefix(w.Body.Bytes()))
		}
	})
}

func TestFileServerPreconditions(t *testing.T) {
	js := textBody(6, 20000)
	tag := plainTag(js)
	brTag := strings.TrimSuffix(tag, `"`) + `-br"`
	gzTag := strings.TrimSuffix(tag, `"`) + `-gzip"`
	lastMod := fsModTime.Format(http.TimeFormat)
	cases := []struct {
		name      string
		hdr       []string
		want      int
		wantETag  string
		wantVary  bool
		wantCoded bool
	}{
		{"If-None-Match of the encoded tag", []string{"Accept-Encoding", "br", "If-None-Match", brTag}, 304, brTag, true, false},
		{"If-None-Match of the plain tag, plain client", []string{"If-None-Match", tag}, 304, tag, true, false},
		{"If-None-Match of another coding's tag", []string{"Accept-Encoding", "br", "If-None-Match", gzTag}, 200, brTag, true, true},
		{"If-None-Match of the plain tag, br client", []string{"Accept-Encoding", "br", "If-None-Match", tag}, 200, brTag, true, true},
		{"weak If-None-Match", []string{"Accept-Encoding", "br", "If-None-Match", "W/" + brTag}, 304, brTag, true, false},
		{"If-None-Match star", []string{"Accept-Encoding", "br", "If-None-Match", "*"}, 304, brTag, true, false},
		{"If-Modified-Since", []string{"Accept-Encoding", "br", "If-Modified-Since", lastMod}, 304, brTag, true, false},
		{"If-Modified-Since earlier", []string{"Accept-Encoding", "br", "If-Modified-Since", fsModTime.Add(-time.Hour).Format(http.TimeFormat)}, 200, brTag, true, true},
		{"If-Match of the plain tag, br client", []string{"Accept-Encoding", "br", "If-Match", tag}, 200, brTag, true, true},
		{"If-Match of another coding's tag", []string{"Accept-Encoding", "br", "If-Match", gzTag}, 200, brTag, true, true},
		{"If-Match of other bytes", []string{"Accept-Encoding", "br", "If-Match", `"0123"`}, 412, "", true, false},
	}
	eachFS(t, map[string][]byte{"app.js": js}, func(t *testing.T, fsys fs.FS) {
		h, _ := fileServer(t, newMiddleware(t), fsys)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				w := fsGet(h, "GET", "/app.js", c.hdr...)
				if w.Code != c.want {
					t.Fatalf("status %d, want %d", w.Code, c.want)
				}
				if got := w.Header().Get("ETag"); got != c.wantETag && c.want != 412 {
					t.Errorf("ETag %s, want %s", got, c.wantETag)
				}
				if got := countFold(varyTokens(w.Header()), "Accept-Encoding") == 1; got != c.wantVary {
					t.Errorf("Vary %q", w.Header()["Vary"])
				}
				if got := w.Header().Get("Content-Encoding") != ""; got != c.wantCoded {
					t.Errorf("Content-Encoding %q", w.Header().Get("Content-Encoding"))
				}
				if c.want == 304 && w.Body.Len() != 0 {
					t.Errorf("a 304 with %d body bytes", w.Body.Len())
				}
			})
		}
	})
}

func TestFileServerHeadHasTheHeaderOfGet(t *testing.T) {
	js := textBody(7, 20000)
	files := map[string][]byte{"app.js": js, "app.js.gz": encodeAt(t, "gzip", 1, js), "tiny.txt": []byte("hello")}
	eachFS(t, files, func(t *testing.T, fsys fs.FS) {
		h, _ := fileServer(t, newMiddleware(t), fsys)
		for _, target := range []string{"/app.js", "/tiny.txt"} {
			for _, ae := range []string{"", "gzip", "br"} {
				head := fsGet(h, "HEAD", target, "Accept-Encoding", ae)
				getRes := fsGet(h, "GET", target, "Accept-Encoding", ae)
				if head.Body.Len() != 0 {
					t.Errorf("HEAD %s %q: %d body bytes", target, ae, head.Body.Len())
				}
				for _, k := range []string{"Content-Encoding", "Content-Length", "Content-Type", "Etag", "Vary", "Last-Modified"} {
					if a, b := head.Header().Get(k), getRes.Header().Get(k); a != b {
						t.Errorf("%s %q: HEAD %s: %q, GET %q", target, ae, k, a, b)
					}
				}
			}
		}
	})
}

func TestFileServerAnswersRangesFromThePlainBytes(t *testing.T) {
	js := textBody(8, 20000)
	files := map[string][]byte{"app.js": js, "app.js.br": encodeAt(t, "br", 1, js)}
	eachFS(t, files, func(t *testing.T, fsys fs.FS) {
		h, _ := fileServer(t, newMiddleware(t), fsys)
		w := fsGet(h, "GET", "/app.js", "Accept-Encoding", "br, gzip, zstd", "Range", "bytes=10-19")
		if w.Code != 206 || w.Header().Get("Content-Encoding") != "" || !bytes.Equal(w.Body.Bytes(), js[10:20]) {
			t.Fatalf("single range: status %d, Content-Encoding %q, body %q", w.Code, w.Header().Get("Content-Encoding"), w.Body.Bytes())
		}
		if got := w.Header().Get("ETag"); got != plainTag(js) {
			t.Errorf("ETag %s, want the plain %s", got, plainTag(js))
		}
		w = fsGet(h, "GET", "/app.js", "Accept-Encoding", "br", "Range", "bytes=0-4,100-104")
		_, params, err := mime.ParseMediaType(w.Header().Get("Content-Type"))
		if w.Code != 206 || err != nil {
			t.Fatalf("multipart: status %d, Content-Type %q", w.Code, w.Header().Get("Content-Type"))
		}
		mr := multipart.NewReader(w.Body, params["boundary"])
		for _, want := range [][]byte{js[0:5], js[100:105]} {
			p, err := mr.NextPart()
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(p)
			if !bytes.Equal(got, want) {
				t.Errorf("part %q, want %q", got, want)
			}
		}
		w = fsGet(h, "GET", "/app.js", "Accept-Encoding", "br", "Range", "bytes=999999-")
		if w.Code != http.StatusRequestedRangeNotSatisfiable {
			t.Errorf("unsatisfiable range: status %d", w.Code)
		}
	})
}

func TestFileServerPaths(t *testing.T) {
	files := map[string][]byte{
		"index.html":     []byte("<!doctype html><title>root</title>"),
		"sub/index.html": []byte("<!doctype html><title>sub</title>"),
		"empty/x.txt":    []byte("x"),
		"a.txt":          []byte("a file"),
	}
	cases := []struct {
		target   string
		want     int
		wantBody string
	}{
		{"/", 200, "root"},
		{"/sub/", 200, "sub"},
		{"/sub", 301, ""},
		{"/empty/", 404, ""},
		{"/a.txt/", 404, ""},
		{"/../secret.txt", 400, ""},
		{"/sub/../../secret.txt", 400, ""},
		{"/%2e%2e/secret.txt", 400, ""},
		{"/sub%2F..%2F..%2Fsecret.txt", 400, ""},
		{"/sub%2Findex.html", 404, ""},
		{"/a.txt%00", 404, ""},
		{"/a%5c..%5csecret.txt", 404, ""},
		{"/link/secret.txt", 404, ""},
		{"/escape.txt", 404, ""},
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := writeTree(t, t.TempDir(), files)
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "escape.txt")); err != nil {
		t.Fatal(err)
	}
	h, _ := fileServer(t, newMiddleware(t), os.DirFS(dir))
	for _, c := range cases {
		t.Run(c.target, func(t *testing.T) {
			w := fsGet(h, "GET", c.target)
			if w.Code != c.want {
				t.Errorf("status %d, want %d", w.Code, c.want)
			}
			if strings.Contains(w.Body.String(), "SECRET") {
				t.Fatal("served a file from outside the tree")
			}
			if c.wantBody != "" && !strings.Contains(w.Body.String(), c.wantBody) {
				t.Errorf("body %q, want it to hold %q", w.Body.String(), c.wantBody)
			}
		})
	}
	if w := fsGet(h, "GET", "/sub"); w.Header().Get("Location") != "sub/" {
		t.Errorf("redirect to %q, want sub/", w.Header().Get("Location"))
	}
	// Behind StripPrefix the redirect stays under the prefix.
	sp := http.StripPrefix("/static", h)
	if w := fsGet(sp, "GET", "/static/sub"); w.Header().Get("Location") != "sub/" {
		t.Errorf("redirect behind StripPrefix to %q", w.Header().Get("Location"))
	}
	if w := fsGet(h, "POST", "/a.txt"); w.Code != 405 || w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: status %d, Allow %q", w.Code, w.Header().Get("Allow"))
	}
}

func TestFileServerContentTypes(t *testing.T) {
	files := map[string][]byte{
		"style.css":   []byte("body { color: red }"),
		"noext":       []byte("<!DOCTYPE html><html><body>hello</body></html>"),
		"data.bin":    {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0},
		"unknown.xyz": []byte("plain words"),
	}
	eachFS(t, files, func(t *testing.T, fsys fs.FS) {
		h, _ := fileServer(t, newMiddleware(t), fsys)
		for name, data := range files {
			want := mime.TypeByExtension(filepath.Ext(name))
			if want == "" {
				want = http.DetectContentType(data)
			}
			if got := fsGet(h, "GET", "/"+name).Header().Get("Content-Type"); got != want {
				t.Errorf("%s: Content-Type %q, want %q", name, got, want)
			}
		}
	})
}

func TestFileServerUpgradesToTheBestLevel(t *testing.T) {
	js := textBody(9, 40000)
	eachFS(t, map[string][]byte{"app.js": js}, func(t *testing.T, fsys fs.FS) {
		for _, coding := range []string{"br", "gzip", "zstd"} {
			h, _ := fileServer(t, newMiddleware(t), fsys)
			first := fsGet(h, "GET", "/app.js", "Accept-Encoding", coding).Body.Bytes()
			if want := encodeAt(t, coding, levelDefault(t, coding), js); !bytes.Equal(first, want) {
				t.Errorf("%s: the first response is not the default level's encoding", coding)
			}
			squeeze.WaitFileServer(h)
			later := fsGet(h, "GET", "/app.js", "Accept-Encoding", coding).Body.Bytes()
			want := encodeAt(t, coding, squeeze.BestLevel(coding), js)
			if len(want) < len(first) && !bytes.Equal(later, want) {
				t.Errorf("%s: after the upgrade %d bytes, want the best level's %d (default %d)", coding, len(later), len(want), len(first))
			}
			checkBody(t, http.Header{"Content-Encoding": {coding}}, later, js)
		}
	})
}

// levelDefault returns the default level of coding.
func levelDefault(t *testing.T, coding string) int {
	r, err := writers.Levels(coding)
	if err != nil {
		t.Fatal(err)
	}
	return r.Default
}

func TestFileServerInsideTheMiddlewareEncodesOnce(t *testing.T) {
	js := textBody(10, 20000)
	files := map[string][]byte{"app.js": js, "app.js.gz": encodeAt(t, "gzip", 1, js)}
	eachFS(t, files, func(t *testing.T, fsys fs.FS) {
		m := newMiddleware(t)
		fsh, _ := fileServer(t, m, fsys)
		h := m.Handler(fsh)
		forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
			for _, ae := range []string{"gzip", "br", "zstd", ""} {
				res, raw := fetch(t, c, srv.URL+"/app.js", ae)
				if ce := res.Header.Values("Content-Encoding"); len(ce) > 1 || strings.Contains(strings.Join(ce, ""), ",") {
					t.Fatalf("%q: Content-Encoding %q", ae, ce)
				}
				checkBody(t, res.Header, raw, js)
				if res.ContentLength != int64(len(raw)) {
					t.Errorf("%q: Content-Length %d for %d bytes", ae, res.ContentLength, len(raw))
				}
				etag := res.Header.Get("ETag")
				if ce := res.Header.Get("Content-Encoding"); ce != "" && strings.Count(etag, "-"+ce) != 1 {
					t.Errorf("%q: ETag %s", ae, etag)
				}
				// The tag comes back and gets a 304, through both.
				res2, _ := fetch(t, c, srv.URL+"/app.js", ae, "If-None-Match", etag)
				if res2.StatusCode != 304 || res2.Header.Get("ETag") != etag {
					t.Errorf("%q: revalidating %s: status %d, ETag %s", ae, etag, res2.StatusCode, res2.Header.Get("ETag"))
				}
			}
		})
	})
}

func TestFileServerServesBothProtocols(t *testing.T) {
	js := textBody(11, 20000)
	eachFS(t, map[string][]byte{"static/app.js": js}, func(t *testing.T, fsys fs.FS) {
		h, _ := fileServer(t, newMiddleware(t), fsys)
		forEachProtocol(t, http.StripPrefix("/assets", h), func(t *testing.T, srv *httptest.Server, c *http.Client) {
			for _, ae := range []string{"br", "zstd", "gzip", ""} {
				res, raw := fetch(t, c, srv.URL+"/assets/static/app.js", ae)
				if res.StatusCode != 200 || res.Header.Get("Content-Encoding") != ae {
					t.Fatalf("%q: status %d, Content-Encoding %q", ae, res.StatusCode, res.Header.Get("Content-Encoding"))
				}
				checkBody(t, res.Header, raw, js)
				if res.ContentLength != int64(len(raw)) {
					t.Errorf("%q: Content-Length %d for %d bytes", ae, res.ContentLength, len(raw))
				}
			}
		})
	})
}

func TestFileServerSendsDeltasBetweenVersions(t *testing.T) {
	v1 := textBody(12, 50000)
	v2 := append(bytes.Clone(v1[:30000]), textBody(13, 20000)...)
	files := map[string][]byte{"app.v1.js": v1, "app.v2.js": v2, "other.js": textBody(14, 5000)}
	eachFS(t, files, func(t *testing.T, fsys fs.FS) {
		for _, coding := range []string{squeeze.DCZ, squeeze.DCB} {
			t.Run(coding, func(t *testing.T) {
				// A fresh Middleware: its store has never seen v1, as after
				// a restart; the file server finds v1 in fsys.
				m := newMiddleware(t, squeeze.WithDictionaryMatch("/static/app.*.js"))
				h, _ := fileServer(t, m, fsys)
				sp := http.StripPrefix("/static/", h)
				plainBr := fsGet(sp, "GET", "/static/app.v2.js", "Accept-Encoding", "br")
				for round := range 2 {
					w := fsGet(sp, "GET", "/static/app.v2.js", "Accept-Encoding", coding+", br", "Available-Dictionary", availableFor(v1))
					if got := w.Header().Get("Content-Encoding"); got != coding {
						t.Fatalf("round %d: Content-Encoding %q, want %s", round, got, coding)
					}
					got, err := testtool.DecodeDictionary(coding, w.Body.Bytes(), v1)
					if err != nil || !bytes.Equal(got, v2) {
						t.Fatalf("decoding the delta: %v (%d bytes, want %d)", err, len(got), len(v2))
					}
					if w.Body.Len() >= plainBr.Body.Len()/2 {
						t.Errorf("delta of %d bytes against br's %d", w.Body.Len(), plainBr.Body.Len())
					}
					if got := w.Header().Get("Content-Length"); got != fmt.Sprint(w.Body.Len()) {
						t.Errorf("Content-Length %s", got)
					}
					if v := varyTokens(w.Header()); countFold(v, "Available-Dictionary") != 1 || countFold(v, "Accept-Encoding") != 1 {
						t.Errorf("Vary %q", v)
					}
					if got := w.Header().Get("Use-As-Dictionary"); got != `match="/static/app.*.js"` {
						t.Errorf("Use-As-Dictionary %q", got)
					}
				}
				// Not on the pattern: no delta, no Use-As-Dictionary.
				w := fsGet(sp, "GET", "/static/other.js", "Accept-Encoding", coding+", br", "Available-Dictionary", availableFor(v1))
				if w.Header().Get("Content-Encoding") != "br" || w.Header().Get("Use-As-Dictionary") != "" {
					t.Errorf("other.js: Content-Encoding %q, Use-As-Dictionary %q", w.Header().Get("Content-Encoding"), w.Header().Get("Use-As-Dictionary"))
				}
			})
		}
	})
}

func TestFileServerReportsEvents(t *testing.T) {
	js := textBody(15, 20000)
	files := map[string][]byte{"app.js": js, "app.js.gz": encodeAt(t, "gzip", 1, js), "img.png": randomBody(1, 5000)}
	var mu sync.Mutex
	var events []squeeze.ResponseInfo
	m := newMiddleware(t, squeeze.WithObserver(squeeze.Observer{Response: func(e squeeze.ResponseInfo) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}}))
	h, _ := fileServer(t, m, fstest.MapFS{
		"app.js": {Data: files["app.js"]}, "app.js.gz": {Data: files["app.js.gz"]}, "img.png": {Data: files["img.png"]},
	})
	cases := []struct {
		target, ae string
		coding     string
		skipped    squeeze.Reason
		cached     bool
	}{
		{"/app.js", "br", "br", squeeze.Reason(0), false},
		{"/app.js", "br", "br", squeeze.Reason(0), true},
		{"/app.js", "gzip", "gzip", squeeze.Reason(0), true},
		{"/app.js", "", "", squeeze.ReasonNotAccepted, false},
		{"/img.png", "br", "", squeeze.ReasonContentType, false},
		{"/missing", "br", "", squeeze.ReasonTooSmall, false}, // its 19-byte text
	}
	for _, c := range cases {
		mu.Lock()
		events = nil
		mu.Unlock()
		w := fsGet(h, "GET", c.target, "Accept-Encoding", c.ae)
		mu.Lock()
		if len(events) != 1 {
			t.Fatalf("%s %q: %d events", c.target, c.ae, len(events))
		}
		e := events[0]
		mu.Unlock()
		if e.Coding != c.coding || e.Skipped != c.skipped || e.Cached != c.cached || e.Out != int64(w.Body.Len()) {
			t.Errorf("%s %q: event %+v, want coding %q skipped %v cached %v out %d", c.target, c.ae, e, c.coding, c.skipped, c.cached, w.Body.Len())
		}
		if c.coding != "" && e.In != int64(len(js)) {
			t.Errorf("%s %q: In %d, want %d", c.target, c.ae, e.In, len(js))
		}
	}
}

// Whatever the file server sends unencoded, its Event gives the reason
// the Middleware's Handler gives for the same response from
// http.FileServer: both come from one decision, over the same facts. Only
// what the file server alone does (siblings, its store's limit) has
// reasons of its own, in TestFileServerReasonsOfItsOwn.
func TestFileServerReportsTheReasonsTheMiddlewareWould(t *testing.T) {
	mt := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	fsys := fstest.MapFS{
		"app.js":         {Data: textBody(31, 20000), ModTime: mt},
		"img.png":        {Data: randomBody(32, 5000), ModTime: mt},
		"tiny.js":        {Data: textBody(33, 50), ModTime: mt},
		"noise.js":       {Data: randomBody(34, 20000), ModTime: mt},
		"dir/index.html": {Data: textBody(35, 5000), ModTime: mt},
	}
	later := mt.Add(time.Hour).Format(http.TimeFormat)
	for _, tc := range []struct {
		name, method, path, ae string
		hdr                    []string
		want                   squeeze.Reason
	}{
		{"encoded", "GET", "/app.js", "br", nil, squeeze.Reason(0)},
		{"image", "GET", "/img.png", "br", nil, squeeze.ReasonContentType},
		{"image, HEAD", "HEAD", "/img.png", "br", nil, squeeze.ReasonContentType},
		{"too small", "GET", "/tiny.js", "br", nil, squeeze.ReasonTooSmall},
		{"too small, client accepts nothing", "GET", "/tiny.js", "", nil, squeeze.ReasonNotAccepted},
		{"identity only", "GET", "/app.js", "identity", nil, squeeze.ReasonNotAccepted},
		{"incompressible", "GET", "/noise.js", "br", nil, squeeze.ReasonNoGain},
		{"one range", "GET", "/app.js", "br", []string{"Range", "bytes=0-9"}, squeeze.ReasonPartial},
		{"range ignored", "GET", "/app.js", "br", []string{"Range", "bytes=0-9", "If-Range", `"other"`}, squeeze.ReasonRange},
		{"image, range ignored", "GET", "/img.png", "br", []string{"Range", "bytes=0-9", "If-Range", `"other"`}, squeeze.ReasonContentType},
		{"range not satisfiable", "GET", "/app.js", "br", []string{"Range", "bytes=99999-"}, squeeze.ReasonPartial}, // Content-Range: bytes */20000
		{"not modified", "GET", "/app.js", "br", []string{"If-Modified-Since", later}, squeeze.ReasonStatus},
		{"missing", "GET", "/missing.js", "br", nil, squeeze.ReasonTooSmall},
		{"missing, client accepts nothing", "GET", "/missing.js", "", nil, squeeze.ReasonNotAccepted},
		{"directory redirected", "GET", "/dir", "br", nil, squeeze.ReasonContentType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got events
			m := newMiddleware(t, squeeze.WithObserver(squeeze.Observer{Response: got.observe}))
			fsrv, _ := fileServer(t, m, fsys)
			for _, h := range []struct {
				name string
				h    http.Handler
			}{
				{"FileServer", fsrv},
				{"Handler(http.FileServer)", m.Handler(http.FileServer(http.FS(fsys)))},
			} {
				rec := serveMethod(h.h, tc.method, tc.path, tc.ae, tc.hdr...)
				e := got.only(t)
				if e.Skipped != tc.want || (e.Coding != "") != (tc.want == squeeze.Reason(0)) {
					t.Errorf("%s: %d, event %+v; want Skipped %v", h.name, rec.Code, e, tc.want)
				}
			}
		})
	}
}

// The reasons only the file server has: a file longer than its store
// keeps, siblings that the client does not accept, and a file that exists
// only as siblings.
func TestFileServerReasonsOfItsOwn(t *testing.T) {
	js := textBody(41, 20000)
	big := textBody(42, 200<<10)
	fsys := fstest.MapFS{
		"app.js":      {Data: js},
		"app.js.gz":   {Data: encodeAt(t, "gzip", 1, js)},
		"tiny.js":     {Data: js[:50]},
		"tiny.js.gz":  {Data: encodeAt(t, "gzip", 1, js[:50])},
		"data.bin":    {Data: js},
		"data.bin.gz": {Data: encodeAt(t, "gzip", 1, js)},
		"big.js":      {Data: big},
		"lib.js":      {Data: js},
		"gone.js.gz":  {Data: encodeAt(t, "gzip", 1, js)},
	}
	for _, tc := range []struct {
		name, path, ae string
		hdr            []string
		coding         string
		want           squeeze.Reason
	}{
		{"sibling", "/app.js", "gzip", nil, "gzip", squeeze.Reason(0)},
		{"small file's sibling", "/tiny.js", "gzip", nil, "gzip", squeeze.Reason(0)},
		{"small file's sibling not accepted", "/tiny.js", "br", nil, "", squeeze.ReasonNotAccepted},
		{"untyped file's sibling", "/data.bin", "gzip", nil, "gzip", squeeze.Reason(0)},
		{"untyped file's sibling not accepted", "/data.bin", "br", nil, "", squeeze.ReasonNotAccepted},
		// A range is answered from the plain file: its siblings are not looked at.
		{"untyped file with siblings, ranged", "/data.bin", "gzip", []string{"Range", "bytes=0-9", "If-Range", `"other"`}, "", squeeze.ReasonContentType},
		{"longer than the store keeps", "/big.js", "br", nil, "", squeeze.ReasonTooLarge},
		{"longer than the store keeps, client accepts nothing", "/big.js", "", nil, "", squeeze.ReasonNotAccepted},
		{"a store that keeps nothing", "/lib.js?tiny", "br", nil, "", squeeze.ReasonTooLarge},
		{"orphan's sibling", "/gone.js", "gzip", nil, "gzip", squeeze.Reason(0)},
		{"orphan decoded", "/gone.js", "br", nil, "", squeeze.ReasonNotAccepted},
		{"orphan decoded for a range ignored", "/gone.js", "gzip", []string{"Range", "bytes=0-9", "If-Range", `"other"`}, "", squeeze.ReasonRange},
		{"method not allowed", "/app.js", "br", []string{"X-Method", "POST"}, "", squeeze.ReasonTooSmall},
		{"dot dot", "/a/../app.js", "br", nil, "", squeeze.ReasonTooSmall},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got events
			// A store of 1 MiB keeps files up to an eighth of it.
			c := newCache(t, 1<<20)
			if strings.HasSuffix(tc.path, "?tiny") {
				// An entry may hold an eighth of it, less than its own
				// bookkeeping.
				tc.path, c = strings.TrimSuffix(tc.path, "?tiny"), newCache(t, 1000)
			}
			m := newMiddleware(t, squeeze.WithObserver(squeeze.Observer{Response: got.observe}), squeeze.WithCache(c))
			fsrv, _ := fileServer(t, m, fsys)
			method := "GET"
			if len(tc.hdr) == 2 && tc.hdr[0] == "X-Method" {
				method = tc.hdr[1]
			}
			r := httptest.NewRequest(method, "/", nil)
			r.URL.Path = tc.path
			if tc.ae != "" {
				r.Header.Set("Accept-Encoding", tc.ae)
			}
			for i := 0; i+1 < len(tc.hdr); i += 2 {
				r.Header.Add(tc.hdr[i], tc.hdr[i+1])
			}
			rec := httptest.NewRecorder()
			fsrv.ServeHTTP(rec, r)
			e := got.only(t)
			if e.Skipped != tc.want || e.Coding != tc.coding || e.Out != int64(rec.Body.Len()) {
				t.Errorf("%d, event %+v; want Coding %q, Skipped %v, Out %d", rec.Code, e, tc.coding, tc.want, rec.Body.Len())
			}
		})
	}
}

// With a Cache, the file server keeps what it encodes there: the second
// request for a file is a cache hit, and the entries count in its Stats.
func TestFileServerKeepsEncodingsInTheMiddlewaresCache(t *testing.T) {
	c := newCache(t, 16<<20)
	js := textBody(3, 20000)
	h, _ := fileServer(t, newMiddleware(t, squeeze.WithCache(c)), fstest.MapFS{"app.js": {Data: js}})
	for range 3 {
		rec := serveAt(h, "/app.js", "zstd")
		if rec.Header().Get("Content-Encoding") != "zstd" {
			t.Fatalf("Content-Encoding %q", rec.Header().Get("Content-Encoding"))
		}
		checkBody(t, rec.Header(), rec.Body.Bytes(), js)
	}
	st := c.Stats()
	if st.Entries < 1 || st.Hits < 2 || st.Bytes <= 0 {
		t.Errorf("cache after three requests for one file: %+v; want its encoding stored and hit", st)
	}
}

// readCountingFS counts the bytes read from the files of FS.
type readCountingFS struct {
	fs.FS
	n *atomic.Int64
}

func (c readCountingFS) Open(name string) (fs.File, error) {
	f, err := c.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return readCountingFile{File: f, n: c.n}, nil
}

type readCountingFile struct {
	fs.File
	n *atomic.Int64
}

func (f readCountingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.n.Add(int64(n))
	return n, err
}

func (f readCountingFile) Seek(off int64, whence int) (int64, error) {
	return f.File.(io.Seeker).Seek(off, whence)
}

// A sibling whose file is missing is decoded for ranges, and a decoded
// byte is reached only from the start: ranges out of order
// (bytes=N-N,0-0,N-N,...) used to decode it once per range. No request
// decodes it more than once: one range is answered, several get the whole.
func TestFileServerDecodesAnOrphanSiblingAtMostOncePerRequest(t *testing.T) {
	raw := randomBody(21, 192<<10)
	plain := []byte(fmt.Sprintf("%x", raw)) // 384 KiB that gzip halves
	gz := encodeAt(t, "gzip", 1, plain)
	last := len(plain) - 1
	var alternating []string
	for range 20 {
		alternating = append(alternating, fmt.Sprintf("%d-%d", last, last), "0-0")
	}
	for _, tc := range []struct {
		name, rng  string
		status     int
		start, end int // of plain, for a 206
	}{
		{"one range at the end", fmt.Sprintf("bytes=%d-%d", last, last), http.StatusPartialContent, last, last + 1},
		{"one suffix range", "bytes=-100", http.StatusPartialContent, len(plain) - 100, len(plain)},
		{"one range with empty elements", "bytes=, 10-19 ,", http.StatusPartialContent, 10, 20},
		{"two ranges in order", "bytes=0-9,100-109", http.StatusOK, 0, 0},
		{"ranges alternating end and start", "bytes=" + strings.Join(alternating, ","), http.StatusOK, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var read atomic.Int64
			fsys := readCountingFS{FS: fstest.MapFS{"big.txt.gz": {Data: gz, ModTime: fsModTime}}, n: &read}
			h, _ := fileServer(t, newMiddleware(t), fsys)
			if w := fsGet(h, "GET", "/big.txt"); w.Code != http.StatusOK { // decodes it once to hash it
				t.Fatalf("first request: status %d", w.Code)
			}
			read.Store(0)
			w := fsGet(h, "GET", "/big.txt", "Accept-Encoding", "identity", "Range", tc.rng)
			if n := read.Load(); n > int64(len(gz)) {
				t.Errorf("a response of %d bytes read %d bytes of the %d-byte sibling: %.1f decodes", w.Body.Len(), n, len(gz), float64(n)/float64(len(gz)))
			}
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d", w.Code, tc.status)
			}
			want := plain
			if tc.status == http.StatusPartialContent {
				want = plain[tc.start:tc.end]
			}
			if !bytes.Equal(w.Body.Bytes(), want) {
				t.Errorf("body of %d bytes, want %d bytes of the decoded file", w.Body.Len(), len(want))
			}
		})
	}
}

// The Cache's Hits count responses served from it: the FileServer's
// background upgrade of a representation to the best level neither counts a
// hit (no response was served) nor a second store. After one GET of one file:
// Hits 0, Misses 1, Stores == Entries.
func TestFileServerUpgradeIsNoCacheHit(t *testing.T) {
	js := textBody(13, 20000)
	c := newCache(t, 64<<20)
	m := newMiddleware(t, squeeze.WithCache(c))
	h, _ := fileServer(t, m, fstest.MapFS{"app.js": {Data: js}})
	rec := serveAt(h, "/app.js", "br")
	checkBody(t, rec.Header(), rec.Body.Bytes(), js)
	squeeze.WaitFileServer(h)
	st := c.Stats()
	if st.Hits != 0 || st.Misses != 1 || st.Stores != st.Entries {
		t.Errorf("after one GET served by encoding: Stats %+v, want Hits 0, Misses 1, Stores == Entries (1)", st)
	}
}
