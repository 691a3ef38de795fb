package squeeze

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/squeezehttp/squeeze/internal/cdt"
	"github.com/squeezehttp/squeeze/internal/lru"
)

// A hostile server offers 1-byte dictionaries with long match patterns and
// ids. Each is charged its pattern, id and origin as well as its data and
// the store's records of it, so the store stays within its budget; a
// pattern over cdt.MaxPattern is not stored at all.
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

// A match in progress holds no lock of the client's store: a request to
// another origin (or an add) runs meanwhile, however slow the match.
func TestClientDictionaryMatchHoldsNoLock(t *testing.T) {
	s := newClientDictStore(1<<20, time.Hour)
	exp := time.Now().Add(time.Hour)
	s.add(&clientDict{origin: "https://slow.example", pattern: "/*", data: []byte("d"), expires: exp}, 0)
	calls := 0
	s.matches = func(pattern, path string) bool {
		calls++
		if !s.mu.TryLock() {
			t.Errorf("the store's lock is held while %q is matched against %q", pattern, path)
			return false
		}
		s.mu.Unlock()
		return cdt.MatchPath(pattern, path)
	}
	req, _ := http.NewRequest("GET", "https://slow.example/app.js", nil)
	if d := s.match(req, time.Now()); d == nil {
		t.Fatal("the dictionary does not match")
	}
	if calls == 0 {
		t.Fatal("the matcher was not called")
	}
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
