package squeeze

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/squeezehttp/squeeze/internal/lru"
)

func TestParseUseAsDictionary(t *testing.T) {
	tests := []struct {
		field string
		ok    bool
		want  useAsField
	}{
		{`match="/app/*.js"`, true, useAsField{match: "/app/*.js"}},
		{`match="/a*", id="v1", type=raw`, true, useAsField{match: "/a*", id: "v1"}},
		{`match="/a*";p=1, id="x\"y\\z", match-dest=()`, true, useAsField{match: "/a*", id: `x"y\z`}},
		{`id="1",  match="/a*" , extra=?1, n=-12, d=1.5, b=:AAE=:, tok=abc/def`, true, useAsField{match: "/a*", id: "1"}},
		{`match="/old*", match="/new*"`, true, useAsField{match: "/new*"}},
		{``, false, useAsField{}},
		{`id="only"`, false, useAsField{}},
		{`match=""`, false, useAsField{}},
		{`match=/a`, false, useAsField{}},
		{`match="/a*", type=other`, false, useAsField{}},
		{`match="/a*", type="raw"`, false, useAsField{}},
		{`match="/a*", id=v1`, false, useAsField{}},
		{`match="/a*", match-dest=("document")`, false, useAsField{}},
		{`match="/a*",`, false, useAsField{}},
		{`match="/a*" id="x"`, false, useAsField{}},
		{`Match="/a*"`, false, useAsField{}},
		{`match="/a*`, false, useAsField{}},
		{"match=\"/a\t*\"", false, useAsField{}},
		{`match="/a*", id="` + strings.Repeat("x", 1025) + `"`, false, useAsField{}},
		{`match="/` + strings.Repeat("a", 2046) + `*"`, true, useAsField{match: "/" + strings.Repeat("a", 2046) + "*"}},
		{`match="/` + strings.Repeat("a", 2047) + `*"`, false, useAsField{}},
	}
	for _, tt := range tests {
		got, ok := parseUseAsDictionary(tt.field)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("parseUseAsDictionary(%q) = %+v, %v; want %+v, %v", tt.field, got, ok, tt.want, tt.ok)
		}
	}
}

