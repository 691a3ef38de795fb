package squeeze

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"
)

// A file replaced by one of the same size with its modification time kept
// (cp -p, rsync -a, builds that pin timestamps) is a new version: gzip
// clients used to keep getting the stored encoding of the old bytes, and
// identity clients the new bytes under the old ETag. Each case checks that
// it models what it names: same size, same modification time.
func TestFileServerSeesAFileReplacedWithTheSameSizeAndModTime(t *testing.T) {
	if st, err := os.Stat(t.TempDir()); err != nil || idOf(st) == (fileID{}) {
		t.Skip("this system tells a file's versions apart by size and modification time only")
	}
	mk := func(v string) []byte { return []byte(strings.Repeat("function f() { return '"+v+"'; }\n", 200)) }
	a, b := mk("AAAA"), mk("BBBB")
	mt := time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		replace func(t *testing.T, p string, data []byte)
	}{
		{"renamed into place (rsync -a, atomic deploys)", func(t *testing.T, p string, data []byte) {
			tmp := p + ".tmp"
			writeWithModTime(t, tmp, data, mt)
			if err := os.Rename(tmp, p); err != nil {
				t.Fatal(err)
			}
		}},
		{"rewritten in place (cp -p)", func(t *testing.T, p string, data []byte) {
			// Past the file system's timestamp granularity (a few
			// milliseconds), as any real redeploy is: the change time it
			// sets differs from the first write's.
			time.Sleep(20 * time.Millisecond)
			writeWithModTime(t, p, data, mt)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "app.js")
			writeWithModTime(t, p, a, mt)
			m, err := New()
			if err != nil {
				t.Fatal(err)
			}
			h := m.FileServer(os.DirFS(dir))
			t.Cleanup(func() { WaitFileServer(h) })
			get := func(ae string) ([]byte, string) {
				req := httptest.NewRequest("GET", "/app.js", nil)
				req.Header.Set("Accept-Encoding", ae)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				body := rec.Body.Bytes()
				if rec.Header().Get("Content-Encoding") == Gzip {
					zr, err := gzip.NewReader(bytes.NewReader(body))
					if err != nil {
						t.Fatal(err)
					}
					if body, err = io.ReadAll(zr); err != nil {
						t.Fatal(err)
					}
				}
				return body, rec.Header().Get("Etag")
			}
			if got, _ := get("gzip"); !bytes.Equal(got, a) {
				t.Fatal("the first version not served")
			}
			WaitFileServer(h)
			before, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			tc.replace(t, p, b)
			after, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) {
				t.Fatalf("set-up: size %d and mtime %v became %d and %v", before.Size(), before.ModTime(), after.Size(), after.ModTime())
			}
			sum := sha256.Sum256(b)
			wantTag := `"` + hex.EncodeToString(sum[:16])
			for _, ae := range []string{"identity", "gzip"} {
				body, tag := get(ae)
				if !bytes.Equal(body, b) {
					t.Errorf("%s client: got the old version", ae)
				}
				if !strings.HasPrefix(tag, wantTag) {
					t.Errorf("%s client: ETag %s, want the new bytes' %s\"", ae, tag, wantTag)
				}
			}
		})
	}
}

// writeWithModTime writes data to the file p and sets its modification
// time to mt.
func writeWithModTime(t *testing.T, p string, data []byte, mt time.Time) {
	t.Helper()
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mt, mt); err != nil {
		t.Fatal(err)
	}
}

// walkCountingFS counts the walks of the whole tree: the reads of its top
// directory.
type walkCountingFS struct {
	fstest.MapFS
	walks *atomic.Int64
}

func (w walkCountingFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if name == "." {
		w.walks.Add(1)
	}
	return w.MapFS.ReadDir(name)
}

