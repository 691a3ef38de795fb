package squeeze

import (
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"
)

// The encoding a FileServer does on first use holds the file, the encoding
// growing and an encoder: work in flight that its store's budget must
// count, so that requests for many distinct large files at once hold no
// more than the budget, and those that find no room go out plain. The test
// stops every request at the last read of its file, when the work holds
// the most, and measures the live heap there: with encoding on offer against
// without (the baseline: the same GETs, plain), for each store.
func TestFileServerEncodingsInFlightStayWithinTheStoreBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("a heap measurement over 70 MiB of files: it runs without -short (.ci/run runs it without -race)")
	}
	const (
		budget = 32 << 20
		files  = 20
		size   = 3<<20 + 512<<10
	)
	fsys := fstest.MapFS{}
	for i := range files {
		fsys["f"+strconv.Itoa(i)+".txt"] = &fstest.MapFile{Data: budgetTestBody(i, size)}
	}
	for _, tc := range []struct {
		name  string
		serve func(t *testing.T, fsys fs.FS, observe Option) *fileServer
	}{
		{"own store", func(t *testing.T, fsys fs.FS, observe Option) *fileServer {
			m, err := New(observe)
			if err != nil {
				t.Fatal(err)
			}
			s := newFileServer(m, fsys)
			s.reps = newLRUStore(budget)
			s.maxEncode = min(s.maxDecoded, s.reps.maxEntry())
			return s
		}},
		{"Cache", func(t *testing.T, fsys fs.FS, observe Option) *fileServer {
			c, err := NewCache(budget)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			m, err := New(WithCache(c), observe)
			if err != nil {
				t.Fatal(err)
			}
			return newFileServer(m, fsys)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &gatedFS{fsys: fsys}
			var encoded, noRoom atomic.Int64
			h := tc.serve(t, g, WithObserver(Observer{Response: func(e ResponseInfo) {
				switch {
				case e.Coding == Gzip:
					encoded.Add(1)
				case e.Skipped == ReasonNoRoom:
					noRoom.Add(1)
				}
			}}))
			// Hash every file first (a plain GET of a file that may be
			// encoded hashes it), so that only the requests measured read.
			getAll(t, h, files, "")
			plain := g.measure(files, func() { getAll(t, h, files, "") })
			gzipped := g.measure(files, func() { getAll(t, h, files, "gzip") })
			h.bestRuns.Wait() // the upgrades the encodings started end before the next case
			if n := heldBeyondEntries(h.reps); n != 0 {
				t.Errorf("%d bytes of the budget still held once every encoding ended", n)
			}
			t.Logf("heap held at the last read of %d files of %d bytes: %d MiB plain, %d MiB with gzip on offer (budget %d MiB); %d encoded, %d plain for want of room",
				files, size, plain>>20, gzipped>>20, budget>>20, encoded.Load(), noRoom.Load())
			if gzipped-plain > budget {
				t.Errorf("encodings in flight held %d MiB more than the plain GETs, over the store's budget of %d MiB", (gzipped-plain)>>20, budget>>20)
			}
			if encoded.Load() == 0 || encoded.Load()+noRoom.Load() != files {
				t.Errorf("%d GETs encoded and %d sent plain with ReasonNoRoom; want some encoded and the rest %s", encoded.Load(), noRoom.Load(), ReasonNoRoom)
			}
		})
	}
}

// heldBeyondEntries returns what reps holds of its budget beyond its
// entries' weights: what encodings reserved and did not give back.
func heldBeyondEntries(reps repStore) int64 {
	switch r := reps.(type) {
	case *lruStore:
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.reps.Reserved()
	case fileReps:
		r.c.store.InvalidateAll() // each entry's weight goes back as it leaves
		return r.c.bytes.Load()
	}
	panic("unknown store")
}

// budgetTestBody returns n bytes, different for every seed, that gzip
// makes about half as long.
func budgetTestBody(seed, n int) []byte {
	r := rand.New(rand.NewPCG(uint64(seed), 0xb0d9))
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(r.IntN(16))
	}
	return b
}

// getAll GETs f0.txt to f(n-1).txt from h at once, with Accept-Encoding ae,
// and checks each answers 200.
func getAll(t *testing.T, h http.Handler, n int, ae string) {
	t.Helper()
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() {
			r := httptest.NewRequest(http.MethodGet, "/f"+strconv.Itoa(i)+".txt", nil)
			if ae != "" {
				r.Header.Set("Accept-Encoding", ae)
			}
			w := &discardWriter{header: http.Header{}}
			h.ServeHTTP(w, r)
			codes[i] = w.code
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusOK {
			t.Fatalf("GET f%d.txt: %d", i, c)
		}
	}
}

