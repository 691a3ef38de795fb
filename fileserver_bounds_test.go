package squeeze_test

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/squeezehttp/squeeze"
)

// discardWriter is a ResponseWriter that keeps the status and header and
// throws the body away, so that what a test measures is the file server's.
type discardWriter struct {
	h      http.Header
	status int
	n      int64
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *discardWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// Every encoding a file server makes, for a request or in the background at
// the best level, reads the whole file. Behind a cache too small to keep a
// file's encoding, each GET used to encode it again and start a best-level
// encoding that was thrown away: a file the store cannot keep is now not
// encoded on the fly (precompress it), and only what is kept is upgraded.
func TestFileServerEncodesNoMoreThanItsStoreKeeps(t *testing.T) {
	for _, tc := range []struct {
		name     string
		size     int
		maxReads int // whole reads of the file over all requests
		encoded  bool
		skipped  squeeze.Reason // what each GET's Event reports
	}{
		// The cache keeps entries of up to an eighth of its 4 MiB, and
		// has room for the encoders' memory, which encodings claim too.
		{"file the cache keeps", 16 << 10, 3, true, squeeze.Reason(0)},              // hash, encode, upgrade
		{"file the cache cannot keep", 768 << 10, 6, false, squeeze.ReasonTooLarge}, // each body
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := textBody(31, tc.size)
			var read atomic.Int64
			fsys := readCountingFS{FS: fstest.MapFS{"app.js": {Data: js, ModTime: fsModTime}}, n: &read}
			var events []squeeze.ResponseInfo
			var mu sync.Mutex
			m := newMiddleware(t, squeeze.WithEncodings(squeeze.Gzip), squeeze.WithCache(newCache(t, 4<<20)),
				squeeze.WithObserver(squeeze.Observer{Response: func(e squeeze.ResponseInfo) { mu.Lock(); events = append(events, e); mu.Unlock() }}))
			h, _ := fileServer(t, m, fsys)
			for i := range 6 {
				w := fsGet(h, "GET", "/app.js", "Accept-Encoding", "gzip")
				squeeze.WaitFileServer(h)
				if got := w.Header().Get("Content-Encoding") == "gzip"; got != tc.encoded {
					t.Fatalf("GET %d: Content-Encoding %q", i, w.Header().Get("Content-Encoding"))
				}
				checkBody(t, w.Header(), w.Body.Bytes(), js)
			}
			if reads := float64(read.Load()) / float64(len(js)); reads > float64(tc.maxReads)+0.1 {
				t.Errorf("six GETs read the file %.1f times, want at most %d", reads, tc.maxReads)
			}
			mu.Lock()
			defer mu.Unlock()
			for i, e := range events {
				if e.Skipped != tc.skipped {
					t.Errorf("GET %d: Event.Skipped %v, want %v", i, e.Skipped, tc.skipped)
				}
			}
		})
	}
}

