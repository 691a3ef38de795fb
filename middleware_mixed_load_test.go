package squeeze_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// The test in this file puts the cache's invariant and its bounds under a
// mixed load at once: handlers whose ETags lie, Vary: Cookie,
// Authorization, tenants under http.StripPrefix with equal ETags, escaped
// slashes, a lower-case Cache-Control, dictionaries, two file servers with
// files of equal names, sizes and times, slow and stalled readers,
// cancelled requests and a hostile origin for the client's dictionaries.
// Every response must carry what its own handler produced for its request,
// and the heap must come back once the servers and the cache are closed.

const (
	mixedWhole  = 4 << 10                       // ends within the buffer
	mixedStream = 3 * squeeze.DefaultBufferSize // a stream
	mixedSlow   = 8 * squeeze.DefaultBufferSize // read slowly, or stalled
	mixedHuge   = 2 << 20                       // a hostile capture
	mixedStore  = 4 << 20                       // the client's dictionary store
	mixedLong   = 8000                          // a hostile path's length
	mixedPat    = 2000                          // a hostile pattern's length
	mixedFile   = 40 << 10                      // a file of each tenant
	mixedBig    = 5 * squeeze.DefaultBufferSize // a file streamed
	mixedUsers  = "alice bob carol"             // cookies and tokens
	mixedLangs  = "en fr de"                    // Accept-Language
)

// mixedSites are the values of Sec-Fetch-Site sent, "" for none.
var mixedSites = []string{"", "same-origin", "cross-site", "none"}

// mixedSize is the body length of a route: its path ends in "stream",
// "slow" or neither.
func mixedSize(path string) int {
	switch {
	case strings.HasSuffix(path, "stream"):
		return mixedStream
	case strings.HasSuffix(path, "slow"):
		return mixedSlow
	}
	return mixedWhole
}

// mixedFiles are the file systems of two tenants: the same names, sizes
// and modification times, different bytes, and a dotfile.
func mixedFiles(tenant string) fstest.MapFS {
	mod := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return fstest.MapFS{
		"app.js":     {Data: mixedFileBody(tenant, "app.js", mixedFile), ModTime: mod},
		"big.js":     {Data: mixedFileBody(tenant, "big.js", mixedBig), ModTime: mod},
		"css/x.css":  {Data: mixedFileBody(tenant, "css/x.css", mixedWhole), ModTime: mod},
		".env":       {Data: []byte("SECRET=" + tenant), ModTime: mod},
		"index.html": {Data: mixedFileBody(tenant, "index.html", mixedWhole), ModTime: mod},
	}
}

func mixedFileBody(tenant, name string, n int) []byte {
	return personal("file "+tenant+" "+name, n)
}

