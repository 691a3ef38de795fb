//go:build unix

package squeeze_test

import (
	"context"
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

// chromiumRegistrationCases are caching headers of a response carrying
// Use-As-Dictionary, and whether squeeze judges that a browser registers
// it (squeeze.Registrable); TestChromiumRegistersTheDictionariesSqueezeMarks
// asks Chromium itself.
var chromiumRegistrationCases = []struct {
	name   string
	header func() http.Header
}{
	{name: "max-age", header: func() http.Header { return http.Header{"Cache-Control": {"max-age=3600"}} }},
	{name: "nothing", header: func() http.Header { return http.Header{} }},
	{name: "last-modified", header: func() http.Header {
		return http.Header{"Last-Modified": {time.Now().Add(-24 * time.Hour).UTC().Format(http.TimeFormat)}}
	}},
	{name: "public-last-modified", header: func() http.Header {
		return http.Header{"Cache-Control": {"public"}, "Last-Modified": {time.Now().Add(-24 * time.Hour).UTC().Format(http.TimeFormat)}}
	}},
	{name: "must-revalidate", header: func() http.Header { return http.Header{"Cache-Control": {"max-age=3600, must-revalidate"}} }},
	{name: "must-revalidate-swr", header: func() http.Header {
		return http.Header{"Cache-Control": {"max-age=0, must-revalidate, stale-while-revalidate=3600"}}
	}},
	{name: "must-revalidate-last-modified", header: func() http.Header {
		return http.Header{"Cache-Control": {"must-revalidate"}, "Last-Modified": {time.Now().Add(-24 * time.Hour).UTC().Format(http.TimeFormat)}}
	}},
	{name: "no-cache", header: func() http.Header { return http.Header{"Cache-Control": {"no-cache, max-age=3600"}} }},
	{name: "pragma", header: func() http.Header { return http.Header{"Cache-Control": {"max-age=3600"}, "Pragma": {"no-cache"}} }},
	{name: "swr", header: func() http.Header { return http.Header{"Cache-Control": {"max-age=0, stale-while-revalidate=3600"}} }},
	{name: "s-maxage", header: func() http.Header { return http.Header{"Cache-Control": {"public, s-maxage=3600"}} }},
	{name: "expires", header: func() http.Header {
		return http.Header{"Expires": {time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}}
	}},
	{name: "aged", header: func() http.Header { return http.Header{"Cache-Control": {"max-age=60"}, "Age": {"120"}} }},
}

// TestChromiumRegistersTheDictionariesSqueezeMarks serves, for each case of
// caching headers, a script with Use-As-Dictionary and then loads scripts
// its pattern matches until Chromium announces the dictionary
// (Available-Dictionary) or 30 tries pass: Chromium registers exactly the
// responses squeeze's rule (RFC 9842 section 2.2.1 as Chromium does it)
// marks.
func TestChromiumRegistersTheDictionariesSqueezeMarks(t *testing.T) {
	chromium := testtool.Require(t, "chromium")
	v1, v2 := scriptReleases()
	var mu sync.Mutex
	announced := map[string]bool{} // by case, guarded by mu
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(r.URL.Path, "/") // "", "c", case, file
		switch {
		case r.URL.Path == "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			var names []string
			for _, tc := range chromiumRegistrationCases {
				names = append(names, tc.name)
			}
			fmt.Fprintf(w, registrationPage, strings.Join(names, ","))
		case r.URL.Path == "/seen":
			mu.Lock()
			seen := announced[r.URL.Query().Get("case")]
			mu.Unlock()
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Cache-Control", "no-store")
			fmt.Fprint(w, seen)
		case len(parts) == 4 && parts[1] == "c" && parts[3] == "v1.js":
			for _, tc := range chromiumRegistrationCases {
				if tc.name == parts[2] {
					for k, v := range tc.header() {
						w.Header()[k] = v
					}
				}
			}
			w.Header().Set("Content-Type", "text/javascript")
			w.Header().Set("Use-As-Dictionary", `match="/c/`+parts[2]+`/*"`)
			fmt.Fprint(w, strings.ReplaceAll(v1, "dataset.v1", "dataset.x"))
		case len(parts) == 4 && parts[1] == "c":
			if r.Header.Get("Available-Dictionary") != "" {
				mu.Lock()
				announced[parts[2]] = true
				mu.Unlock()
			}
			w.Header().Set("Content-Type", "text/javascript")
			w.Header().Set("Cache-Control", "no-store")
			fmt.Fprint(w, strings.ReplaceAll(v2, "dataset.v2", "dataset.x"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dom, err := testtool.DumpDOM(ctx, chromium, t.TempDir(), srv.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	body := regexp.MustCompile(`<body[^>]*>`).FindString(dom)
	if !strings.Contains(body, `data-done="true"`) {
		t.Fatalf("the page's script did not finish: %s", body)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, tc := range chromiumRegistrationCases {
		want := squeeze.Registrable(tc.header())
		got := announced[tc.name]
		t.Logf("%s: Chromium registered %v, squeeze marks %v", tc.name, got, want)
		if got != want {
			t.Errorf("%s: Chromium registered it: %v; squeeze marks it: %v", tc.name, got, want)
		}
	}
}

// registrationPage loads, for each case (a comma-separated list for %s),
// /c/<case>/v1.js and then /c/<case>/v2-<n>.js until the server saw
// Available-Dictionary for the case or 30 tries passed.
const registrationPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>registration</title></head>
<body>
<script>
"use strict";
const cases = %q.split(",");
function load(path) {
  return new Promise((resolve, reject) => {
    const s = document.createElement("script");
    s.src = path;
    s.onload = resolve;
    s.onerror = () => reject(new Error("loading " + path));
    document.head.appendChild(s);
  });
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function run(c) {
  await load("/c/" + c + "/v1.js");
  for (let n = 1; n <= 30; n++) {
    await load("/c/" + c + "/v2-" + n + ".js");
    const seen = await (await fetch("/seen?case=" + c, { cache: "no-store" })).text();
    if (seen === "true") return;
    await sleep(100);
  }
}
(async () => {
  try {
    await Promise.all(cases.map(run));
    document.body.dataset.done = "true";
  } catch (err) {
    document.body.dataset.error = String(err);
  }
})();
</script>
</body></html>
`
