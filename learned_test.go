package squeeze_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/cdt"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// searchWords are the words the generated search pages are made of.
var searchWords = strings.Fields(`compression dictionary transport brotli zstandard
window match pattern header response request server client browser cache origin
fleet replica store budget sample training delta encoder decoder stream frame`)

// searchPage returns a generated search result page for query i of a
// site whose template is named by site: the same head, style, navigation
// and footer every time, and results that differ.
func searchPage(site string, i int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!doctype html><html lang=en><head><meta charset=utf-8><title>%s search: query %d</title>\n", site, i)
	b.WriteString("<style>\n")
	for k := range 60 {
		fmt.Fprintf(&b, ".%s-c%d{margin:%dpx %dpx;padding:%dpx;color:#%06x;font:%dpx/1.4 system-ui,sans-serif}\n", site, k, k%7, k%5, k%3, uint64(k)*2654435761%0xffffff, 12+k%6)
	}
	b.WriteString("</style></head><body>\n<nav>")
	for k := range 12 {
		fmt.Fprintf(&b, `<a class="%s-c%d" href="/%s/section/%d">Section %d of the %s site</a>`, site, k, site, k, k, site)
	}
	b.WriteString("</nav>\n<main><ol class=results>\n")
	x := uint32(i*7919 + 17)
	for r := range 10 {
		x = x*1664525 + 1013904223
		w1, w2, w3 := searchWords[x%uint32(len(searchWords))], searchWords[(x>>8)%uint32(len(searchWords))], searchWords[(x>>16)%uint32(len(searchWords))]
		fmt.Fprintf(&b, `<li class="%s-c%d"><a href="/doc/%d/%s-%s">%s %s and %s, result %d</a><p>A page about %s and %s, with %s in its title, ranked %d for query %d.</p></li>`+"\n",
			site, r, x%100000, w1, w2, w1, w2, w3, r, w2, w3, w1, r+1, i)
	}
	fmt.Fprintf(&b, "</ol></main>\n<footer class=%s-c1>All rights reserved by the %s site. <a href=/%s/about>About</a> <a href=/%s/privacy>Privacy</a></footer></body></html>\n", site, site, site, site)
	return b.Bytes()
}

// searchHandler serves searchPage for the number at the end of the path,
// as text/html, public for a minute.
func searchHandler(site string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var i int
		fmt.Sscanf(r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:], "%d", &i)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "public, max-age=60")
		_, _ = w.Write(searchPage(site, i))
	}
}

var linkRE = regexp.MustCompile(`<([^>]+)>; rel="compression-dictionary"`)

// learnedLink returns the URL of the learned dictionary a response links,
// or "".
func learnedLink(h http.Header) string {
	for _, v := range h.Values("Link") {
		if m := linkRE.FindStringSubmatch(v); m != nil && strings.Contains(m[1], "/_squeeze/") {
			return m[1]
		}
	}
	return ""
}

// trainSearch serves n search pages through h and waits for m's rounds.
func trainSearch(t *testing.T, m *squeeze.Middleware, h http.Handler, first, n int, hdr ...string) {
	t.Helper()
	for i := first; i < first+n; i++ {
		if rec := serveAt(h, fmt.Sprintf("/search/%d", i), "br", hdr...); rec.Code != http.StatusOK {
			t.Fatalf("GET /search/%d: %d", i, rec.Code)
		}
	}
	squeeze.WaitLearned(m)
}