// mixedApp is the server under load: every route writes a body that
// depends on the request (cookie, token, language, tenant, escaped path)
// under one ETag for all.
//
// It returns the file servers too, whose background encodings the caller
// waits for.
func mixedApp(m *squeeze.Middleware) (http.Handler, []http.Handler) {
	var bodies personalBodies
	var files []http.Handler
	mux := http.NewServeMux()
	route := func(serve func(h http.Header, r *http.Request) string) http.Handler {
		return m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			who := serve(w.Header(), r)
			writeChunks(w, bodies.of(who, mixedSize(r.URL.Path)), 8<<10)
		}))
	}
	handle := func(pattern string, serve func(h http.Header, r *http.Request) string) {
		mux.Handle(pattern, route(serve))
	}
	handle("/cookie/", func(h http.Header, r *http.Request) string {
		h.Set("ETag", `"articles-v7"`)
		h.Set("Vary", "Cookie")
		return "cookie " + cookieUser(r) + r.URL.Path
	})
	handle("/auth/", func(h http.Header, r *http.Request) string {
		h.Set("ETag", `"articles-v7"`)
		return "token " + r.Header.Get("Authorization") + r.URL.Path
	})
	handle("/lang/", func(h http.Header, r *http.Request) string {
		lang := r.Header.Get("Accept-Language")
		h.Set("ETag", `"articles-v7"`)
		h.Set("Vary", "Accept-Language")
		h.Set("Content-Language", lang)
		return "lang " + lang + r.URL.Path
	})
	handle("/esc/", func(h http.Header, r *http.Request) string {
		h.Set("ETag", `"1"`)
		return "path " + r.URL.EscapedPath()
	})
	handle("/private/", func(h http.Header, r *http.Request) string {
		h["Etag"] = []string{`"v1"`}
		h["cache-control"] = []string{"private"}
		return "private " + cookieUser(r) + r.URL.Path
	})
	handle("/plain/", func(h http.Header, r *http.Request) string {
		h.Set("ETag", `"v1"`)
		return "plain " + cookieUser(r) + r.URL.Path
	})
	handle("/dict/", func(h http.Header, r *http.Request) string {
		h.Set("ETag", `"d1"`)
		h.Set("Vary", "Cookie")
		return "dict " + cookieUser(r) + r.URL.Path
	})
	handle("/dict/site/", func(h http.Header, r *http.Request) string {
		// One ETag for a body per Sec-Fetch-Site, which the Vary squeeze
		// adds on dictionary paths names.
		h.Set("ETag", `"d2"`)
		return "site " + r.Header.Get("Sec-Fetch-Site") + r.URL.Path
	})
	handle("/slow/", func(h http.Header, r *http.Request) string {
		h.Set("ETag", `"s1"`) // honest: one body for everyone
		return "everyone"
	})
	for _, tenant := range []string{"a", "b"} {
		mux.Handle("/t/"+tenant+"/", http.StripPrefix("/t/"+tenant, route(func(h http.Header, r *http.Request) string {
			h.Set("ETag", `"1"`)
			return "tenant " + tenant + r.URL.Path
		})))
		prefix := "/static-" + tenant
		fsrv := m.FileServer(mixedFiles(tenant))
		files = append(files, fsrv)
		mux.Handle(prefix+"/", http.StripPrefix(prefix, fsrv))
	}
	return mux, files
}

// personalBodies makes each personal body once: the load's handlers
// write the same few bodies many times.
type personalBodies struct{ m sync.Map }

func (p *personalBodies) of(who string, n int) []byte {
	k := fmt.Sprint(n, who)
	if b, ok := p.m.Load(k); ok {
		return b.([]byte)
	}
	b, _ := p.m.LoadOrStore(k, personal(who, n))
	return b.([]byte)
}

// mixedRequest is one request of the load and what its handler produces
// for it: want, or a 404 when notFound.
type mixedRequest struct {
	path     string
	hdr      []string
	want     []byte
	notFound bool
	// lying is set where the handler's ETag names bytes that differ by
	// request with nothing in the response to tell them apart: the risk
	// CacheTrustedETags documents, so left out with it for streams.
	lying bool
}

// mixedRequests lists the requests of the load, derived from the users,
// languages, tenants and paths above.
func mixedRequests() []mixedRequest {
	var out []mixedRequest
	add := func(q mixedRequest) { out = append(out, q) }
	for _, size := range []string{"whole", "stream"} {
		for _, u := range strings.Fields(mixedUsers) {
			cookie := []string{"Cookie", "user=" + u}
			add(mixedRequest{path: "/cookie/" + size, hdr: cookie, want: personal("cookie "+u+"/cookie/"+size, mixedSize(size))})
			token := "Bearer " + u + "-secret"
			add(mixedRequest{path: "/auth/" + size, hdr: []string{"Authorization", token},
				want: personal("token "+token+"/auth/"+size, mixedSize(size))})
			add(mixedRequest{path: "/private/" + size, hdr: cookie, want: personal("private "+u+"/private/"+size, mixedSize(size))})
			add(mixedRequest{path: "/plain/" + size, hdr: cookie, want: personal("plain "+u+"/plain/"+size, mixedSize(size)),
				lying: size == "stream"})
			for _, site := range mixedSites {
				hdr := cookie
				if site != "" {
					hdr = append(hdr[:2:2], "Sec-Fetch-Site", site)
				}
				add(mixedRequest{path: "/dict/" + size, hdr: hdr, want: personal("dict "+u+"/dict/"+size, mixedSize(size))})
			}
		}
		for _, site := range mixedSites {
			var hdr []string
			if site != "" {
				hdr = []string{"Sec-Fetch-Site", site}
			}
			add(mixedRequest{path: "/dict/site/" + size, hdr: hdr, want: personal("site "+site+"/dict/site/"+size, mixedSize(size))})
		}
		for _, lang := range strings.Fields(mixedLangs) {
			add(mixedRequest{path: "/lang/" + size, hdr: []string{"Accept-Language", lang},
				want: personal("lang "+lang+"/lang/"+size, mixedSize(size))})
		}
		for _, tenant := range []string{"a", "b"} {
			add(mixedRequest{path: "/t/" + tenant + "/items/" + size, want: personal("tenant "+tenant+"/items/"+size, mixedSize(size))})
		}
		for _, p := range []string{"/esc/x%2Fy/" + size, "/esc/x/y/" + size} {
			add(mixedRequest{path: p, want: personal("path "+p, mixedSize(size))})
		}
	}
	for _, tenant := range []string{"a", "b"} {
		for _, name := range []string{"app.js", "big.js", "css/x.css", "index.html"} {
			add(mixedRequest{path: "/static-" + tenant + "/" + name, want: mixedFileBody(tenant, name, len(mixedFiles(tenant)[name].Data))})
		}
		add(mixedRequest{path: "/static-" + tenant + "/.env", notFound: true})
		add(mixedRequest{path: "/static-" + tenant + "/css%2Fx.css", notFound: true})
	}
	add(mixedRequest{path: "/slow/slow", want: personal("everyone", mixedSlow)})
	return out
}

