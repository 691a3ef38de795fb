//go:build unix

package squeeze_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// TestChromiumGetsAScriptOfAnotherOriginOfTheSiteAsADelta loads a page
// from one loopback port whose scripts come from another: the same site
// (schemeful same-site ignores ports), another origin, as a static or CDN
// subdomain is. The first release, loaded with crossorigin and allowed by
// CORS, becomes a dictionary; the page then loads the next release under
// new paths until one comes as dcz or dcb (Chromium stores a dictionary
// asynchronously), and it runs; a script loaded without crossorigin
// (no-cors) gets no delta.
func TestChromiumGetsAScriptOfAnotherOriginOfTheSiteAsADelta(t *testing.T) {
	chromium := testtool.Require(t, "chromium")
	v1, v2 := scriptReleases()

	var mu sync.Mutex
	records := map[string]assetRecord{}
	var pageOrigin string // guarded by mu: set once the page's server is up
	scripts := squeeze.MustNew(squeeze.WithDictionaryMatch("/app.*.js")).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := v2
		if r.URL.Path == "/app.v1.js" {
			body = v1
		}
		h := w.Header()
		h.Set("Content-Type", "text/javascript")
		h.Set("Cache-Control", "public, max-age=3600") // a dictionary is kept while fresh
		mu.Lock()
		allowed := pageOrigin
		mu.Unlock()
		if o := r.Header.Get("Origin"); o != "" && o == allowed {
			h.Set("Access-Control-Allow-Origin", o)
			h.Add("Vary", "Origin")
		}
		_, _ = w.Write([]byte(body))
	}))
	assets := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &countingResponse{ResponseWriter: w}
		scripts.ServeHTTP(cw, r)
		mu.Lock()
		defer mu.Unlock()
		records[r.URL.Path] = assetRecord{
			Site: r.Header.Get("Sec-Fetch-Site"), Mode: r.Header.Get("Sec-Fetch-Mode"),
			Dictionary: r.Header.Get("Available-Dictionary") != "",
			Encoding:   w.Header().Get("Content-Encoding"), Bytes: cw.n,
		}
	}))
	t.Cleanup(assets.Close)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, crossOriginPage, assets.URL)
		case "/served":
			mu.Lock()
			rec := records[r.URL.Query().Get("path")]
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			_ = json.NewEncoder(w).Encode(rec)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(page.Close)
	mu.Lock()
	pageOrigin = page.URL
	mu.Unlock()

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dom, err := testtool.DumpDOM(ctx, chromium, t.TempDir(), page.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	body := regexp.MustCompile(`<body[^>]*>`).FindString(dom)
	data := func(name string) string {
		m := regexp.MustCompile(`\sdata-` + name + `="([^"]*)"`).FindStringSubmatch(body)
		if m == nil {
			return ""
		}
		return m[1]
	}
	if data("done") != "true" {
		t.Fatalf("the page's script did not finish: %s", body)
	}
	mu.Lock()
	defer mu.Unlock()
	tries, _ := strconv.Atoi(data("tries"))
	delta := records["/app.v2-"+data("tries")+".js"]
	t.Logf("v1 %+v; v2 after %d tries %+v; no-cors %+v", records["/app.v1.js"], tries, delta, records["/app.v2-nocors.js"])
	if delta.Encoding != squeeze.DCZ && delta.Encoding != squeeze.DCB {
		t.Fatalf("the next release never came as a delta in %d tries: last %+v", tries, delta)
	}
	if delta.Site != "same-site" || delta.Mode != "cors" {
		t.Errorf("the delta's request was Sec-Fetch-Site %q, Sec-Fetch-Mode %q; want same-site, cors (the test's pair of origins)", delta.Site, delta.Mode)
	}
	if want := scriptSum(v2); data("v2") != want {
		t.Errorf("the next release ran with checksum %q, want %q", data("v2"), want)
	}
	if v1rec := records["/app.v1.js"]; delta.Bytes*4 > v1rec.Bytes {
		t.Errorf("the delta took %d bytes, the first release %d as %s: want under a quarter", delta.Bytes, v1rec.Bytes, v1rec.Encoding)
	}
	if nc := records["/app.v2-nocors.js"]; nc.Mode != "no-cors" || nc.Encoding == squeeze.DCZ || nc.Encoding == squeeze.DCB {
		t.Errorf("the no-cors script went out as %+v; want a no-cors request and no delta", nc)
	}
}

