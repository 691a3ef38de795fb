//go:build unix

package fleet_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
	"github.com/squeezehttp/squeeze/redisstore"
)

// A bundles replica serves the directory in envFiles (an image's files)
// with squeeze's FileServer, appending a line per response to envLog.
const (
	envFiles      = "SQUEEZE_FLEET_REPLICA_FILES"
	envLog        = "SQUEEZE_FLEET_REPLICA_LOG"
	bundlePattern = "/static/app.*.js"
	// replicaStoreTimeout is the bundles replicas' SharedTimeout.
	replicaStoreTimeout = time.Second
)

// served is a bundles replica's record of one response.
type served struct {
	Replica             string  `json:"replica"` // image/index
	Path                string  `json:"path"`
	Status              int     `json:"status"`
	AvailableDictionary string  `json:"available_dictionary"`
	ContentEncoding     string  `json:"content_encoding"`
	Bytes               int     `json:"bytes"`
	Millis              float64 `json:"ms"` // from the request to the handler's return
}

// countingWriter counts the bytes a handler writes and keeps its status.
type countingWriter struct {
	http.ResponseWriter
	status, n int
}

func (w *countingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.n += n
	return n, err
}

// serveBundles serves an image's files, content-hashed bundles under
// bundlePattern as dictionaries for one another, with squeeze's FileServer
// on addr until killed, sharing through the Redis at redisAddr if it is not
// empty.
func serveBundles(addr, redisAddr, name string) error {
	dir := os.Getenv(envFiles)
	name = filepath.Base(dir) + "/" + name
	opts := []squeeze.Option{squeeze.WithDictionaryMatch(bundlePattern)}
	if redisAddr != "" {
		client := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
		defer client.Close()
		opts = append(opts, squeeze.WithSharedStore(redisstore.MustNew(client), squeeze.SharedTimeout(replicaStoreTimeout)))
	}
	m, err := squeeze.New(opts...)
	if err != nil {
		return err
	}
	log, err := os.OpenFile(os.Getenv(envLog), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	var logMu sync.Mutex
	files := m.FileServer(os.DirFS(dir))
	return http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		w.Header().Set("X-Replica", name)
		if r.Header.Get("Available-Dictionary") != "" {
			// For the page: the browser named a dictionary.
			w.Header().Set("X-Had-Dictionary", "1")
		}
		if strings.HasPrefix(r.URL.Path, "/static/") {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		cw := &countingWriter{ResponseWriter: w}
		files.ServeHTTP(cw, r)
		line, err := json.Marshal(served{
			Replica: name, Path: r.URL.Path, Status: cw.status,
			AvailableDictionary: r.Header.Get("Available-Dictionary"),
			ContentEncoding:     w.Header().Get("Content-Encoding"),
			Bytes:               cw.n,
			Millis:              float64(time.Since(start).Microseconds()) / 1000,
		})
		if err == nil {
			logMu.Lock()
			_, _ = log.Write(append(line, '\n'))
			logMu.Unlock()
		}
	}))
}

// deployPage is an image's index.html: it references the image's bundle.
// The page of the first image drives the browser through the deploy; the
// second image's page is only read, for the name of its bundle.
const deployPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>deploy</title><link rel="icon" href="data:,"></head>
<body data-state="pending">
<script src="/static/%s"></script>
<script>
"use strict";
const out = document.body.dataset;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function sha256Hex(buffer) {
  const digest = await crypto.subtle.digest("SHA-256", buffer);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}