// hostileOrigin is a server that plants the longest match patterns a
// client keeps, sends bodies far over its capture cap as dictionaries,
// and is asked for the longest paths the client matches.
func hostileOrigin() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/javascript")
		h.Set("Cache-Control", "max-age=31536000")
		switch {
		case strings.HasPrefix(r.URL.Path, "/plant/"):
			// 2000 bytes of "a*", no "b" in any path: the pattern that
			// makes a backtracking matcher quadratic.
			h.Set("Use-As-Dictionary", `match="/`+strings.Repeat("a*", mixedPat/2-2)+`b", id="`+r.URL.Path+`"`)
		case strings.HasPrefix(r.URL.Path, "/huge/"):
			h.Set("Use-As-Dictionary", `match="/*"`)
		}
		_, _ = w.Write(hostileBody(r.URL.Path))
	})
}

func hostileBody(path string) []byte {
	n := mixedWhole
	if strings.HasPrefix(path, "/huge/") {
		n = mixedHuge
	}
	f := fnv.New32a()
	_, _ = f.Write([]byte(path))
	return textBody(int(f.Sum32()), n)
}

// byHost sends each request to the RoundTripper of its host, so that one
// squeeze Transport, with one dictionary store, talks to several servers.
type byHost map[string]http.RoundTripper

func (b byHost) RoundTrip(r *http.Request) (*http.Response, error) { return b[r.URL.Host].RoundTrip(r) }

func (b byHost) CloseIdleConnections() {
	for _, rt := range b {
		if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
	}
}

// heapInUse returns the live heap after the garbage collector has run
// enough to drop what sync.Pools keep.
func heapInUse() uint64 {
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// Under a mixed load, with the cache, dictionaries and two file servers
// on, over HTTP/1.1 and HTTP/2, with and without CacheTrustedETags, every
// response carries its own handler's bytes for its request: users,
// tokens, languages, tenants and escaped paths under one ETag, read by
// squeeze's Transport (which keeps dictionaries, also from a hostile
// origin) and by a plain client, while slow and stalled readers lead
// streams and other requests are cancelled; and the heap comes back to
// where it was once the cache and the servers are closed.
func TestMixedLoadServesEveryoneTheirOwnBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("a load of several seconds")
	}
	requests := mixedRequests()
	// Warm what is built once per process (codec tables, TLS), so that
	// the baseline holds it.
	goroutines, rounds := 8, 2
	if squeeze.RaceEnabled {
		goroutines, rounds = 4, 1 // the heap is not checked, and the detector slows codecs ten times
	} else {
		runMixedLoad(t, nil, protocols[1], requests, 4, 1)
	}
	for _, mode := range cacheModes {
		t.Run(mode.name, func(t *testing.T) {
			trusted := len(mode.opts) > 0
			base := heapInUse()
			var held uint64
			for _, p := range protocols {
				t.Run(p.name, func(t *testing.T) {
					var load []mixedRequest
					for _, q := range requests {
						if !(trusted && q.lying) {
							load = append(load, q)
						}
					}
					held = max(held, runMixedLoad(t, mode.opts, p, load, goroutines, rounds))
				})
			}
			if t.Failed() || squeeze.RaceEnabled {
				return // the race detector's shadow memory and pools distort the heap
			}
			// What the load held above the baseline must be mostly given
			// back: less than half of it may stay (the servers' and
			// clients' own records, kept until the test ends).
			after := heapInUse()
			mib := func(n uint64) float64 { return float64(n) / (1 << 20) }
			t.Logf("heap %.1f MiB before, %.1f MiB at the end of a load, %.1f MiB after Close", mib(base), mib(held), mib(after))
			if held > base && after > base+(held-base)/2 {
				t.Errorf("heap %.1f MiB after the load and Close, %.1f MiB before, %.1f MiB during: over half of the load's memory kept",
					mib(after), mib(base), mib(held))
			}
		})
	}
}