// assetRecord is what the script server saw of one request and sent.
type assetRecord struct {
	Site, Mode string
	Dictionary bool
	Encoding   string
	Bytes      int
}

// countingResponse counts the body bytes that go through it.
type countingResponse struct {
	http.ResponseWriter
	n int
}

func (c *countingResponse) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n += n
	return n, err
}

// crossOriginPage is the page, with the scripts' origin for %s. It loads
// the first release with crossorigin, then the next under a new path each
// try until the server says it went as a delta, then a script without
// crossorigin.
const crossOriginPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>cross-origin delta</title></head>
<body>
<script>
"use strict";
const assets = %q;
function load(path, cors) {
  return new Promise((resolve, reject) => {
    const s = document.createElement("script");
    if (cors) s.crossOrigin = "anonymous";
    s.src = assets + path;
    s.onload = resolve;
    s.onerror = () => reject(new Error("loading " + path));
    document.head.appendChild(s);
  });
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
(async () => {
  try {
    await load("/app.v1.js", true);
    let tries = 0;
    for (tries = 1; tries <= 40; tries++) {
      const path = "/app.v2-" + tries + ".js";
      await load(path, true);
      const rec = await (await fetch("/served?path=" + encodeURIComponent(path), { cache: "no-store" })).json();
      if (rec.Encoding === "dcz" || rec.Encoding === "dcb") break;
      await sleep(100);
    }
    document.body.dataset.tries = Math.min(tries, 40);
    await load("/app.v2-nocors.js", false);
    document.body.dataset.done = "true";
  } catch (err) {
    document.body.dataset.error = String(err);
  }
})();
</script>
</body></html>
`

// scriptReleases returns two releases of a script of about 20 KB that
// differ in a few words; each, when it runs, writes the checksum of its
// words (scriptSum) to the body's data-v1 or data-v2.
func scriptReleases() (v1, v2 string) {
	words := scriptWords()
	release := func(name string, words []string) string {
		list, _ := json.Marshal(words)
		return "(function () {\n  const words = " + string(list) + ";\n" +
			"  let h = 0;\n  for (const w of words) for (let i = 0; i < w.length; i++) h = (h * 31 + w.charCodeAt(i)) | 0;\n" +
			"  document.body.dataset." + name + " = words.length + \":\" + h;\n})();\n"
	}
	next := append([]string(nil), words...)
	for i := 100; i < len(next); i += 500 {
		next[i] = "changed" + strconv.Itoa(i)
	}
	return release("v1", words), release("v2", next)
}

// scriptWords returns the words of the first release.
func scriptWords() []string {
	rng := rand.New(rand.NewPCG(7, 9))
	syllables := []string{"ka", "lo", "mi", "ne", "su", "ta", "ri", "vo", "xe", "zu", "pa", "qi"}
	words := make([]string, 3000)
	for i := range words {
		var b strings.Builder
		for range 2 + rng.IntN(3) {
			b.WriteString(syllables[rng.IntN(len(syllables))])
		}
		words[i] = b.String()
	}
	return words
}

// scriptSum is the checksum the second release writes when it runs, as
// the page's JavaScript computes it (32-bit wrapping).
func scriptSum(release string) string {
	m := regexp.MustCompile(`const words = (\[.*?\]);`).FindStringSubmatch(release)
	var words []string
	if m == nil || json.Unmarshal([]byte(m[1]), &words) != nil {
		return "unparsable release"
	}
	var h int32
	for _, w := range words {
		for i := 0; i < len(w); i++ {
			h = h*31 + int32(w[i])
		}
	}
	return strconv.Itoa(len(words)) + ":" + strconv.Itoa(int(h))
}