func TestLearnedDictionaryMakesLaterPagesDeltas(t *testing.T) {
	var counters squeeze.Counters
	m := newMiddleware(t, squeeze.WithObserver(counters.Observer()),
		squeeze.WithLearnedDictionary("/search/*", squeeze.LearnedSamples(8), squeeze.LearnedInterval(0)))
	h := m.Handler(searchHandler("shop"))
	if rec := serveAt(h, "/search/0", "br"); learnedLink(rec.Header()) != "" {
		t.Fatalf("a page links a dictionary before any was trained: %q", rec.Header()["Link"])
	}
	trainSearch(t, m, h, 0, 8)
	forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
		res, _ := fetch(t, c, srv.URL+"/search/100", "br")
		url := learnedLink(res.Header)
		if url == "" {
			t.Fatalf("no Link to a learned dictionary after training: %q", res.Header["Link"])
		}
		dres, dict := fetch(t, c, srv.URL+url, "")
		if dres.StatusCode != http.StatusOK || len(dict) == 0 || len(dict) > squeeze.DefaultLearnedDictionarySize {
			t.Fatalf("GET %s: %d, %d bytes", url, dres.StatusCode, len(dict))
		}
		ua, ok := cdt.ParseUseAsDictionary(dres.Header.Get("Use-As-Dictionary"))
		if !ok || ua.Match != "/search/*" || ua.ID == "" {
			t.Errorf("the dictionary's Use-As-Dictionary is %q, want match \"/search/*\" and an id", dres.Header.Get("Use-As-Dictionary"))
		}
		if cc := dres.Header.Get("Cache-Control"); !strings.Contains(cc, "max-age=") {
			t.Errorf("the dictionary's Cache-Control %q gives it no freshness: a browser would not store it", cc)
		}
		for i, coding := range []string{squeeze.DCZ, squeeze.DCB} {
			path := fmt.Sprintf("/search/%d", 200+i)
			want := searchPage("shop", 200+i)
			res, raw := fetch(t, c, srv.URL+path, coding+", br", "Available-Dictionary", availableFor(dict))
			if got := res.Header.Get("Content-Encoding"); got != coding {
				t.Fatalf("%s with the learned dictionary went out as %q, want %s", path, got, coding)
			}
			plain, err := testtool.DecodeDictionary(coding, raw, dict)
			if err != nil || !bytes.Equal(plain, want) {
				t.Fatalf("%s as %s did not decode to the page: %v", path, coding, err)
			}
			if br := len(testtool.Encode(t, "br", want)); len(raw)*2 > br {
				t.Errorf("%s as %s took %d bytes, br alone %d: want under half", path, coding, len(raw), br)
			}
			if !strings.Contains(res.Header.Get("Vary"), "Available-Dictionary") {
				t.Errorf("%s: Vary %q lacks Available-Dictionary", path, res.Header.Get("Vary"))
			}
		}
	})
	s := counters.String()
	if !strings.Contains(s, `"trained":1`) || strings.Contains(s, `"deltas":0`) || strings.Contains(s, `"bytes_saved":0`) {
		t.Errorf("counters after training and 4 deltas: %s", s)
	}
}

