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

// secretPageScript fetches every secret page in every coding, reads each
// as text, as a page's script would, and reports the SHA-256 of what it
// read.
const secretPageScript = `
const paths = PATHS;
async function sha(text) {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, "0")).join("");
}
(async () => {
  const out = document.getElementById("out");
  try {
    for (const path of paths) {
      const text = await (await fetch(path, { cache: "no-store" })).text();
      const p = document.createElement("p");
      p.className = "page";
      p.dataset.path = path;
      p.dataset.sha = await sha(text);
      out.appendChild(p);
    }
  } catch (err) {
    out.dataset.error = String(err);
  }
  document.body.dataset.done = "true";
})();
`

// TestChromiumDecodesSecretResponses loads a page in headless Chromium
// that fetches every secret page (a token written by WriteSecret or marked
// with TemplateSecret, in a whole body, a stream, across a flush) from
// servers offering zstd, gzip and deflate in turn: each response went out
// in that coding, with the token in a context of its own (zstd frames,
// deflate segments in one gzip member), and Chromium reads it byte for
// byte.
func TestChromiumDecodesSecretResponses(t *testing.T) {
	chromium := testtool.Require(t, "chromium")
	pages := secretPages(t)
	codings := []string{squeeze.Zstd, squeeze.Gzip, squeeze.Deflate}
	var mu sync.Mutex
	sent := map[string]string{} // path: Content-Encoding
	want := map[string]string{} // path: SHA-256 of the plain body
	var paths []string
	mux := http.NewServeMux()
	for _, coding := range codings {
		m := newMiddleware(t, squeeze.WithEncodings(coding))
		for _, p := range pages {
			plain, err := p.serve(httptest.NewRecorder(), secretToken)
			if err != nil {
				t.Fatal(err)
			}
			path := "/" + coding + "/" + p.name
			sum := sha256.Sum256([]byte(plain))
			want[path] = hex.EncodeToString(sum[:])
			paths = append(paths, path)
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, err := p.serve(w, secretToken); err != nil {
					t.Errorf("%s: %v", path, err)
				}
			}))
			mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
				rw := &recordingWriter{ResponseWriter: w}
				h.ServeHTTP(rw, r)
				mu.Lock()
				sent[path] = rw.encoding
				mu.Unlock()
			})
		}
	}
	pathsJSON, _ := json.Marshal(paths)
	mux.HandleFunc("/start", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><title>start</title></head><body><div id="out"></div><script>%s</script></body></html>`,
			strings.Replace(secretPageScript, "PATHS", string(pathsJSON), 1))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dom, err := testtool.DumpDOM(ctx, chromium, t.TempDir(), srv.URL+"/start")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dom, `data-done="true"`) {
		t.Fatalf("the page's script did not finish:\n%s", dom)
	}
	if m := regexp.MustCompile(`data-error="([^"]*)"`).FindStringSubmatch(dom); m != nil {
		t.Fatalf("the page's script failed: %s", m[1])
	}
	got := map[string]string{}
	for _, m := range regexp.MustCompile(`<p class="page" data-path="([^"]*)" data-sha="([^"]*)"`).FindAllStringSubmatch(dom, -1) {
		got[m[1]] = m[2]
	}
	mu.Lock()
	defer mu.Unlock()
	for _, path := range paths {
		coding := strings.Split(path, "/")[1]
		if sent[path] != coding {
			t.Errorf("%s went out as %q, want %s", path, sent[path], coding)
		}
		if got[path] != want[path] {
			t.Errorf("%s: Chromium read a body hashing to %q, want %s", path, got[path], want[path])
		}
	}
	t.Logf("Chromium read %d secret responses byte for byte", len(got))
}
