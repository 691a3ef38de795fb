package squeezecaddy_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	_ "github.com/caddyserver/caddy/v2/modules/standard" // file_server, header, encode

	"github.com/squeezehttp/squeeze/internal/corpus"
)

// BenchmarkFileServerAgainstEncode is bench/caddy.sh in one process, with
// the CPU each response costs on its own thread: Caddy's file_server
// behind encode (encode zstd gzip) and behind squeeze as bench/caddy.sh
// configures it (squeeze: a dictionary pattern per bundle; cache: with
// cache 64MiB; trusted: with trusted_etags too) serve the newer release of
// each bundle, in turn, one response each, to a request without a
// dictionary (full) and to one naming the older release (delta). Each side
// reports its mean thread CPU per response (µs), and x-squeeze, x-cache and
// x-trusted are encode's over theirs: above 1, squeeze spends less.
//
// SQUEEZE_CADDY_ONLY, a comma-separated list of the sites, runs only
// those, to profile one alone; "bare" is squeeze without a dictionary
// pattern, what the dictionaries cost.
//
// The bundles are the release pairs of internal/corpus (react-dom and
// lodash), or, with SQUEEZE_CADDY_SITE set, the name-version.js pairs in
// that directory (bench/caddy.sh's: js-cookie, axios and Vue).
//
// Thread CPU leaves out the time the thread waited for a core, which on a
// shared machine swamps a response's own, and also what other goroutines
// spend for the response: the cache's re-encoding at the best level runs
// in the background and is not counted (it runs once per entry).
func BenchmarkFileServerAgainstEncode(b *testing.B) {
	dir, pairs := benchSite(b)
	var patterns []string
	for _, p := range pairs {
		patterns = append(patterns, "/lib/"+p.name+"-*.js")
	}
	servers := []string{"encode", "squeeze", "cache", "trusted"}
	if only := os.Getenv("SQUEEZE_CADDY_ONLY"); only != "" {
		servers = strings.Split(only, ",") // to profile one side alone
	}
	dict := "dictionary " + strings.Join(patterns, " ")
	handlers := map[string]string{
		"encode":  "encode zstd gzip",
		"bare":    "squeeze", // no dictionaries: what their capture costs
		"squeeze": "squeeze {\n\t\t" + dict + "\n\t}",
		"cache":   "squeeze {\n\t\t" + dict + "\n\t\tcache 64MiB\n\t}",
		"trusted": "squeeze {\n\t\t" + dict + "\n\t\tcache 64MiB\n\t\ttrusted_etags\n\t}",
	}
	port := freePort(b)
	caddyfile := "{\n\tadmin off\n\tauto_https off\n\tpersist_config off\n}\n"
	for _, s := range slices.Sorted(maps.Keys(handlers)) {
		caddyfile += fmt.Sprintf("http://%s.test:%d {\n\troot * %s\n\theader Cache-Control \"max-age=3600\"\n\t%s\n\tfile_server\n}\n", s, port, dir, handlers[s])
	}
	cfg, err := adapt(b, caddyfile)
	if err != nil {
		b.Fatal(err)
	}
	if err := caddy.Load(cfg, true); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := caddy.Stop(); err != nil {
			b.Error(err)
		}
	})
	app, err := caddy.ActiveContext().App("http")
	if err != nil {
		b.Fatal(err)
	}
	if n := len(app.(*caddyhttp.App).Servers); n != 1 {
		b.Fatalf("the Caddyfile made %d servers, want the one that serves every site", n)
	}
	var srv *caddyhttp.Server
	for _, srv = range app.(*caddyhttp.App).Servers {
	}
	w := &benchWriter{h: http.Header{}}
	serve := func(server, path string, header http.Header) {
		clear(w.h)
		w.n, w.status = 0, 0
		r, err := http.NewRequestWithContext(context.Background(), http.MethodGet, fmt.Sprintf("http://%s.test:%d%s", server, port, path), nil)
		if err != nil {
			b.Fatal(err)
		}
		r.RemoteAddr, r.RequestURI = "127.0.0.1:40000", path // as net/http's server sets them
		for k, v := range header {
			r.Header[k] = v
		}
		srv.ServeHTTP(w, r)
	}
	full := http.Header{"Accept-Encoding": {"gzip, deflate, br, zstd"}}
	for _, p := range pairs {
		for _, s := range servers { // the older release, remembered
			serve(s, "/lib/"+p.old, full)
		}
	}
	for _, p := range pairs {
		sum := sha256.Sum256(p.oldBody)
		delta := http.Header{
			"Accept-Encoding":      {"gzip, deflate, br, zstd, dcb, dcz"},
			"Available-Dictionary": {":" + base64.StdEncoding.EncodeToString(sum[:]) + ":"},
			"Sec-Fetch-Site":       {"same-origin"},
		}
		for _, mode := range []struct {
			name   string
			header http.Header
			want   string // squeeze's Content-Encoding
		}{{"full", full, "zstd"}, {"delta", delta, "dcz"}} {
			b.Run(p.name+"/"+mode.name, func(b *testing.B) {
				path := "/lib/" + p.new
				for _, s := range servers {
					for range 3 { // the cache's fill and its hits
						serve(s, path, mode.header)
					}
					want := mode.want
					if s == "encode" || s == "bare" {
						want = "zstd"
					}
					if got := w.h.Get("Content-Encoding"); w.status != http.StatusOK || got != want {
						b.Fatalf("%s: status %d, Content-Encoding %q: want 200 and %q", s, w.status, got, want)
					}
				}
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				spent := make([]time.Duration, len(servers))
				n := 0
				for i := 0; b.Loop(); i++ {
					for k := range servers {
						j := (i + k) % len(servers)
						c0 := threadCPU(b)
						serve(servers[j], path, mode.header)
						spent[j] += threadCPU(b) - c0
					}
					n++
				}
				for j, s := range servers {
					b.ReportMetric(float64(spent[j].Microseconds())/float64(n), s+"-µs/op")
					if j > 0 && servers[0] == "encode" {
						b.ReportMetric(float64(spent[0])/float64(spent[j]), "x-"+s)
					}
				}
			})
		}
	}
}