// TestLearnedDictionaryNeverHoldsPrivateResponses sends, for each way a
// response may not be meant for everyone, pages carrying a secret that
// way, among fewer public pages, and checks that the dictionary trained
// holds none of the secret: a learned dictionary is published to
// everyone. The private pages have paths of their own (/search/p...), so
// that only what the case names tells them apart.
func TestLearnedDictionaryNeverHoldsPrivateResponses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		resp    map[string]string // response header fields of the private pages; "" deletes
		request []string          // request header fields of the private pages
		suffix  string            // after the private pages' path: a query string or a segment
		opts    []squeeze.LearnedOption
	}{
		{"Cache-Control: private", map[string]string{"Cache-Control": "private, max-age=60"}, nil, "", nil},
		{"Cache-Control: no-store", map[string]string{"Cache-Control": "no-store"}, nil, "", nil},
		{"Set-Cookie", map[string]string{"Set-Cookie": "session=abc"}, nil, "", nil},
		{"Vary: *", map[string]string{"Vary": "*"}, nil, "", nil},
		{"Authorization", map[string]string{"Cache-Control": ""}, []string{"Authorization", "Bearer token"}, "", nil},
		{"Cookie", map[string]string{"Cache-Control": ""}, []string{"Cookie", "session=abc"}, "", nil},
		{"Authorization, s-maxage", map[string]string{"Cache-Control": "s-maxage=60, must-revalidate"}, []string{"Authorization", "Basic dXNlcjpwdw=="}, "", nil},
		{"cookie in lower case", map[string]string{"Cache-Control": ""}, []string{"cookie", "session=abc"}, "", nil},
		{"Cookie, max-age", map[string]string{"Cache-Control": "max-age=60"}, []string{"Cookie", "session=abc"}, "", nil},
		{"a capability URL saying nothing", map[string]string{"Cache-Control": ""}, nil, "?key=k7Qx", nil},
		{"a capability URL with a max-age", map[string]string{"Cache-Control": "max-age=60"}, nil, "?key=k7Qx", nil},
		{"a response saying nothing", map[string]string{"Cache-Control": ""}, nil, "", nil},
		{"max-age=0", map[string]string{"Cache-Control": "max-age=0"}, nil, "", nil},
		{"X-Api-Key named, max-age", map[string]string{"Cache-Control": "max-age=60"}, []string{"x-api-key", "k7Qx"}, "",
			[]squeeze.LearnedOption{squeeze.LearnedCredentialHeaders("X-Api-Key")}},
		{"Proxy-Authorization, max-age", map[string]string{"Cache-Control": "max-age=60"}, []string{"Proxy-Authorization", "Basic dXNlcjpwdw=="}, "", nil},
		{"public, Vary: Cookie, to a cookie", map[string]string{"Cache-Control": "public, max-age=60", "Vary": "Accept-Encoding, cookie"}, []string{"Cookie", "session=abc"}, "", nil},
		{"public, Vary: Authorization, to Authorization", map[string]string{"Cache-Control": "public", "Vary": "Authorization"}, []string{"Authorization", "Bearer token"}, "", nil},
		{"a reset token in the path with a max-age", map[string]string{"Cache-Control": "max-age=60"}, nil, "/reset/k7Qx9fA2mZ4pL8wR3tY6", nil},
		{"a UUID in the path with a max-age", map[string]string{"Cache-Control": "max-age=60"}, nil, "/share/550e8400-e29b-41d4-a716-446655440000", nil},
		{"public, Vary naming a credential header, to it", map[string]string{"Cache-Control": "public, max-age=60", "Vary": "X-Api-Key"}, []string{"X-Api-Key", "k7Qx"}, "",
			[]squeeze.LearnedOption{squeeze.LearnedCredentialHeaders("X-Api-Key")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const secret = "SECRET-MARKER-7f3a9c-"
			opts := append([]squeeze.LearnedOption{squeeze.LearnedSamples(8), squeeze.LearnedInterval(0)}, tc.opts...)
			m := newMiddleware(t, squeeze.WithLearnedDictionary("/search/*", opts...))
			squeeze.SetLearnedLog(m, func(string, ...any) {})
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				private := strings.HasPrefix(r.URL.Path, "/search/p")
				w.Header().Set("Content-Type", "text/html")
				w.Header().Set("Cache-Control", "public, max-age=60")
				body := searchPage("shop", len(r.URL.Path))
				if private {
					for k, v := range tc.resp {
						if v == "" {
							w.Header().Del(k)
						} else {
							w.Header().Set(k, v)
						}
					}
					// The secret, repeated, makes up most of the page.
					body = append(bytes.Repeat([]byte(secret+"account 4411 balance 1024; "), 200), body...)
				}
				_, _ = w.Write(body)
			}))
			for i := range 24 {
				req := httptest.NewRequest(http.MethodGet, fmt.Sprintf("/search/p%d%s", i, tc.suffix), nil)
				for k := 0; k+1 < len(tc.request); k += 2 {
					req.Header[tc.request[k]] = []string{tc.request[k+1]}
				}
				h.ServeHTTP(httptest.NewRecorder(), req)
				if i%3 == 0 {
					serveAt(h, fmt.Sprintf("/search/%d", i), "br")
				}
			}
			squeeze.WaitLearned(m)
			url := learnedLink(serveAt(h, "/search/1", "br").Header())
			if url == "" {
				t.Fatal("no dictionary was trained on the 8 public pages")
			}
			dict := serveAt(h, url, "").Body.Bytes()
			if bytes.Contains(dict, []byte(secret)) || bytes.Contains(dict, []byte("balance 1024")) {
				t.Fatalf("the learned dictionary holds the private pages' secret")
			}
		})
	}
}

// TestLearnedDictionarySamplesWhatSaysItIsForEveryone: a public response
// is sampled whatever its request carried, a query string, a token in its
// path and a cookie included, and a max-age one to a plain request, words,
// dated slugs and versions in its path included.
func TestLearnedDictionarySamplesWhatSaysItIsForEveryone(t *testing.T) {
	for _, tc := range []struct {
		name, cacheControl, suffix, vary string
		request                          []string
	}{
		{"public, with a query and a cookie", "public", "?q=1", "", []string{"Cookie", "theme=dark"}},
		{"max-age, plain request", "max-age=60", "", "", nil},
		{"public, a token in the path", "public", "/reset/k7Qx9fA2mZ4pL8wR3tY6", "", nil},
		{"max-age, a dated slug and a version in the path", "max-age=60", "/2026-12-07-release-notes/python3.12/internationalization.html", "", nil},
		{"s-maxage, plain request", "s-maxage=60", "", "", nil},
		{"public, Vary: Cookie, to a request without one", "public, max-age=60", "", "Cookie", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMiddleware(t, squeeze.WithLearnedDictionary("/search/*", squeeze.LearnedSamples(8), squeeze.LearnedInterval(0)))
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.Header().Set("Cache-Control", tc.cacheControl)
				if tc.vary != "" {
					w.Header().Set("Vary", tc.vary)
				}
				_, _ = w.Write(searchPage("shop", len(r.URL.Path)))
			}))
			for i := range 8 {
				serveAt(h, fmt.Sprintf("/search/%d%s", i, tc.suffix), "br", tc.request...)
			}
			squeeze.WaitLearned(m)
			if learnedLink(serveAt(h, "/search/1", "br").Header()) == "" {
				t.Fatal("no dictionary was trained on 8 pages that may be shared with anyone")
			}
		})
	}
}