// runMixedLoad runs the requests over p in goroutines rounds times each,
// plus a stalled reader, slow readers, cancelled requests and the hostile
// origin, and closes everything it started before it returns.
//
// It returns the heap in use at the end of the load, before it closed
// anything (0 under the race detector).
func runMixedLoad(t *testing.T, opts []squeeze.CacheOption, p protocol, requests []mixedRequest, goroutines, rounds int) (held uint64) {
	t.Helper()
	goroutines0 := runtime.NumGoroutine()
	c, err := squeeze.NewCache(8 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	squeeze.SetStreamPatience(c, 200*time.Millisecond)
	m, err := squeeze.New(squeeze.WithCache(c, opts...),
		squeeze.WithDictionaryMatch("/dict/*", "/static-*", "/cookie/*"),
		squeeze.WithDictionaryStoreSize(8<<20))
	if err != nil {
		t.Fatal(err)
	}
	app, files := mixedApp(m)
	srv, plain := startServer(t, p, app, true)
	defer srv.Close()
	hostile, hostileClient := startServer(t, p, hostileOrigin(), true)
	defer hostile.Close()
	routes := byHost{
		strings.TrimPrefix(strings.TrimPrefix(srv.URL, "http://"), "https://"):     plain.Transport,
		strings.TrimPrefix(strings.TrimPrefix(hostile.URL, "http://"), "https://"): hostileClient.Transport,
	}
	st := &squeeze.Transport{Base: routes, DictionaryStoreSize: mixedStore}
	client := &http.Client{Transport: st, Timeout: 30 * time.Second}
	defer st.CloseIdleConnections()

	var wrong sync.Map // path -> first error
	fail := func(q mixedRequest, format string, args ...any) {
		wrong.LoadOrStore(q.path+" "+strings.Join(q.hdr, " "), fmt.Sprintf(format, args...))
	}
	get := func(ctx context.Context, q mixedRequest, viaTransport bool, ae string) (*http.Response, error) {
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+q.path, nil)
		if err != nil {
			return nil, err
		}
		for i := 0; i+1 < len(q.hdr); i += 2 {
			r.Header.Add(q.hdr[i], q.hdr[i+1])
		}
		if viaTransport {
			return client.Do(r)
		}
		if ae != "" {
			r.Header.Set("Accept-Encoding", ae)
		}
		return plain.Do(r)
	}
	check := func(q mixedRequest, viaTransport bool, ae string) {
		res, err := get(t.Context(), q, viaTransport, ae)
		if err != nil {
			fail(q, "GET: %v", err)
			return
		}
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		if err != nil {
			fail(q, "reading: %v", err)
			return
		}
		if q.notFound {
			if res.StatusCode != http.StatusNotFound {
				fail(q, "status %d, want 404", res.StatusCode)
			}
			return
		}
		if res.StatusCode != http.StatusOK {
			fail(q, "status %d", res.StatusCode)
			return
		}
		got := raw
		if !viaTransport {
			got, err = testtool.TryDecode(res.Header.Get("Content-Encoding"), raw)
			if err != nil {
				fail(q, "decoding %q: %v", res.Header.Get("Content-Encoding"), err)
				return
			}
		}
		if string(got) != string(q.want) {
			fail(q, "wrong body (%s, Content-Encoding %q): %q, want %q", res.Proto, res.Header.Get("Content-Encoding"), prefix(got), prefix(q.want))
		}
	}
	slow := mixedRequest{path: "/slow/slow", want: personal("everyone", mixedSlow)}

	// A stalled reader leads the slow stream and holds it unread for the
	// whole load.
	stalled, err := get(t.Context(), slow, false, "zstd")
	if err != nil {
		t.Fatal(err)
	}
	one := make([]byte, 1)
	_, _ = io.ReadFull(stalled.Body, one)

	// The hostile origin plants its patterns and sends its huge bodies.
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 64 {
			for _, p := range []string{fmt.Sprintf("/plant/%d", i), fmt.Sprintf("/huge/%d", i%8), "/" + strings.Repeat("a", mixedLong)} {
				if i%32 != 0 && strings.HasPrefix(p, "/huge/") {
					continue
				}
				res, err := client.Get(hostile.URL + p)
				if err != nil {
					fail(mixedRequest{path: "hostile " + p[:min(len(p), 20)]}, "GET: %v", err)
					continue
				}
				got, err := io.ReadAll(res.Body)
				res.Body.Close()
				if err != nil || string(got) != string(hostileBody(p)) {
					fail(mixedRequest{path: "hostile " + p[:min(len(p), 20)]}, "wrong body or error %v", err)
				}
			}
		}
	})
	// Slow readers and cancelled requests.
	wg.Go(func() {
		for i := range rounds {
			res, err := get(t.Context(), slow, i%2 == 0, allCodings[i%len(allCodings)])
			if err != nil {
				fail(slow, "GET: %v", err)
				continue
			}
			var raw []byte
			buf := make([]byte, 4<<10)
			for {
				n, err := res.Body.Read(buf)
				raw = append(raw, buf[:n]...)
				if err != nil {
					break
				}
				time.Sleep(time.Millisecond)
			}
			res.Body.Close()
			got := raw
			if i%2 != 0 {
				got, err = testtool.TryDecode(res.Header.Get("Content-Encoding"), raw)
			}
			if err != nil || string(got) != string(slow.want) {
				fail(slow, "slow reader: wrong body (%d bytes) or error %v", len(got), err)
			}
		}
	})
	wg.Go(func() {
		for i := range 4 * rounds {
			q := requests[(i*7)%len(requests)]
			if i%2 == 0 {
				q = slow
			}
			ctx, cancel := context.WithCancel(t.Context())
			res, err := get(ctx, q, true, "")
			if err == nil {
				n := 100 + i*997%(len(q.want)+1)
				got := make([]byte, min(n, len(q.want)))
				k, _ := io.ReadFull(res.Body, got)
				if !q.notFound && string(got[:k]) != string(q.want[:k]) {
					fail(q, "cancelled request read %d wrong bytes", k)
				}
			}
			cancel()
			if err == nil {
				res.Body.Close()
			}
		}
	})
	for g := range goroutines {
		wg.Go(func() {
			for j := range rounds * len(requests) / max(goroutines, 1) {
				q := requests[(g*5+j*3)%len(requests)]
				check(q, (g+j)%3 != 0, allCodings[(g+j)%len(allCodings)])
			}
		})
	}
	wg.Wait()
	if !squeeze.RaceEnabled {
		held = heapInUse()
	}
	stalled.Body.Close()
	// Close all now, and let go of the handlers: the servers themselves
	// stay reachable from startServer's cleanups until the test ends.
	st.CloseIdleConnections()
	hostile.Close()
	srv.Close()
	hostile.Config.Handler, srv.Config.Handler = nil, nil
	_ = c.Close()
	for _, f := range files {
		squeeze.WaitFileServer(f) // a best-level encoding under way holds its encoder
	}
	// The goroutines of the servers and clients end as their connections
	// close; those of a best-level br encoder that was dropped end when its
	// finalizer runs (go-brrr), after a collection.
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > goroutines0 && time.Now().Before(deadline); {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines0 && !squeeze.RaceEnabled {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines left, %d before:\n%s", n, goroutines0, buf[:runtime.Stack(buf, true)])
	}
	t.Logf("%d requests, cache %+v", rounds*len(requests), c.Stats())

	wrong.Range(func(k, v any) bool {
		t.Errorf("%s: %s", k, v)
		return true
	})
	return held
}