// freePort returns a loopback port no one listens on.
func freePort(b *testing.B) int {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// benchPair is a bundle in two releases, served from the site's /lib/.
type benchPair struct {
	name, old, new string
	oldBody        []byte
}

// benchSite returns the site's root and its release pairs: those of
// SQUEEZE_CADDY_SITE (name-version.js files, two versions of each name),
// or internal/corpus's written to a temporary directory.
func benchSite(b *testing.B) (string, []benchPair) {
	b.Helper()
	root := b.TempDir()
	lib := filepath.Join(root, "lib")
	if err := os.Mkdir(lib, 0o755); err != nil {
		b.Fatal(err)
	}
	if src := os.Getenv("SQUEEZE_CADDY_SITE"); src != "" {
		names, err := filepath.Glob(filepath.Join(src, "*.js"))
		if err != nil {
			b.Fatal(err)
		}
		versions := map[string][]string{}
		re := regexp.MustCompile(`^(.+)-(\d[^-]*)\.js$`)
		for _, n := range names {
			m := re.FindStringSubmatch(filepath.Base(n))
			if m == nil {
				continue
			}
			body, err := os.ReadFile(n)
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(lib, m[0]), body, 0o644); err != nil {
				b.Fatal(err)
			}
			versions[m[1]] = append(versions[m[1]], m[0])
		}
		var pairs []benchPair
		for name, vs := range versions {
			if len(vs) != 2 {
				b.Fatalf("SQUEEZE_CADDY_SITE: %s has %d versions, want 2", name, len(vs))
			}
			slices.Sort(vs) // the older first, for the versions bench/caddy.sh fetches
			old, err := os.ReadFile(filepath.Join(lib, vs[0]))
			if err != nil {
				b.Fatal(err)
			}
			pairs = append(pairs, benchPair{name, vs[0], vs[1], old})
		}
		if len(pairs) == 0 {
			b.Fatalf("SQUEEZE_CADDY_SITE: no name-version.js pairs in %s", src)
		}
		slices.SortFunc(pairs, func(x, y benchPair) int { return len(x.oldBody) - len(y.oldBody) })
		return root, pairs
	}
	var pairs []benchPair
	for _, r := range corpus.Releases(b) {
		p := benchPair{r.Name, r.Name + "-1.js", r.Name + "-2.js", r.Old}
		for name, body := range map[string][]byte{p.old: r.Old, p.new: r.New} {
			if err := os.WriteFile(filepath.Join(lib, name), body, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		pairs = append(pairs, p)
	}
	return root, pairs
}

// benchWriter is a connection's response writer that keeps nothing of the
// body.
type benchWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *benchWriter) Header() http.Header { return w.h }
func (w *benchWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *benchWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(p)
	return len(p), nil
}

func (w *benchWriter) Flush() {}