(async () => {
  try {
    out.before = _.VERSION;
    // The browser stores a dictionary asynchronously: ask for the bundle
    // again until the request names it in Available-Dictionary.
    const v1 = document.querySelector("script[src]").getAttribute("src");
    for (let i = 1; ; i++) {
      const res = await fetch(v1, { cache: "no-store" });
      await res.arrayBuffer();
      if (res.headers.get("X-Had-Dictionary") === "1") break;
      if (i === 100) throw new Error("the browser never named " + v1 + " as a dictionary");
      await sleep(100);
    }
    out.deployed = await (await fetch("%s/deploy", { cache: "no-store" })).text();
    // The page as the new image has it, for its bundle.
    const page = await (await fetch("/", { cache: "no-store" })).text();
    const v2 = page.match(/<script src="(\/static\/app\.[0-9a-f]+\.js)">/)[1];
    out.v2 = v2;
    await new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = v2;
      s.onload = resolve;
      s.onerror = () => reject(new Error(v2 + " did not load"));
      document.head.appendChild(s);
    });
    out.after = _.VERSION;
    const body = await (await fetch(v2)).arrayBuffer();
    out.bytes = body.byteLength;
    out.sha256 = await sha256Hex(body);
    out.state = "done";
  } catch (err) {
    out.state = "error";
    out.error = String(err);
  }
})();
</script>
</body></html>
`

// image writes the files of a release into a new directory named name: the
// page and the script, under a name carrying its hash, and returns the
// directory and the script's URL path.
func image(t *testing.T, root, name, control string, script []byte) (dir, path string) {
	t.Helper()
	sum := sha256.Sum256(script)
	file := "app." + hex.EncodeToString(sum[:4]) + ".js"
	dir = filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Join(dir, "static"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "static", file), script, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.html"), fmt.Appendf(nil, deployPage, file, control), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, "/static/" + file
}

// readServed returns the records of every bundles replica in the log.
func readServed(t *testing.T, log string) []served {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var all []served
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var s served
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		all = append(all, s)
	}
	return all
}

// bodyData returns the data- attributes of the body's start tag in dom.
func bodyData(t *testing.T, dom string) map[string]string {
	t.Helper()
	tag := regexp.MustCompile(`<body[^>]*>`).FindString(dom)
	data := map[string]string{}
	for _, m := range regexp.MustCompile(`\sdata-([a-z0-9-]+)="([^"]*)"`).FindAllStringSubmatch(tag, -1) {
		data[m[1]] = html.UnescapeString(m[2])
	}
	if data["state"] != "done" {
		t.Fatalf("the page did not finish: %s\nDOM:\n%s", tag, dom)
	}
	return data
}