// Concurrent cold GETs of one file share one hash and one encoding: each
// used to read the whole file into memory and encode it for itself, so
// that 16 of them held 16 copies. What 16 concurrent cold GETs allocate is
// measured against what one cold GET allocates, in the same test.
func TestFileServerConcurrentColdGetsEncodeOnce(t *testing.T) {
	js := textBody(32, 2<<20)
	cold := func(n int) (allocated uint64, read int64) {
		var reads atomic.Int64
		fsys := readCountingFS{FS: fstest.MapFS{"app.js": {Data: js, ModTime: fsModTime}}, n: &reads}
		h, _ := fileServer(t, newMiddleware(t, squeeze.WithEncodings(squeeze.Gzip)), fsys)
		start := make(chan struct{})
		var wg sync.WaitGroup
		ws := make([]*discardWriter, n)
		for i := range n {
			ws[i] = &discardWriter{h: http.Header{}}
			r := httptest.NewRequest("GET", "/app.js", nil)
			r.Header.Set("Accept-Encoding", "gzip")
			wg.Go(func() {
				<-start
				h.ServeHTTP(ws[i], r)
			})
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		close(start)
		wg.Wait()
		// After the upgrade too: whether it ran before the requests
		// ended or after is the scheduler's choice, and one cold GET's
		// allocation moved by half with it.
		squeeze.WaitFileServer(h)
		runtime.ReadMemStats(&after)
		for i, w := range ws {
			if w.status != http.StatusOK || w.h.Get("Content-Encoding") != "gzip" {
				t.Fatalf("GET %d of %d: status %d, Content-Encoding %q", i, n, w.status, w.h.Get("Content-Encoding"))
			}
		}
		return after.TotalAlloc - before.TotalAlloc, reads.Load()
	}
	one, oneRead := cold(1)
	many, manyRead := cold(16)
	t.Logf("one cold GET: %d bytes allocated, %d read; 16 concurrent: %d allocated, %d read", one, oneRead, many, manyRead)
	if many > 3*one {
		t.Errorf("16 concurrent cold GETs allocated %d bytes, %.1f times what one did (%d); want at most 3", many, float64(many)/float64(one), one)
	}
	// The upgrade reads the file once more, after the requests. A request
	// the scheduler held between its look in the store and its flight
	// while the first flight ended leads a second one, so on a loaded
	// machine a few more are seen (6 once, at load 15 on 2 cores);
	// without the flights it was 18.
	if manyRead > 8*int64(len(js))+16<<10 {
		t.Errorf("16 concurrent cold GETs read the file %.1f times, want at most 8 (hash, encode, upgrade, and late flights)", float64(manyRead)/float64(len(js)))
	}
}

// A file the file server never encodes (a video) is served as
// http.FileServer serves it: a range or a HEAD reads what it asks for, not
// the whole file to hash it, and no ETag made from its hash goes out.
func TestFileServerDoesNotHashFilesItNeverEncodes(t *testing.T) {
	video := randomBody(33, 4<<20)
	for _, tc := range []struct {
		name, method, rng string
		status            int
		maxRead           int64
	}{
		{"first KiB", "GET", "bytes=0-1023", http.StatusPartialContent, 512 + 1024},
		{"last byte", "GET", "bytes=-1", http.StatusPartialContent, 512 + 1},
		{"HEAD", "HEAD", "", http.StatusOK, 512},
		{"GET", "GET", "", http.StatusOK, 512 + int64(len(video))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var read atomic.Int64
			fsys := readCountingFS{FS: fstest.MapFS{"clip.mp4": {Data: video, ModTime: fsModTime}}, n: &read}
			h, _ := fileServer(t, newMiddleware(t), fsys)
			hdr := []string{"Accept-Encoding", "gzip, br, zstd"}
			if tc.rng != "" {
				hdr = append(hdr, "Range", tc.rng)
			}
			w := fsGet(h, tc.method, "/clip.mp4", hdr...)
			if w.Code != tc.status || w.Header().Get("Content-Encoding") != "" {
				t.Fatalf("status %d, Content-Encoding %q", w.Code, w.Header().Get("Content-Encoding"))
			}
			if n := read.Load(); n > tc.maxRead {
				t.Errorf("read %d bytes of the %d-byte file, want at most %d", n, len(video), tc.maxRead)
			}
			if w.Header().Get("ETag") != "" || w.Header().Get("Last-Modified") == "" {
				t.Errorf("ETag %q, Last-Modified %q; want no ETag and the modification time, as http.FileServer", w.Header().Get("ETag"), w.Header().Get("Last-Modified"))
			}
		})
	}
}

// Paths with a segment starting with a dot are refused, as squeeze
// precompress skips them, unless FileServerDotfiles allows them.
func TestFileServerRefusesDotfilesUnlessAllowed(t *testing.T) {
	files := map[string][]byte{
		".env":                      []byte("SECRET=1\n"),
		".git/config":               []byte("[core]\n"),
		"a/.hidden/x.js":            []byte("var x;\n"),
		".well-known/security.txt":  []byte("Contact: x\n"),
		".orphan.js.gz":             encodeAt(t, "gzip", 1, textBody(34, 4000)),
		"app.js":                    []byte("var app;\n"),
		"dir.with.dots/ok.js":       []byte("var ok;\n"),
		"dir.with.dots/index.html":  []byte("<p>index</p>\n"),
		"sub/.keep":                 []byte(""),
		"sub/visible.txt":           []byte("visible\n"),
		"sub/.config/settings.json": []byte("{}\n"),
	}
	eachFS(t, files, func(t *testing.T, fsys fs.FS) {
		for _, allow := range []bool{false, true} {
			h, _ := fileServer(t, newMiddleware(t), fsys, squeeze.FileServerDotfiles(allow))
			for _, tc := range []struct {
				path string
				dot  bool
			}{
				{"/.env", true},
				{"/.git/config", true},
				{"/a/.hidden/x.js", true},
				{"/.well-known/security.txt", true},
				{"/.orphan.js", true},
				{"/sub/.keep", true},
				{"/sub/.config/settings.json", true},
				{"/app.js", false},
				{"/dir.with.dots/ok.js", false},
				{"/dir.with.dots/", false},
				{"/sub/visible.txt", false},
			} {
				want := http.StatusOK
				if tc.dot && !allow {
					want = http.StatusNotFound
				}
				for _, method := range []string{"GET", "HEAD"} {
					if w := fsGet(h, method, tc.path); w.Code != want {
						t.Errorf("FileServerDotfiles(%v): %s %s: status %d, want %d", allow, method, tc.path, w.Code, want)
					}
				}
			}
		}
	})
}

