package squeeze

import (
	"bytes"
	"crypto/sha256"
	"io"
	"math/bits"
	"runtime"
	"testing"
)

// The parsers and serializers of RFC 9842 and RFC 8941 in dictionary.go.

func TestExplicitCodingIgnoresStarAndRefusals(t *testing.T) {
	both := []string{DCZ, DCB}
	for _, tt := range []struct {
		ae      string
		codings []string
		want    string
	}{
		{"gzip, br, zstd, dcb, dcz", both, DCZ},
		{"gzip, br, zstd, dcb, dcz", []string{DCB, DCZ}, DCB},
		{"dcb", both, DCB},
		{"*", both, ""},
		{"dcz;q=0, dcb", both, DCB},
		{"dcz;q=0.5, dcb", both, DCB},
		{"DCZ", both, DCZ},
		{"dcz, dcb", nil, ""},
		{"gzip", both, ""},
	} {
		if got := explicitCoding([]string{tt.ae}, tt.codings); got != tt.want {
			t.Errorf("explicitCoding(%q, %v) = %q, want %q", tt.ae, tt.codings, got, tt.want)
		}
	}
}

func TestDCZWindowCoversTheDictionaryWithinTheClientsLimit(t *testing.T) {
	for _, n := range []int{1, 60 << 10, 1 << 20, 7 << 20, 8 << 20, 10 << 20, 100 << 20, 200 << 20} {
		w := dczWindow(n)
		limit := min(max(8<<20, n+n/4), 128<<20)
		if w > limit || w&(w-1) != 0 {
			t.Errorf("dczWindow(%d) = %d: not a power of two within %d", n, w, limit)
		}
		// klauspost/compress takes powers of two only: a dictionary whose
		// next power of two passes the limit is reached only in its tail.
		cover := 1 << bits.Len(uint(n+64<<10-1))
		if cover <= limit && w < n+64<<10 {
			t.Errorf("dczWindow(%d) = %d does not cover the dictionary", n, w)
		}
		if cover > limit && w*2 <= limit {
			t.Errorf("dczWindow(%d) = %d is not the largest power of two within %d", n, w, limit)
		}
	}
}

func TestDictionaryOptionErrorsNameTheCall(t *testing.T) {
	for _, tt := range []struct {
		opt  Option
		want string
	}{
		{WithDictionaryMatch(), `squeeze: WithDictionaryMatch(): needs at least one pattern`},
		{WithDictionaryMatch("js/*"), `squeeze: WithDictionaryMatch("js/*"): pattern "js/*" must start with /`},
		{WithDictionaryMatch("/a/*", "/a/*"), `squeeze: WithDictionaryMatch("/a/*", "/a/*"): pattern "/a/*" is listed twice`},
		{WithDictionaryMatch("/x/:id"), `squeeze: WithDictionaryMatch("/x/:id"): pattern "/x/:id" has ':': only * is special (no groups, modifiers, escapes, query or fragment)`},
		{WithDictionaryStoreSize(0), `squeeze: WithDictionaryStoreSize(0): size must be positive`},
		{WithDictionary("/d", "/api/*", nil), `squeeze: WithDictionary("/d", "/api/*", 0 bytes): the dictionary is empty`},
		{WithDictionary("d", "/api/*", []byte("x")), `squeeze: WithDictionary("d", "/api/*", 1 bytes): path must start with /`},
		{WithDictionary("/d", "api/*", []byte("x")), `squeeze: WithDictionary("/d", "api/*", 1 bytes): pattern "api/*" must start with /`},
	} {
		_, err := New(tt.opt)
		if err == nil || err.Error() != tt.want {
			t.Errorf("error %v\nwant  %s", err, tt.want)
		}
	}
	_, err := New(WithDictionary("/d", "/a/*", []byte("x")), WithDictionary("/d", "/b/*", []byte("y")))
	if want := `squeeze: WithDictionary("/d", "/b/*", 1 bytes): path "/d" has a dictionary already`; err == nil || err.Error() != want {
		t.Errorf("duplicate path: %v", err)
	}
}