func TestResolvePattern(t *testing.T) {
	base, _ := url.Parse("https://example.com/app/v2/main.js")
	tests := []struct {
		match, want string
		ok          bool
	}{
		{"/app/*", "/app/*", true},
		{"main.*.js", "/app/v2/main.*.js", true},
		{"https://example.com/app/*", "/app/*", true},
		{"https://EXAMPLE.com:443/app/*", "/app/*", true},
		{"https://other.example/app/*", "", false},
		{"http://example.com/app/*", "", false},
		{"/app/:name", "", false},
		{"/app/(\\d+)", "", false},
		{"/app/*?v=1", "", false},
		{"/app/{x}?", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := resolvePattern(tt.match, originOf(base), base.EscapedPath())
		if got != tt.want || ok != tt.ok {
			t.Errorf("resolvePattern(%q) = %q, %v; want %q, %v", tt.match, got, ok, tt.want, tt.ok)
		}
	}
}

func TestMatchPattern(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"/api/*", "/api/products", true},
		{"/api/*", "/api/", true},
		{"/api/*", "/api", false},
		{"/app/*.js", "/app/v1/main.js", true},
		{"/app/*.js", "/app/main.css", false},
		{"/exact", "/exact", true},
		{"/exact", "/exact/", false},
		{"*", "/anything", true},
		{"/a*b*c", "/aXbYbZc", true},
		{"/a*b*c", "/aXbYbZ", false},
	}
	for _, tt := range tests {
		if got := matchPath(tt.pattern, tt.path); got != tt.want {
			t.Errorf("matchPath(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

// FuzzParseUseAsDictionary checks that any field parses without panicking,
// that what parses meets the rules the store relies on, and that a match
// and an id written back as RFC 8941 strings parse to the same values.
func FuzzParseUseAsDictionary(f *testing.F) {
	for _, s := range []string{`match="/a*", id="v1", type=raw`, `match="/x";a=1, match-dest=()`, `match="\"", id=""`, `a, b=?0, match="/"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, field string) {
		u, ok := parseUseAsDictionary(field)
		if !ok {
			return
		}
		if u.match == "" || len(u.match) > maxDictionaryMatch || len(u.id) > maxDictionaryID {
			t.Fatalf("%q parsed to %+v", field, u)
		}
		again := "match=" + quoteSFString(u.match)
		if u.id != "" {
			again += ", id=" + quoteSFString(u.id)
		}
		if v, ok := parseUseAsDictionary(again); !ok || v != u {
			t.Fatalf("%q parsed to %+v; written back as %q it parses to %+v, %v", field, u, again, v, ok)
		}
	})
}

// FuzzMatchPathAgainstRegexp compares matchPath with a regular expression built
// from the pattern.
func FuzzMatchPathAgainstRegexp(f *testing.F) {
	f.Add("/api/*", "/api/products")
	f.Add("/a*b*c", "/aXbYbZc")
	f.Add("**", "")
	f.Fuzz(func(t *testing.T, pattern, path string) {
		if len(pattern) > 64 || len(path) > 256 {
			return
		}
		parts := strings.Split(pattern, "*")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		re, err := regexp.Compile(`(?s)\A` + strings.Join(parts, ".*") + `\z`)
		if err != nil {
			return // bytes that are not UTF-8
		}
		if got, want := matchPath(pattern, path), re.MatchString(path); got != want {
			t.Fatalf("matchPath(%q, %q) = %v, regexp says %v", pattern, path, got, want)
		}
	})
}

// A hostile server offers 1-byte dictionaries with long match patterns and
// ids. Each is charged its pattern, id and origin as well as its data and
// the store's records of it, so the store stays within its budget; a
// pattern over maxDictionaryMatch is not stored at all.
func TestClientDictionaryStoreChargesPatternsAndIds(t *testing.T) {
	for _, patternLen := range []int{2000, 64 << 10} {
		t.Run(fmt.Sprint(patternLen), func(t *testing.T) {
			pad := strings.Repeat("a", patternLen)
			var n atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				i := n.Add(1)
				match := fmt.Sprintf("/%d%s", i, pad)[:patternLen] + "*"
				w.Header().Set("Use-As-Dictionary", fmt.Sprintf(`match="%s", id="%s"`, match, strings.Repeat("i", 1000)))
				w.Header().Set("Cache-Control", "max-age=3600")
				_, _ = w.Write([]byte("x"))
			}))
			defer srv.Close()
			const budget = 4096
			tr := &Transport{DictionaryStoreSize: budget, Base: &http.Transport{}}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			for range 50 {
				resp, err := c.Get(srv.URL + "/p")
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
			s := tr.state.dicts
			s.mu.Lock()
			defer s.mu.Unlock()
			var held int64
			for _, d := range s.lru.All() {
				held += int64(len(d.data) + len(d.pattern) + len(d.id) + len(d.origin))
			}
			if held > budget || s.lru.Used() > budget {
				t.Errorf("store with DictionaryStoreSize %d holds %d dictionaries, %d bytes of data and strings (charged %d)",
					budget, s.lru.Len(), held, s.lru.Used())
			}
			if wantStored := patternLen < 2048; (s.lru.Len() > 0) != wantStored {
				t.Errorf("%d dictionaries stored with %d-byte patterns; want some: %v", s.lru.Len(), patternLen+1, wantStored)
			}
		})
	}
}

// dictEntryOverhead covers what the store allocates for a dictionary beyond
// the bytes cost counts: the clientDict, its record in internal/lru, its map slot
// and its pointer in its origin's list. Measured with the whole entry
// allocated, the heap grows by no more than the entries are charged.
func TestClientDictEntryOverheadCoversItsMemory(t *testing.T) {
	// Reckoned from the types, with the size classes of the allocator and a
	// map table just grown (7/16 full), on 64-bit platforms.
	sizeClass := func(n uintptr) uintptr {
		for _, c := range []uintptr{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256} {
			if n <= c {
				return c
			}
		}
		return n
	}
	var d clientDict
	record := lru.EntrySize[dictKey, *clientDict]()
	entrySlot := (unsafe.Sizeof(dictKey{}) + unsafe.Sizeof(&d) + 1) * 16 / 7
	originSlot := (unsafe.Sizeof("") + unsafe.Sizeof([]*clientDict{}) + 1) * 16 / 7
	reckoned := sizeClass(unsafe.Sizeof(d)) + sizeClass(record) + entrySlot + originSlot + 2*unsafe.Sizeof(&d)
	if reckoned > dictEntryOverhead {
		t.Errorf("an entry's records take %d bytes; dictEntryOverhead is %d", reckoned, dictEntryOverhead)
	}

	const n = 20000
	exp := time.Now().Add(time.Hour)
	s := newClientDictStore(1<<40, time.Hour)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		s.add(&clientDict{
			origin:  fmt.Sprintf("https://origin-%d.example", i/maxDictionariesPerOrigin),
			pattern: fmt.Sprintf("/app/%d/*", i),
			data:    make([]byte, 128),
			expires: exp,
		}, 0)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	var charged int64
	for _, d := range s.lru.All() {
		charged += d.cost()
	}
	if charged != s.lru.Used() {
		t.Errorf("entries cost %d in all; the store counts %d", charged, s.lru.Used())
	}
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if grown > s.lru.Used() {
		t.Errorf("%d entries grew the heap by %d bytes (%d each) and were charged %d (%d each)", n, grown, grown/n, s.lru.Used(), s.lru.Used()/n)
	}
	t.Logf("%d entries: heap %d bytes each, charged %d", n, grown/n, s.lru.Used()/n)
	runtime.KeepAlive(s)
}

// A dictionary that cannot fit beside the captures in flight is not stored,
// and the dictionaries already stored stay: evicting them would not have
// made room.
func TestClientDictStoreKeepsItsDictionariesForOneThatCannotFit(t *testing.T) {
	exp := time.Now().Add(time.Hour)
	dict := func(pattern string, n int) *clientDict {
		return &clientDict{origin: "https://example.com", pattern: pattern, data: make([]byte, n), expires: exp}
	}
	kept := dict("/kept/*", 1000)
	budget := 4 * kept.cost()
	s := newClientDictStore(budget, time.Hour)
	s.add(kept, 0)
	if !s.reserve(dictKey{"https://example.com", "/capture/*"}, budget/2) {
		t.Fatal("a capture of half the budget found no room")
	}
	big := dict("/big/*", int(budget/2))
	s.add(big, 0)
	for _, tc := range []struct {
		path string
		want *clientDict
	}{{"/kept/a.js", kept}, {"/big/a.js", nil}} {
		req, _ := http.NewRequest(http.MethodGet, "https://example.com"+tc.path, nil)
		if got := s.match(req, time.Now()); got != tc.want {
			t.Errorf("%s: matched %v, want %v", tc.path, got != nil, tc.want != nil)
		}
	}
}
