//go:build unix

package squeeze_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// learnedRecord is how squeeze sent one response, as the server saw it.
type learnedRecord struct {
	Encoding  string `json:"encoding"`
	Available bool   `json:"available"`
	Bytes     int    `json:"bytes"`
}

// recordingWriter notes the Content-Encoding and the bytes of a response
// squeeze sends.
type recordingWriter struct {
	http.ResponseWriter
	encoding string
	bytes    int
	wrote    bool
}

func (w *recordingWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote, w.encoding = true, w.Header().Get("Content-Encoding")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.wrote, w.encoding = true, w.Header().Get("Content-Encoding")
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += n
	return n, err
}

// learnedPageScript is the script of the test page: it fetches search
// pages until one comes as a delta (Chromium stores the dictionary it
// fetched for the Link asynchronously), checking every body's SHA-256,
// then loads three pages in frames and reads what they render.
const learnedPageScript = `
const expect = EXPECT;
async function sha(buf) {
  const d = await crypto.subtle.digest("SHA-256", buf);
  return Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, "0")).join("");
}
async function served(path) {
  return await (await fetch("/records?path=" + encodeURIComponent(path), { cache: "no-store" })).json();
}
(async () => {
  const out = document.getElementById("out");
  let bad = 0, first = "";
  try {
    for (let i = 0; i < 60 && !first; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100));
      const path = "/search/" + (100 + i);
      const body = await (await fetch(path, { cache: "no-store" })).arrayBuffer();
      if ((await sha(body)) !== expect[path]) bad++;
      const rec = await served(path);
      if (rec.encoding === "dcz" || rec.encoding === "dcb") first = path;
    }
    out.dataset.first = first;
    for (const n of [500, 501, 502]) {
      const path = "/search/" + n;
      const f = document.createElement("iframe");
      const loaded = new Promise((r) => (f.onload = r));
      f.src = path;
      document.body.appendChild(f);
      await loaded;
      const doc = f.contentDocument;
      const rec = await served(path);
      const p = document.createElement("p");
      p.id = "page-" + n;
      p.dataset.encoding = rec.encoding;
      p.dataset.title = doc.title;
      p.dataset.results = doc.querySelectorAll("ol.results li").length;
      p.dataset.footer = doc.querySelector("footer") ? doc.querySelector("footer").textContent.slice(0, 19) : "";
      out.appendChild(p);
    }
    out.dataset.bad = bad;
  } catch (err) {
    out.dataset.error = String(err);
  }
  document.body.dataset.done = "true";
})();
`

// TestChromiumGetsLearnedRoutePagesAsDeltas trains a dictionary on a
// search route, then loads a page of the route in headless Chromium: the
// page links the learned dictionary, Chromium fetches it, and the search
// pages it fetches next, and those it renders in frames, come as dcz or
// dcb and decode to the pages' bytes.
func TestChromiumGetsLearnedRoutePagesAsDeltas(t *testing.T) {
	chromium := testtool.Require(t, "chromium")
	m := newMiddleware(t, squeeze.WithLearnedDictionary("/search/*", squeeze.LearnedSamples(8), squeeze.LearnedInterval(time.Hour)))
	expect := map[string]string{}
	for _, n := range []int{500, 501, 502} {
		sum := sha256.Sum256(searchPage("shop", n))
		expect[fmt.Sprintf("/search/%d", n)] = hex.EncodeToString(sum[:])
	}
	for i := 100; i < 160; i++ {
		sum := sha256.Sum256(searchPage("shop", i))
		expect[fmt.Sprintf("/search/%d", i)] = hex.EncodeToString(sum[:])
	}
	expectJSON, _ := json.Marshal(expect)
	var mu sync.Mutex
	records := map[string]learnedRecord{}
	dictFetched := false
	mux := http.NewServeMux()
	mux.HandleFunc("/search/", searchHandler("shop"))
	mux.HandleFunc("/search/start", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprintf(w, `<!doctype html><html><head><title>start</title></head><body><div id="out"></div><script>%s</script></body></html>`,
			strings.Replace(learnedPageScript, "EXPECT", string(expectJSON), 1))
	})
	inner := m.Handler(mux)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/records" {
			mu.Lock()
			rec := records[r.URL.Query().Get("path")]
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(rec)
			return
		}
		rw := &recordingWriter{ResponseWriter: w}
		inner.ServeHTTP(rw, r)
		mu.Lock()
		records[r.URL.Path] = learnedRecord{rw.encoding, r.Header.Get("Available-Dictionary") != "", rw.bytes}
		if strings.HasPrefix(r.URL.Path, squeeze.DefaultLearnedPath) {
			dictFetched = true
		}
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	trainSearch(t, m, inner, 0, 8)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dom, err := testtool.DumpDOM(ctx, chromium, t.TempDir(), srv.URL+"/search/start")
	if err != nil {
		t.Fatal(err)
	}
	tagOf := func(id string) string {
		return regexp.MustCompile(`<[a-z]+ id="` + id + `"[^>]*>`).FindString(dom)
	}
	attrOf := func(tag, name string) string {
		m := regexp.MustCompile(`\s` + name + `="([^"]*)"`).FindStringSubmatch(tag)
		if m == nil {
			return ""
		}
		return m[1]
	}
	if !strings.Contains(dom, `data-done="true"`) {
		t.Fatalf("the page's script did not finish:\n%s", dom)
	}
	out := tagOf("out")
	mu.Lock()
	defer mu.Unlock()
	t.Logf("out: %s; the dictionary fetched: %v", out, dictFetched)
	if !dictFetched {
		t.Fatal("Chromium never fetched the learned dictionary the page linked")
	}
	if e := attrOf(out, "data-error"); e != "" {
		t.Fatalf("the page's script failed: %s", e)
	}
	if attrOf(out, "data-first") == "" {
		t.Fatalf("no search page came as a delta in 60 tries")
	}
	if bad := attrOf(out, "data-bad"); bad != "0" {
		t.Errorf("%s fetched bodies did not hash to their page", bad)
	}
	for _, n := range []int{500, 501, 502} {
		p := tagOf(fmt.Sprintf("page-%d", n))
		rec := records[fmt.Sprintf("/search/%d", n)]
		t.Logf("page %d: %s, server: %+v", n, p, rec)
		if rec.Encoding != squeeze.DCZ && rec.Encoding != squeeze.DCB {
			t.Errorf("page %d rendered in a frame went out as %q, want dcz or dcb", n, rec.Encoding)
		}
		if attrOf(p, "data-title") != fmt.Sprintf("shop search: query %d", n) || attrOf(p, "data-results") != "10" ||
			attrOf(p, "data-footer") != "All rights reserved" {
			t.Errorf("page %d did not render right: %s", n, p)
		}
	}
}