// A deploy of content-hashed bundles: headless Chromium loads the page of
// the first image, whose script (Underscore.js 1.13.6) squeeze marks as a
// dictionary, until it names it in Available-Dictionary. Then every replica
// is replaced by a fresh process whose files hold only the next release
// (1.13.7, under another name), and the page loads it. With the store, a
// replica that never saw 1.13.6 sends 1.13.7 as a delta against it;
// without it, or with the store stopped, the same request gets plain br or
// zstd. Every body is checked in the browser.
func TestChromiumGetsTheNewBundleAsADeltaAfterADeploy(t *testing.T) {
	chromium := testtool.Require(t, "chromium")
	testtool.Require(t, "haproxy")
	srv := testtool.StartRedis(t)
	v1, err := os.ReadFile("../static/lib/underscore-1.13.6.min.js")
	if err != nil {
		t.Fatal(err)
	}
	v2, err := os.ReadFile("../static/lib/underscore-1.13.7.min.js")
	if err != nil {
		t.Fatal(err)
	}
	v1Sum, v2Sum := sha256.Sum256(v1), sha256.Sum256(v2)
	for _, tc := range []struct {
		name        string
		store       bool
		stopped     bool // the store stops before the deploy
		wantDelta   bool
		description string
	}{
		{"shared store", true, false, true, "with the store"},
		{"no store", false, false, false, "without a store"},
		{"store stopped at the deploy", true, true, false, "with the store stopped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redisAddr := ""
			if tc.store {
				redisAddr = srv.Addr()
			}
			raw := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			defer raw.Close()
			if err := raw.FlushAll(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}

			// The deploy runs on the test's goroutine when the page asks
			// for it, from a server of its own (the fleet is what it
			// replaces).
			deploys := make(chan chan string)
			control := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				done := make(chan string, 1)
				select {
				case deploys <- done:
				case <-r.Context().Done():
					return
				}
				w.Header().Set("Access-Control-Allow-Origin", "*")
				_, _ = w.Write([]byte(<-done))
			}))
			defer control.Close()

			root, log := t.TempDir(), filepath.Join(t.TempDir(), "served.jsonl")
			dir1, path1 := image(t, root, "v1", control.URL, v1)
			dir2, path2 := image(t, root, "v2", control.URL, v2)
			addrs := freeAddrs(t, 3)
			env := func(dir string) []string {
				return []string{envRedis + "=" + redisAddr, envFiles + "=" + dir, envLog + "=" + log}
			}
			killV1 := startReplicas(t, env(dir1), addrs)
			front := startHAProxy(t, "roundrobin", addrs)

			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Second)
			defer cancel()
			type result struct {
				dom string
				err error
			}
			results := make(chan result, 1)
			profile := t.TempDir()
			go func() {
				dom, err := testtool.DumpDOM(ctx, chromium, profile, front+"/")
				results <- result{dom, err}
			}()
			var res result
			var deployTook time.Duration
		browser:
			for {
				select {
				case done := <-deploys:
					start := time.Now()
					if tc.store {
						// v1's replicas write its dictionary in the
						// background; a bundle in production has been
						// live long enough.
						for deadline := time.Now().Add(10 * time.Second); ; {
							if n, _ := raw.DBSize(ctx).Result(); n > 0 {
								break
							}
							if time.Now().After(deadline) {
								t.Fatal("the store holds nothing after v1 was served")
							}
							time.Sleep(10 * time.Millisecond)
						}
					}
					if tc.stopped {
						srv.Stop()
					}
					killV1()
					startReplicas(t, env(dir2), addrs)
					deployTook = time.Since(start)
					done <- "v2"
				case res = <-results:
					break browser
				}
			}
			if res.err != nil {
				t.Fatal(res.err)
			}
			data := bodyData(t, res.dom)
			t.Logf("page: %v; deploy took %v", data, deployTook)
			if data["before"] != "1.13.6" || data["after"] != "1.13.7" || data["v2"] != path2 {
				t.Errorf("the page ran Underscore.js %s, then %s from %s; want 1.13.6, then 1.13.7 from %s", data["before"], data["after"], data["v2"], path2)
			}
			if data["bytes"] != fmt.Sprint(len(v2)) || data["sha256"] != hex.EncodeToString(v2Sum[:]) {
				t.Errorf("the browser decoded %s bytes with sha256 %s; want v2's %d bytes, %x", data["bytes"], data["sha256"], len(v2), v2Sum)
			}

			all := readServed(t, log)
			v1Available := ":" + base64.StdEncoding.EncodeToString(v1Sum[:]) + ":"
			var gotV2 []served
			for _, s := range all {
				fresh := strings.HasPrefix(s.Replica, "v2/")
				if fresh && s.Path == path1 {
					t.Errorf("a fresh replica was asked for v1: %+v", s)
				}
				if s.Path != path2 {
					continue
				}
				if !fresh {
					t.Errorf("v2 from a replica of the first image: %+v", s)
				}
				gotV2 = append(gotV2, s)
			}
			if len(gotV2) == 0 {
				t.Fatalf("no replica served %s; records: %+v", path2, all)
			}
			// The first request for v2 is the one that counts: a later
			// fetch of it may come from the browser's cache.
			first := gotV2[0]
			t.Logf("%s: v2 (%d bytes) went out as %q, %d bytes, from replica %s in %.1f ms (%d request(s) for it)",
				tc.description, len(v2), first.ContentEncoding, first.Bytes, first.Replica, first.Millis, len(gotV2))
			for _, s := range gotV2 {
				if s.Status != http.StatusOK || s.AvailableDictionary != v1Available {
					t.Errorf("v2: status %d, Available-Dictionary %q; want 200 naming v1 (%s)", s.Status, s.AvailableDictionary, v1Available)
				}
				delta := s.ContentEncoding == squeeze.DCZ || s.ContentEncoding == squeeze.DCB
				switch {
				case tc.wantDelta && !delta:
					t.Errorf("%s, v2 went out as %q from %s; want dcz or dcb", tc.description, s.ContentEncoding, s.Replica)
				case !tc.wantDelta && !slices.Contains([]string{"br", "zstd"}, s.ContentEncoding):
					t.Errorf("%s, v2 went out as %q from %s; want br or zstd", tc.description, s.ContentEncoding, s.Replica)
				}
				if tc.wantDelta && s.Bytes >= 1000 {
					t.Errorf("v2 as a delta took %d bytes; want under 1000", s.Bytes)
				}
				// A stopped store costs a request at most the timeout.
				if s.Millis > float64(replicaStoreTimeout.Milliseconds()) {
					t.Errorf("%s, v2 took %.1f ms in the replica; want within the store's %v timeout", tc.description, s.Millis, replicaStoreTimeout)
				}
			}
		})
	}
}