// A request naming an unknown dictionary walks the tree for it once per
// pattern and URL prefix and keeps the index. Mounted without a mux that
// cleans paths, "/app.v2.js", "//app.v2.js", "///app.v2.js" ... used to be
// as many prefixes, each walked and kept for ever. Equivalent prefixes now
// share one index; distinct ones (a router that strips a first segment of
// any name) are capped at maxDictIndexes, with at most that many walks per
// reindexAfter.
func TestFileServerKeepsABoundedNumberOfDictionaryIndexes(t *testing.T) {
	js := strings.Repeat("var x = 1;\n", 300)
	stripFirst := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
			r2 := r.Clone(r.Context())
			r2.URL.Path = "/" + rest
			h.ServeHTTP(w, r2)
		})
	}
	for _, tc := range []struct {
		name       string
		mount      func(http.Handler) http.Handler
		target     func(i int) string
		n          int
		maxIndexes int
		maxWalks   int // per reindexAfter the test takes
	}{
		{"slashes make one prefix", func(h http.Handler) http.Handler { return h },
			func(i int) string { return strings.Repeat("/", i+1) + "app.v2.js" }, 60, 1, 1},
		{"dot segments make one prefix", func(h http.Handler) http.Handler { return h },
			func(i int) string { return strings.Repeat("/.", i) + "/app.v2.js" }, 60, 1, 1},
		{"distinct prefixes are capped", stripFirst,
			func(i int) string { return fmt.Sprintf("/p%d/app.v2.js", i) }, 3 * maxDictIndexes, maxDictIndexes, maxDictIndexes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			walks := new(atomic.Int64)
			mfs := fstest.MapFS{
				"app.v1.js": {Data: []byte(js + "//1"), ModTime: time.Unix(1e9, 0)},
				"app.v2.js": {Data: []byte(js + "//2"), ModTime: time.Unix(1e9, 0)},
			}
			for i := range 50 {
				mfs[fmt.Sprintf("lib/f%d.js", i)] = &fstest.MapFile{Data: []byte(js), ModTime: time.Unix(1e9, 0)}
			}
			m, err := New(WithDictionaryMatch("/*.js"))
			if err != nil {
				t.Fatal(err)
			}
			fsrv := m.FileServer(walkCountingFS{MapFS: mfs, walks: walks})
			h := tc.mount(fsrv)
			t.Cleanup(func() { WaitFileServer(fsrv) })
			t0 := time.Now()
			for i := range tc.n {
				var hash [32]byte
				_, _ = rand.Read(hash[:])
				req := httptest.NewRequest("GET", tc.target(i), nil)
				req.Header.Set("Accept-Encoding", "dcz, gzip")
				req.Header.Set("Available-Dictionary", ":"+base64.StdEncoding.EncodeToString(hash[:])+":")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					t.Fatalf("%s: status %d", tc.target(i), rec.Code)
				}
			}
			if walks.Load() == 0 {
				t.Fatal("set-up: no request walked the tree")
			}
			periods := 1 + int(time.Since(t0)/reindexAfter)
			s := fsrv.(*fileServer)
			s.mu.Lock()
			nix := len(s.indexes)
			s.mu.Unlock()
			if nix > tc.maxIndexes {
				t.Errorf("%d requests left %d dictionary indexes, want at most %d", tc.n, nix, tc.maxIndexes)
			}
			if w := walks.Load(); w > int64(tc.maxWalks*periods) {
				t.Errorf("%d requests in %v walked the tree %d times, want at most %d", tc.n, time.Since(t0).Round(time.Millisecond), w, tc.maxWalks*periods)
			}
		})
	}
}

// A file server's representation in a Cache is keyed apart from every
// response: a response's key, whatever Host, ETag and coding a request and
// its handler choose, never finds a file's entry.
func TestFileRepresentationsNeverShareAKeyWithAResponse(t *testing.T) {
	c, err := NewCache(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	reps := fileReps{c.cacheCore}
	sum := sha256.Sum256([]byte("the plain file"))
	k := repKey{plain: sum, coding: Brotli}
	if !reps.store(k, rep{data: []byte("encoded"), best: true}, 0) {
		t.Fatal("the representation was not stored")
	}
	if r, ok := reps.load(k); !ok || string(r.data) != "encoded" {
		t.Fatalf("load = %q, %v; want the stored representation", r.data, ok)
	}
	for _, rk := range []cacheKey{
		{coding: Brotli, host: "\x00file", etag: string(sum[:])},
		{coding: Brotli, etag: string(sum[:])},
		{coding: Brotli, host: "\x00file", uri: string(sum[:])},
		{coding: Brotli, dictionary: string(sum[:])},
	} {
		if _, ok := c.store.GetIfPresent(rk); ok {
			t.Errorf("response key %#v finds the file's representation", rk)
		}
	}
}

// A sibling rewritten again and again keeps one verdict, on its latest
// version: the verdicts are bounded by the tree, not by its history.
func TestFileServerKeepsOneSiblingVerdictPerName(t *testing.T) {
	m, err := New()
	if err != nil {
		t.Fatal(err)
	}
	plain := bytes.Repeat([]byte("squeeze sibling verdicts "), 400)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(plain)
	_ = zw.Close()
	mfs := fstest.MapFS{"app.js": {Data: plain, ModTime: time.Unix(1, 0)}}
	s := m.FileServer(mfs).(*fileServer)
	for i := range 20 {
		mfs["app.js.gz"] = &fstest.MapFile{Data: gz.Bytes(), ModTime: time.Unix(int64(100+i), 0)}
		req := httptest.NewRequest("GET", "/app.js", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if ce := rec.Header().Get("Content-Encoding"); ce != "gzip" {
			t.Fatalf("version %d: Content-Encoding %q, want the sibling's gzip", i, ce)
		}
	}
	s.mu.Lock()
	n := len(s.verdicts)
	s.mu.Unlock()
	if n != 1 {
		t.Errorf("%d sibling verdicts after 20 versions of one sibling, want 1", n)
	}
}