func TestWithLearnedDictionaryRejectsBadOptions(t *testing.T) {
	for _, tc := range []struct {
		opt  squeeze.Option
		want string
	}{
		{squeeze.WithLearnedDictionary("search/*"), `pattern "search/*"`},
		{squeeze.WithLearnedDictionary("/s/*", squeeze.LearnedDictionarySize(10)), "LearnedDictionarySize(10)"},
		{squeeze.WithLearnedDictionary("/s/*", squeeze.LearnedSampleBudget(1)), "LearnedSampleBudget(1)"},
		{squeeze.WithLearnedDictionary("/s/*", squeeze.LearnedSamples(1)), "LearnedSamples(1)"},
		{squeeze.WithLearnedDictionary("/s/*", squeeze.LearnedSamples(4)), "LearnedSamples(4): a round needs at least 5 samples"},
		{squeeze.WithLearnedDictionary("/s/*", squeeze.LearnedTrainingMemory(1)), "LearnedTrainingMemory(1)"},
		{squeeze.WithLearnedDictionary("/s/*", squeeze.LearnedRetrainBelow(1)), "LearnedRetrainBelow(1)"},
		{squeeze.WithLearnedDictionary("/s/*", squeeze.LearnedInterval(-1)), "LearnedInterval(-1ns)"},
		{squeeze.WithLearnedDictionary("/s/*", squeeze.LearnedKeep(0)), "LearnedKeep(0)"},
		{squeeze.WithLearnedDictionary("/s/*", squeeze.LearnedPath("/d")), `LearnedPath("/d")`},
		{squeeze.WithLearnedDictionary("/s/*", nil), "option 1 of 1 is nil"},
	} {
		_, err := squeeze.New(tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one naming %s", err, tc.want)
		}
	}
	if _, err := squeeze.New(squeeze.WithLearnedDictionary("/s/*"), squeeze.WithLearnedDictionary("/s/*")); err == nil {
		t.Error("a pattern learned twice is no error")
	}
}

var _ = io.Discard

// TestLearnedDictionaryGivesPrivateResponsesNoDelta: a learned dictionary
// holds text clients may have chosen (a search page echoes its query), so,
// as against a remembered one, a response that may not be shared never
// goes out as a delta against it.
func TestLearnedDictionaryGivesPrivateResponsesNoDelta(t *testing.T) {
	m := newMiddleware(t, squeeze.WithLearnedDictionary("/search/*", squeeze.LearnedSamples(8), squeeze.LearnedInterval(0)))
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Cache-Control", "max-age=60")
		if r.URL.Query().Get("private") != "" {
			w.Header().Set("Cache-Control", "private")
		}
		_, _ = w.Write(searchPage("shop", len(r.URL.Path)))
	}))
	trainSearch(t, m, h, 0, 8)
	_, dict, _ := learnedOf(h)
	if dict == nil {
		t.Fatal("no dictionary was trained")
	}
	for _, tc := range []struct {
		path string
		hdr  []string
		want string
	}{
		{"/search/12", nil, squeeze.DCZ},
		{"/search/12?private=1", nil, squeeze.Zstd},
		{"/search/12", []string{"Cookie", "session=abc"}, squeeze.Zstd},
		{"/search/12", []string{"Authorization", "Bearer x"}, squeeze.Zstd},
	} {
		hdr := append([]string{"Available-Dictionary", availableFor(dict)}, tc.hdr...)
		if ce := serveAt(h, tc.path, "dcz, zstd", hdr...).Header().Get("Content-Encoding"); ce != tc.want {
			t.Errorf("%s %q: Content-Encoding %q, want %q", tc.path, tc.hdr, ce, tc.want)
		}
	}
}