// WithDictionaryMatch's calls add up: a path matching a pattern of either
// call is marked, as a newcomer who splits the patterns over two calls
// expects (the last call alone used to count).
func TestDictionaryMatchCallsAddUp(t *testing.T) {
	m, err := New(WithDictionaryMatch("/a/*"), WithDictionaryMatch("/b/*", "/a/*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.dicts.patterns) != 2 {
		t.Errorf("patterns %q, want /a/* once and /b/*", m.dicts.patterns)
	}
	for _, path := range []string{"/a/x.js", "/b/x.js"} {
		if m.dicts.matchIndex(path) < 0 {
			t.Errorf("%s matches no pattern; patterns %q", path, m.dicts.patterns)
		}
	}
}

// A body remembered again is found without its SHA-256 only when its bytes
// are the held dictionary's: a body of the same length with other bytes is
// remembered as a dictionary of its own, and one whose dictionary was
// evicted is remembered anew.
func TestDictStoreRemembersKnownBodiesByTheirBytes(t *testing.T) {
	s, err := newDictStore(&config{dictMatch: []string{"/js/*"}, dictStoreSize: 1 << 20}, 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	a := bytes.Repeat([]byte("function a() {}\n"), 1<<10)
	b := bytes.Clone(a)
	b[len(b)/2] = 'X'
	for range 2 {
		s.remember(bytes.Clone(a), "/js/*", true, fromResponse, 0)
	}
	s.remember(b, "/js/*", false, fromResponse, 0)
	for _, body := range [][]byte{a, b} {
		if s.lookup(sha256.Sum256(body)) == nil {
			t.Fatalf("a body of %d bytes remembered but not held", len(body))
		}
	}
	if n := s.remembered.Len(); n != 2 {
		t.Fatalf("%d dictionaries held, want 2: a once, b once", n)
	}
	// The entry that finds a outlives a's dictionary: a is stored again.
	s.mu.Lock()
	s.remembered.Remove(sha256.Sum256(a))
	s.mu.Unlock()
	s.remember(a, "/js/*", false, fromResponse, 0)
	if s.lookup(sha256.Sum256(a)) == nil {
		t.Fatal("a body whose dictionary was evicted is not remembered again")
	}
}

// A live learned dictionary's dcz pool lends the encoder it built before
// however often the garbage collector ran while it sat idle: building one
// hashes the dictionary into tables of its own, which costs a response
// many times what it encodes. A learned dictionary no route holds (one
// fetched from the fleet's store, remembered and charged) keeps none.
func TestLiveLearnedDCZPoolKeepsItsEncoderAcrossCollections(t *testing.T) {
	m, err := New(WithLearnedDictionary("/p/*"))
	if err != nil {
		t.Fatal(err)
	}
	r := m.dicts.learner.routes[0]
	live := r.newLearnedDict(bytes.Repeat([]byte("<li>a learned dictionary of a site</li>\n"), 2000), 1, nil)
	if !r.publish(live) {
		t.Fatal("the dictionary was not published")
	}
	data := bytes.Repeat([]byte("<li>an older dictionary of the site</li>\n"), 2000)
	fetched := &dictionary{hash: sha256.Sum256(data), data: data, pattern: "/p/*", learned: true}
	for _, tc := range []struct {
		name string
		d    *dictionary
		keep bool
	}{{"live", live.sd.d, true}, {"no route's", fetched, false}} {
		o := m.dicts.offerFor(tc.d, DCZ)
		if o == nil {
			t.Fatalf("%s: no dcz offer", tc.name)
		}
		first, err := o.encoders.Get(io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		o.encoders.Put(first)
		kept := true
		for range 3 {
			runtime.GC()
			runtime.GC()
			e, err := o.encoders.Get(io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			o.encoders.Put(e)
			kept = kept && e == first
		}
		if kept != tc.keep {
			t.Errorf("%s learned dictionary: its dcz encoder kept across collections %v, want %v", tc.name, kept, tc.keep)
		}
	}
}