// A file the file server marks Use-As-Dictionary carries a freshness, since
// a browser keeps a dictionary only while it is fresh, unless the handler
// in front of the file server set a Cache-Control of its own; other files
// get none.
func TestFileServerGivesDictionariesAFreshness(t *testing.T) {
	v1 := textBody(35, 8000)
	fsys := fstest.MapFS{
		"app.v1.js": {Data: v1, ModTime: fsModTime},
		"other.js":  {Data: textBody(36, 8000), ModTime: fsModTime},
	}
	h, _ := fileServer(t, newMiddleware(t, squeeze.WithDictionaryMatch("/app.*.js")), fsys)
	for _, tc := range []struct {
		name, path, method, set, want string
		hdr                           []string
	}{
		{"dictionary", "/app.v1.js", "GET", "", squeeze.DictionaryCacheControl, nil},
		{"dictionary, HEAD", "/app.v1.js", "HEAD", "", squeeze.DictionaryCacheControl, nil},
		{"dictionary, 304", "/app.v1.js", "GET", "", squeeze.DictionaryCacheControl, []string{"If-None-Match", plainTag(v1)}},
		{"dictionary behind a handler's Cache-Control", "/app.v1.js", "GET", "no-cache", "no-cache", nil},
		{"not a dictionary", "/other.js", "GET", "", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.path, nil)
			for i := 0; i+1 < len(tc.hdr); i += 2 {
				r.Header.Set(tc.hdr[i], tc.hdr[i+1])
			}
			w := httptest.NewRecorder()
			const lower = "cache-control" // net/http sends a key as written: any case counts
			if tc.set != "" {
				w.Header()[lower] = []string{tc.set}
			}
			h.ServeHTTP(w, r)
			//lint:ignore SA1008 the non-canonical key is the point
			got := fmt.Sprint(w.Header().Values("Cache-Control"), w.Header()[lower]) //nolint:staticcheck // SA1008, as above
			want := fmt.Sprint([]string{tc.want}, []string(nil))
			switch {
			case tc.want == "":
				want = fmt.Sprint([]string(nil), []string(nil))
			case tc.set != "":
				want = fmt.Sprint([]string(nil), []string{tc.want})
			}
			if got != want {
				t.Errorf("status %d, Cache-Control fields %s, want %s", w.Code, got, want)
			}
		})
	}
}

// BenchmarkFileServerBehindASmallCache serves a 2 MiB script as br from a
// file server whose Middleware has a 2 MiB Cache, which keeps no entry over
// 256 KiB, waiting for any background encoding after each request: what
// each GET costs in all.
func BenchmarkFileServerBehindASmallCache(b *testing.B) {
	js := textBody(37, 2<<20)
	m := newMiddleware(b, squeeze.WithCache(newCache(b, 2<<20)))
	h := m.FileServer(fstest.MapFS{"app.js": {Data: js, ModTime: fsModTime}})
	b.SetBytes(int64(len(js)))
	for b.Loop() {
		w := &discardWriter{h: http.Header{}}
		r := httptest.NewRequest("GET", "/app.js", nil)
		r.Header.Set("Accept-Encoding", "br")
		h.ServeHTTP(w, r)
		squeeze.WaitFileServer(h)
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}
}

// BenchmarkFileServerRangeOfANewVideo asks for the first KiB of a 256 MiB
// video just replaced (a new modification time each time): a new version,
// which the file server used to hash whole before answering.
func BenchmarkFileServerRangeOfANewVideo(b *testing.B) {
	dir := b.TempDir()
	name := filepath.Join(dir, "clip.mp4")
	if err := os.WriteFile(name, randomBody(38, 1<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Truncate(name, 256<<20); err != nil {
		b.Fatal(err)
	}
	h := newMiddleware(b).FileServer(os.DirFS(dir))
	mt := fsModTime
	for b.Loop() {
		mt = mt.Add(time.Second)
		if err := os.Chtimes(name, mt, mt); err != nil {
			b.Fatal(err)
		}
		w := &discardWriter{h: http.Header{}}
		r := httptest.NewRequest("GET", "/clip.mp4", nil)
		r.Header.Set("Range", "bytes=0-1023")
		h.ServeHTTP(w, r)
		if w.status != http.StatusPartialContent || w.n != 1024 {
			b.Fatalf("status %d, %d bytes", w.status, w.n)
		}
	}
}