// discardWriter is an http.ResponseWriter that keeps nothing of the body.
type discardWriter struct {
	header http.Header
	code   int
}

func (w *discardWriter) Header() http.Header { return w.header }

func (w *discardWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(p), nil
}

// gatedFS is fsys whose files, while a measure runs, stop at their last
// read until n of them are there (or a while has passed), when the heap is
// measured.
type gatedFS struct {
	fsys fs.FS

	mu      sync.Mutex
	armed   bool
	n, at   int
	release chan struct{}
	heap    uint64
}

// measure runs do with the gate armed for n files and returns how much
// the live heap grew from before do to when the n were at their last read.
func (g *gatedFS) measure(n int, do func()) int64 {
	ms := liveHeap()
	before := ms.HeapAlloc
	g.mu.Lock()
	g.armed, g.n, g.at, g.release, g.heap = true, n, 0, make(chan struct{}), 0
	release := g.release
	g.mu.Unlock()
	go func() {
		// Should fewer than n get there, the measure is taken anyway.
		select {
		case <-release:
		case <-time.After(10 * time.Second):
			g.open()
		}
	}()
	do()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed = false
	return int64(g.heap) - int64(before)
}

// arrive waits at the gate, if it is armed, until n have arrived.
func (g *gatedFS) arrive() {
	g.mu.Lock()
	if !g.armed || g.heap != 0 {
		g.mu.Unlock()
		return
	}
	g.at++
	release, last := g.release, g.at == g.n
	g.mu.Unlock()
	if last {
		g.open()
	}
	<-release
}

// open measures the live heap, what the requests hold, and lets everyone
// through.
func (g *gatedFS) open() {
	ms := liveHeap()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.heap == 0 {
		g.heap = ms.HeapAlloc
		close(g.release)
	}
}

func (g *gatedFS) Open(name string) (fs.File, error) {
	f, err := g.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil || st.IsDir() {
		return f, err
	}
	return &gatedFile{File: f, g: g, size: st.Size()}, nil
}

// gatedFile is a file of a gatedFS.
type gatedFile struct {
	fs.File
	g         *gatedFS
	size, pos int64
}

func (f *gatedFile) Read(p []byte) (int, error) {
	if f.pos < f.size && f.pos+int64(len(p)) >= f.size {
		f.g.arrive()
	}
	n, err := f.File.Read(p)
	f.pos += int64(n)
	return n, err
}

func (f *gatedFile) Seek(off int64, whence int) (int64, error) {
	n, err := f.File.(io.Seeker).Seek(off, whence)
	if err == nil {
		f.pos = n
	}
	return n, err
}

// liveHeap returns the memory statistics once the heap holds only what is
// reachable, the encoders idle in pools excepted: those a sync.Pool keeps
// go at the second collection.
func liveHeap() *runtime.MemStats {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return &ms
}

// A best-level upgrade holds its encoder, tens of megabytes for br 11: it
// is counted in the store's budget like the encoding it replaces, so a
// store whose budget has no room for it keeps the first encoding, where the
// upgrade used to run uncounted. Whatever the encodings reserved, kept or
// not, is given back or taken over by the entries they stored.
func TestFileServerUpgradesOnlyWithRoomForTheirEncoder(t *testing.T) {
	body := budgetTestBody(7, 256<<10)
	fsys := fstest.MapFS{"app.txt": &fstest.MapFile{Data: body}}
	for _, tc := range []struct {
		name     string
		budget   int64
		upgraded bool
	}{
		{"budget with room for br 11's encoder", 64 << 20, true},
		{"budget without", 16 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(WithEncodings(Brotli))
			if err != nil {
				t.Fatal(err)
			}
			s := newFileServer(m, fsys)
			store := newLRUStore(tc.budget)
			s.reps = store
			s.maxEncode = min(s.maxDecoded, s.reps.maxEntry())
			var first int
			for i := range 2 {
				r := httptest.NewRequest(http.MethodGet, "/app.txt", nil)
				r.Header.Set("Accept-Encoding", "br")
				w := httptest.NewRecorder()
				s.ServeHTTP(w, r)
				s.bestRuns.Wait()
				if w.Header().Get("Content-Encoding") != "br" {
					t.Fatalf("GET %d: Content-Encoding %q", i, w.Header().Get("Content-Encoding"))
				}
				if i == 0 {
					first = w.Body.Len()
				} else if upgraded := w.Body.Len() < first; upgraded != tc.upgraded {
					t.Errorf("upgraded %v (%d bytes, then %d); want %v", upgraded, first, w.Body.Len(), tc.upgraded)
				}
			}
			store.mu.Lock()
			defer store.mu.Unlock()
			if n := store.reps.Reserved(); n != 0 {
				t.Errorf("%d bytes still reserved once every encoding ended", n)
			}
		})
	}
}