// TestLearnedRouteCountsAndLogsWhyItRefusesSamples: a route whose
// responses are refused counts each by reason and logs the first of each
// reason once, with how far the route is from its next round, and never
// the query string, which may be a secret. A route whose visitors all
// carry a session cookie is the case a newcomer met: it trained nothing
// and said nothing.
func TestLearnedRouteCountsAndLogsWhyItRefusesSamples(t *testing.T) {
	var counters squeeze.Counters
	m := newMiddleware(t, squeeze.WithObserver(counters.Observer()),
		squeeze.WithLearnedDictionary("/search/*", squeeze.LearnedSamples(8), squeeze.LearnedInterval(0)))
	var mu sync.Mutex
	var logs []string
	squeeze.SetLearnedLog(m, func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, fmt.Sprintf(format, args...))
	})
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch {
		case strings.HasPrefix(r.URL.Path, "/search/private"):
			w.Header().Set("Cache-Control", "private, max-age=60")
		case strings.HasPrefix(r.URL.Path, "/search/silent"):
		case strings.HasPrefix(r.URL.Path, "/search/image"):
			w.Header().Set("Content-Type", "image/png")
			w.Header().Set("Cache-Control", "max-age=60")
		default:
			w.Header().Set("Cache-Control", "max-age=60")
		}
		_, _ = w.Write(searchPage("shop", len(r.URL.Path)))
	}))
	for i := range 3 {
		serveAt(h, fmt.Sprintf("/search/%d", i), "br") // sampled
	}
	for i := range 5 {
		serveAt(h, fmt.Sprintf("/search/c%d", i), "br", "Cookie", "session=s3cr3t")
		serveAt(h, fmt.Sprintf("/search/q%d?token=t0ps3cr3t", i), "br")
		serveAt(h, fmt.Sprintf("/search/private%d", i), "br")
		serveAt(h, fmt.Sprintf("/search/silent%d", i), "br")
		serveAt(h, fmt.Sprintf("/search/image%d", i), "br")
	}
	squeeze.WaitLearned(m)
	s := counters.String()
	for _, want := range []string{`"skipped_credentials":5`, `"skipped_query":5`, `"skipped_private":5`, `"skipped_unmarked":5`, `"skipped_type":5`, `"trained":0`} {
		if !strings.Contains(s, want) {
			t.Errorf("counters lack %s: %s", want, s)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logs) != 5 {
		t.Fatalf("%d log lines for 25 samples refused for 5 reasons, want one per reason:\n%s", len(logs), strings.Join(logs, "\n"))
	}
	for _, want := range []string{"credentials", "query string", "private", "says nothing of sharing", "content type"} {
		found := false
		for _, l := range logs {
			found = found || strings.Contains(l, want) && strings.Contains(l, `"/search/*"`) && strings.Contains(l, "holds 3 of the 8 samples")
		}
		if !found {
			t.Errorf("no log line names the route, %q and the 3 of 8 samples held:\n%s", want, strings.Join(logs, "\n"))
		}
	}
	for _, l := range logs {
		if strings.Contains(l, "t0ps3cr3t") || strings.Contains(l, "s3cr3t") {
			t.Errorf("a log line holds a secret of the request: %s", l)
		}
	}
}

// userPage returns a page of user content on the search route that shares
// nothing with the route's template: random words a dictionary of the
// route cannot hold.
func userPage(i int) []byte {
	var b bytes.Buffer
	x := uint64(i)*0x9e3779b97f4a7c15 + 1
	for b.Len() < 6000 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		const letters = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		for range 8 {
			b.WriteByte(letters[x%uint64(len(letters))])
			x /= uint64(len(letters))
		}
		b.WriteByte(' ')
	}
	return b.Bytes()
}

// TestLearnedRouteStopsStreamedDeltasLargerThanTheCodingTheyReplace
// poisons a route of user content so that its streamed pages share
// nothing with the learned dictionary: a delta of each then went out
// larger than the zstd it replaced, 10 of 10. The route measures its
// streamed deltas and stops sending them once they save less than the
// floor: at most learnedProbeMin go out larger, the stop is counted, and
// the next dictionary starts deltas again.
func TestLearnedRouteStopsStreamedDeltasLargerThanTheCodingTheyReplace(t *testing.T) {
	var counters squeeze.Counters
	m := newMiddleware(t, squeeze.WithObserver(counters.Observer()),
		squeeze.WithLearnedDictionary("/search/*", squeeze.LearnedSamples(8), squeeze.LearnedInterval(0), squeeze.LearnedRetrainBelow(0.95)))
	squeeze.SetLearnedLog(m, func(string, ...any) {})
	search := searchHandler("shop")
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/search/u") {
			search(w, r)
			return
		}
		var i int
		fmt.Sscanf(r.URL.Path, "/search/u%d", &i)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		// Public, so it may go out as a delta; not sampled (its query
		// string), so no round starts meanwhile.
		w.Header().Set("Cache-Control", "max-age=60")
		page := userPage(i)
		_, _ = w.Write(page[:100])
		w.(http.Flusher).Flush() // streamed
		_, _ = w.Write(page[100:])
	}))
	trainSearch(t, m, h, 0, 8)
	_, dict, _ := learnedOf(h)
	if dict == nil {
		t.Fatal("no dictionary was trained")
	}
	larger, deltas := 0, 0
	for i := range 10 {
		path := fmt.Sprintf("/search/u%d?by=user", i)
		rec := serveAt(h, path, "dcz, zstd", "Available-Dictionary", availableFor(dict))
		plain := serveAt(h, path, "zstd")
		if plain.Header().Get("Content-Encoding") != squeeze.Zstd {
			t.Fatalf("%s without the dictionary went out as %q", path, plain.Header().Get("Content-Encoding"))
		}
		if rec.Header().Get("Content-Encoding") == squeeze.DCZ {
			deltas++
			if got, err := testtool.DecodeDictionary(squeeze.DCZ, rec.Body.Bytes(), dict); err != nil || !bytes.Equal(got, userPage(i)) {
				t.Fatalf("%s as dcz does not decode to the page: %v", path, err)
			}
			if rec.Body.Len() > plain.Body.Len() {
				larger++
			}
		}
	}
	t.Logf("%d of 10 streamed pages went out as dcz, %d larger than zstd", deltas, larger)
	if larger > 3 {
		t.Errorf("%d of 10 streamed pages went out as a delta larger than the zstd it replaced; want at most 3, the probes", larger)
	}
	if !strings.Contains(counters.String(), `"deltas_stopped":1`) {
		t.Errorf("the stop is not counted: %s", counters.String())
	}
	// The template pages get no delta either while the route is stopped,
	// and get them again after its next round, which trains a dictionary
	// (the saving is below LearnedRetrainBelow).
	if ce := serveAt(h, "/search/300", "dcz, zstd", "Available-Dictionary", availableFor(dict)).Header().Get("Content-Encoding"); ce != squeeze.Zstd {
		t.Errorf("a page of the stopped route went out as %q, want zstd", ce)
	}
	trainSearch(t, m, h, 400, 8)
	_, next, _ := learnedOf(h)
	if next == nil || bytes.Equal(next, dict) {
		t.Fatal("no new dictionary was trained")
	}
	if ce := serveAt(h, "/search/301", "dcz, zstd", "Available-Dictionary", availableFor(next)).Header().Get("Content-Encoding"); ce != squeeze.DCZ {
		t.Errorf("a page went out as %q against the route's next dictionary, want dcz", ce)
	}
}

// TestDictionaryResponsesForbidSniffing: a learned dictionary holds text
// of HTML responses, and a WithDictionary one whatever the operator gave:
// served as text, neither may be sniffed into a page.
func TestDictionaryResponsesForbidSniffing(t *testing.T) {
	m := newMiddleware(t, squeeze.WithDictionary("/dict/site", "/app/*", []byte("<html><script>alert(1)</script>")),
		squeeze.WithLearnedDictionary("/search/*", squeeze.LearnedSamples(8), squeeze.LearnedInterval(0)))
	h := m.Handler(searchHandler("shop"))
	trainSearch(t, m, h, 0, 8)
	url, _, _ := learnedOf(h)
	if url == "" {
		t.Fatal("no dictionary was trained")
	}
	for _, path := range []string{url, "/dict/site"} {
		rec := serveAt(h, path, "br")
		if rec.Code != http.StatusOK || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: %d, X-Content-Type-Options %q, want nosniff", path, rec.Code, rec.Header().Get("X-Content-Type-Options"))
		}
	}
}
