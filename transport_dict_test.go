package squeeze_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
	brrr "github.com/molecule-man/go-brrr"

	"github.com/squeezehttp/squeeze"
)

// encodeDCZ returns body as a dcz stream with dict (RFC 9842 §4): the
// skippable-frame header carrying the dictionary's SHA-256, then a zstd
// frame compressed with dict as a raw dictionary.
// It panics on an encoder error, which only a bug in the test can cause.
func encodeDCZ(dict, body []byte) []byte {
	sum := sha256.Sum256(dict)
	out := append([]byte{0x5e, 0x2a, 0x4d, 0x18, 0x20, 0, 0, 0}, sum[:]...)
	e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderDictRaw(0, dict), zstd.WithWindowSize(1<<20))
	must(err)
	return e.EncodeAll(body, out)
}

// encodeDCB returns body as a dcb stream with dict (RFC 9842 §5).
func encodeDCB(dict, body []byte) []byte {
	sum := sha256.Sum256(dict)
	var buf bytes.Buffer
	buf.Write([]byte{0xff, 0x44, 0x43, 0x42})
	buf.Write(sum[:])
	pd, err := brrr.PrepareDictionary(dict)
	must(err)
	w, err := brrr.NewWriterOptions(&buf, 5, brrr.WriterOptions{Dictionaries: []*brrr.PreparedDictionary{pd}})
	must(err)
	_, err = w.Write(body)
	must(err)
	must(w.Close())
	return buf.Bytes()
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// pollJSON returns version n of a polled JSON document: each version
// differs from the last in a few fields only.
func pollJSON(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := range 200 {
		if i > 0 {
			b.WriteByte(',')
		}
		price := 100 + i
		if i%50 == n%50 {
			price += n
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"product %d","price":%d,"tags":["squeeze","dictionary"]}`, i, i, price)
	}
	fmt.Fprintf(&b, `],"version":%d}`, n)
	return []byte(b.String())
}

// dictServer is a hand-written RFC 9842 server standing in for squeeze's
// own (WithDictionaryMatch, being built separately): every response offers
// itself as a dictionary with the header fields in useAs and caching,
// and a request that offers a dictionary the server served before gets a
// delta in coding (dcz or dcb) when its Accept-Encoding lists it.
type dictServer struct {
	*httptest.Server
	coding  string
	useAs   string
	caching string
	corrupt bool // send the delta under another dictionary's hash

	mu       sync.Mutex
	n        int
	served   map[string][]byte // by Available-Dictionary value
	requests []http.Header
	wire     int // response body bytes sent
}

func newDictServer(t *testing.T, coding, useAs, caching string) *dictServer {
	t.Helper()
	s := &dictServer{coding: coding, useAs: useAs, caching: caching, served: map[string][]byte{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *dictServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r.Header.Clone())
	s.n++
	body := pollJSON(s.n)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Vary", "Accept-Encoding, Available-Dictionary")
	if s.useAs != "" {
		h.Set("Use-As-Dictionary", s.useAs)
	}
	if s.caching != "" {
		h.Set("Cache-Control", s.caching)
	}
	s.served[availableFor(body)] = body
	out := body
	dict, ok := s.served[r.Header.Get("Available-Dictionary")]
	if ok && strings.Contains(r.Header.Get("Accept-Encoding"), s.coding) {
		if s.corrupt {
			dict = append(bytes.Clone(dict), 'x')
		}
		h.Set("Content-Encoding", s.coding)
		if s.coding == "dcz" {
			out = encodeDCZ(dict, body)
			if s.corrupt {
				copy(out[8:], make([]byte, 32)) // a hash of nothing served
			}
		} else {
			out = encodeDCB(dict, body)
		}
	}
	s.wire += len(out)
	_, _ = w.Write(out)
}

func (s *dictServer) request(i int) http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[i]
}

// poll GETs path through tr and returns the decoded body.
func poll(t *testing.T, tr http.RoundTripper, url string, hdr ...string) ([]byte, error) {
	t.Helper()
	return readAll(t, get(t, tr, "GET", url, hdr...))
}

func TestTransportPollsWithDictionaries(t *testing.T) {
	for _, coding := range []string{"dcz", "dcb"} {
		t.Run(coding, func(t *testing.T) {
			srv := newDictServer(t, coding, `match="/api/*", id="poll"`, "max-age=3600")
			tr := newTransport(t, &squeeze.Transport{DictionaryStoreSize: 1 << 20})
			for i := 1; i <= 4; i++ {
				got, err := poll(t, tr, srv.URL+"/api/products")
				if err != nil {
					t.Fatalf("poll %d: %v", i, err)
				}
				if want := pollJSON(i); !bytes.Equal(got, want) {
					t.Fatalf("poll %d decoded to %d bytes, want %d", i, len(got), len(want))
				}
				h := srv.request(i - 1)
				if i == 1 {
					if h.Get("Available-Dictionary") != "" || h.Get("Accept-Encoding") != "zstd, br, gzip" {
						t.Fatalf("first request offered a dictionary: %v", h)
					}
					continue
				}
				if got, want := h.Get("Available-Dictionary"), availableFor(pollJSON(i-1)); got != want {
					t.Fatalf("poll %d: Available-Dictionary %q, want %q (the previous answer)", i, got, want)
				}
				if h.Get("Dictionary-ID") != `"poll"` || h.Get("Accept-Encoding") != "zstd, br, gzip, dcb, dcz" {
					t.Fatalf("poll %d: Dictionary-ID %q, Accept-Encoding %q", i, h.Get("Dictionary-ID"), h.Get("Accept-Encoding"))
				}
			}
			if plain := 4 * len(pollJSON(4)); srv.wire > plain/3 {
				t.Errorf("%d bytes on the wire for 4 polls, want well under the %d plain bytes", srv.wire, plain)
			}
		})
	}
}

// TestTransportPollsSqueezeWithDictionaries runs both ends of RFC 9842 as
// squeeze implements them: a Transport polling a JSON endpoint behind a
// Middleware with WithDictionaryMatch gets deltas against the previous
// answer from its second request on, over HTTP/1.1 and HTTP/2.
func TestTransportPollsSqueezeWithDictionaries(t *testing.T) {
	for _, coding := range []string{squeeze.DCZ, squeeze.DCB} {
		t.Run(coding, func(t *testing.T) {
			var mu sync.Mutex
			var events []squeeze.ResponseInfo
			n := 0
			m := newMiddleware(t, squeeze.WithDictionaryMatch("/api/*"),
				squeeze.WithEncodings(coding, squeeze.Zstd, squeeze.Brotli, squeeze.Gzip),
				squeeze.WithObserver(squeeze.Observer{Response: func(e squeeze.ResponseInfo) { mu.Lock(); events = append(events, e); mu.Unlock() }}))
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				n++
				body := pollJSON(n)
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Cache-Control", "max-age=3600")
				_, _ = w.Write(body)
			}))
			forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				mu.Lock()
				n, events = 0, nil
				mu.Unlock()
				tr := newTransport(t, &squeeze.Transport{Base: c.Transport, DictionaryStoreSize: 1 << 20})
				for i := 1; i <= 4; i++ {
					got, err := poll(t, tr, srv.URL+"/api/products")
					if err != nil {
						t.Fatalf("poll %d: %v", i, err)
					}
					if want := pollJSON(i); !bytes.Equal(got, want) {
						t.Fatalf("poll %d decoded to %d bytes, want %d", i, len(got), len(want))
					}
				}
				mu.Lock()
				defer mu.Unlock()
				if len(events) != 4 {
					t.Fatalf("%d responses observed, want 4", len(events))
				}
				for i, e := range events {
					if delta := e.Coding == coding && e.Dictionary; delta != (i > 0) {
						t.Errorf("poll %d went out as %q (dictionary %v)", i+1, e.Coding, e.Dictionary)
					}
					if i > 0 && e.Out > e.In/10 {
						t.Errorf("poll %d: %d bytes on the wire for %d plain; a delta should be far smaller", i+1, e.Out, e.In)
					}
				}
			})
		})
	}
}

func TestTransportRefusesDeltaForAnotherDictionary(t *testing.T) {
	for _, coding := range []string{"dcz", "dcb"} {
		t.Run(coding, func(t *testing.T) {
			srv := newDictServer(t, coding, `match="/*"`, "max-age=60")
			tr := newTransport(t, &squeeze.Transport{DictionaryStoreSize: 1 << 20})
			if _, err := poll(t, tr, srv.URL+"/a"); err != nil {
				t.Fatal(err)
			}
			srv.mu.Lock()
			srv.corrupt = true
			srv.mu.Unlock()
			_, err := poll(t, tr, srv.URL+"/a")
			if !errors.Is(err, squeeze.ErrInvalidBody) {
				t.Fatalf("error %v, want one matching ErrInvalidBody", err)
			}
		})
	}
}

// Responses that must not become dictionaries, and requests that must not
// offer one: the second request carries no Available-Dictionary.
func TestTransportOffersNoDictionary(t *testing.T) {
	tests := []struct {
		name    string
		useAs   string
		caching string
		second  string   // path of the second request
		hdr     []string // its header fields
		store   int64
	}{
		{"no Use-As-Dictionary", "", "max-age=60", "/api/x", nil, 1 << 20},
		{"no freshness", `match="/api/*"`, "", "/api/x", nil, 1 << 20},
		{"no-store", `match="/api/*"`, "no-store, max-age=60", "/api/x", nil, 1 << 20},
		{"no-cache", `match="/api/*"`, "no-cache, max-age=60", "/api/x", nil, 1 << 20},
		{"type other than raw", `match="/api/*", type=other`, "max-age=60", "/api/x", nil, 1 << 20},
		{"match not a string", `match=api`, "max-age=60", "/api/x", nil, 1 << 20},
		{"match of another origin", `match="https://elsewhere.example/api/*"`, "max-age=60", "/api/x", nil, 1 << 20},
		{"URLPattern syntax it does not match", `match="/api/:id"`, "max-age=60", "/api/x", nil, 1 << 20},
		{"match-dest for browsers", `match="/api/*", match-dest=("script")`, "max-age=60", "/api/x", nil, 1 << 20},
		{"path does not match", `match="/api/*"`, "max-age=60", "/other", nil, 1 << 20},
		{"caller set Accept-Encoding", `match="/api/*"`, "max-age=60", "/api/x", []string{"Accept-Encoding", "gzip"}, 1 << 20},
		{"dictionaries off", `match="/api/*"`, "max-age=60", "/api/x", nil, 0},
		{"larger than the store", `match="/api/*"`, "max-age=60", "/api/x", nil, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newDictServer(t, "dcz", tt.useAs, tt.caching)
			tr := newTransport(t, &squeeze.Transport{DictionaryStoreSize: tt.store})
			if _, err := poll(t, tr, srv.URL+"/api/first"); err != nil {
				t.Fatal(err)
			}
			if _, err := poll(t, tr, srv.URL+tt.second, tt.hdr...); err != nil {
				t.Fatal(err)
			}
			if h := srv.request(1); h.Get("Available-Dictionary") != "" || strings.Contains(h.Get("Accept-Encoding"), "dcz") {
				t.Fatalf("second request offered a dictionary: %v", h)
			}
		})
	}
}

// Age counts against max-age: a response already older than its max-age is
// not fresh, so it is not stored (no clock is involved).
func TestTransportStoresOnlyFreshResponses(t *testing.T) {
	for _, tt := range []struct {
		name    string
		caching []string
		stored  bool
	}{
		{"max-age", []string{"Cache-Control", "max-age=60"}, true},
		{"max-age used up by Age", []string{"Cache-Control", "max-age=60", "Age", "61"}, false},
		{"Expires after Date", []string{"Date", "Mon, 02 Jan 2006 15:04:05 GMT", "Expires", "Mon, 02 Jan 2006 16:04:05 GMT"}, true},
		{"Expires before Date", []string{"Date", "Mon, 02 Jan 2006 15:04:05 GMT", "Expires", "Mon, 02 Jan 2006 14:04:05 GMT"}, false},
		{"max-age wins over Expires", []string{"Cache-Control", "max-age=0", "Date", "Mon, 02 Jan 2006 15:04:05 GMT", "Expires", "Mon, 02 Jan 2006 16:04:05 GMT"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var offered []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				offered = append(offered, r.Header.Get("Available-Dictionary"))
				mu.Unlock()
				w.Header().Set("Use-As-Dictionary", `match="/*"`)
				for i := 0; i+1 < len(tt.caching); i += 2 {
					w.Header().Set(tt.caching[i], tt.caching[i+1])
				}
				_, _ = w.Write(pollJSON(1))
			}))
			defer srv.Close()
			tr := newTransport(t, &squeeze.Transport{DictionaryStoreSize: 1 << 20})
			for range 2 {
				if _, err := poll(t, tr, srv.URL+"/x"); err != nil {
					t.Fatal(err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if got := offered[1] != ""; got != tt.stored {
				t.Fatalf("stored: %v, want %v", got, tt.stored)
			}
		})
	}
}

// A body closed before its end is not stored: the dictionary would be cut.
func TestTransportStoresOnlyCompleteBodies(t *testing.T) {
	srv := newDictServer(t, "dcz", `match="/*"`, "max-age=60")
	tr := newTransport(t, &squeeze.Transport{DictionaryStoreSize: 1 << 20})
	resp := get(t, tr, "GET", srv.URL+"/a")
	_, _ = resp.Body.Read(make([]byte, 10))
	_ = resp.Body.Close()
	if _, err := poll(t, tr, srv.URL+"/a"); err != nil {
		t.Fatal(err)
	}
	if h := srv.request(1); h.Get("Available-Dictionary") != "" {
		t.Fatalf("a cut body became a dictionary: %v", h)
	}
}

// dictionaryOffers serves pollJSON(1), pollJSON(2)... each offered as a
// dictionary for its own path followed by anything, requests paths through
// a Transport with the given store size, and returns for each request its
// path and Available-Dictionary.
func dictionaryOffers(t *testing.T, store int64, paths ...string) []string {
	t.Helper()
	var mu sync.Mutex
	var offered []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		offered = append(offered, r.URL.Path+" "+r.Header.Get("Available-Dictionary"))
		w.Header().Set("Use-As-Dictionary", fmt.Sprintf(`match=%q`, r.URL.Path+"*"))
		w.Header().Set("Cache-Control", "max-age=60")
		_, _ = w.Write(pollJSON(len(offered)))
	}))
	defer srv.Close()
	tr := newTransport(t, &squeeze.Transport{DictionaryStoreSize: store})
	for _, p := range paths {
		if _, err := poll(t, tr, srv.URL+p); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return offered
}

func TestTransportDictionaryStoreIsLRUWithinBudget(t *testing.T) {
	size := int64(len(pollJSON(1)))
	// Room for four, each within the quarter of the budget one may take.
	got := dictionaryOffers(t, 4*size+8<<10, "/a", "/b", "/c", "/d", "/a", "/e", "/b")
	// /a, /b, /c, /d stored (1 to 4); /a offers 1 and is replaced by 5;
	// /e evicts the least recently used, /b; /b then offers nothing.
	want := []string{"/a ", "/b ", "/c ", "/d ", "/a " + availableFor(pollJSON(1)), "/e ", "/b "}
	if !slices.Equal(got, want) {
		t.Errorf("requests offered\n%q\nwant\n%q", got, want)
	}
}

func TestTransportOffersLongestMatchingPattern(t *testing.T) {
	got := dictionaryOffers(t, 1<<20, "/a", "/ab", "/abc", "/ax")
	// /ab matches only /a* (1); /abc matches /a* and /ab* (2): the
	// longer wins; /ax matches only /a*.
	want := []string{"/a ", "/ab " + availableFor(pollJSON(1)), "/abc " + availableFor(pollJSON(2)), "/ax " + availableFor(pollJSON(1))}
	if !slices.Equal(got, want) {
		t.Errorf("requests offered\n%q\nwant\n%q", got, want)
	}
}

// offerServer answers every request with a small body, and a request whose
// query has match=P offers it as a dictionary for pattern P (id=I adds an
// id; both printable ASCII without '"' or '\\'). It records the Host and Available-Dictionary of each request.
type offerServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // "host path available-dictionary"
}

func newOfferServer(t *testing.T) *offerServer {
	t.Helper()
	s := new(offerServer)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Host+" "+r.URL.Path+" "+r.Header.Get("Available-Dictionary"))
		s.mu.Unlock()
		q := r.URL.Query()
		if q.Has("match") {
			field := `match="` + q.Get("match") + `"`
			if q.Has("id") {
				field += `, id="` + q.Get("id") + `"`
			}
			w.Header().Set("Use-As-Dictionary", field)
			w.Header().Set("Cache-Control", "max-age=3600")
		}
		_, _ = w.Write([]byte("dictionary of " + r.Host + r.URL.Path))
	}))
	t.Cleanup(s.Close)
	return s
}

// offered reports whether the last request s saw carried an
// Available-Dictionary.
func (s *offerServer) offered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := s.seen[len(s.seen)-1]
	return !strings.HasSuffix(last, " ")
}

// fetchAs GETs rawURL through tr with Host set to host (none when empty) and
// reads the body to its end, so a dictionary it offers is stored.
func fetchAs(t *testing.T, tr http.RoundTripper, host, rawURL string) {
	t.Helper()
	req, err := http.NewRequest("GET", rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readAll(t, resp); err != nil {
		t.Fatal(err)
	}
}

// A dictionary belongs to the origin the request named: its scheme and
// Request.Host when set (a virtual host reached through another address),
// the URL's host otherwise, compared in lower case without the default
// port. One virtual host's dictionary is never offered to another.
func TestClientDictionaryOriginIsTheHostTheRequestNames(t *testing.T) {
	tests := []struct {
		name           string
		storeHost      string // Host of the request whose response is stored
		match          string
		askHost        string // Host of the later request
		wantDictionary bool
	}{
		{"no Host either time", "", "/*", "", true},
		{"the same virtual host", "victim.example", "/*", "victim.example", true},
		{"another virtual host at the same address", "victim.example", "/*", "attacker.example", false},
		{"a virtual host, then the address itself", "victim.example", "/*", "", false},
		{"the address, then a virtual host", "", "/*", "attacker.example", false},
		{"case and the default port do not count", "Victim.Example:80", "/*", "victim.example", true},
		{"another port is another origin", "victim.example", "/*", "victim.example:8080", false},
		{"a full-URL pattern of the named host", "victim.example", "http://victim.example/*", "victim.example", true},
		{"a full-URL pattern of the address is not the named host's", "victim.example", "http://ADDR/*", "victim.example", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newOfferServer(t)
			tr := newTransport(t, &squeeze.Transport{DictionaryStoreSize: 1 << 20})
			match := strings.ReplaceAll(tt.match, "ADDR", strings.TrimPrefix(srv.URL, "http://"))
			fetchAs(t, tr, tt.storeHost, srv.URL+"/page?"+url.Values{"match": {match}}.Encode())
			fetchAs(t, tr, tt.askHost, srv.URL+"/other")
			if got := srv.offered(); got != tt.wantDictionary {
				t.Errorf("stored for Host %q, asked for Host %q: Available-Dictionary sent %v, want %v (requests %q)",
					tt.storeHost, tt.askHost, got, tt.wantDictionary, srv.seen)
			}
		})
	}
}

// A match pattern over 2048 bytes, as written or once resolved against the
// response's URL, and an id over 1024 characters are refused: nothing is
// stored, so nothing is offered.
func TestClientDictionaryStoreRefusesLongPatternsAndIds(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name           string
		storePath      string
		match, id      string
		askPath        string
		wantDictionary bool
	}{
		{"a 2048-byte pattern", "/p", "/" + long(2046) + "*", "", "/" + long(2046) + "x", true},
		{"a 2049-byte pattern", "/p", "/" + long(2047) + "*", "", "/" + long(2047) + "x", false},
		{"a 64 KiB pattern", "/p", "/" + long(64<<10) + "*", "", "/" + long(64<<10) + "x", false},
		{"a relative pattern of 2047 bytes resolved to 2050", "/d/p", long(2046) + "*", "", "/d/" + long(2046) + "x", false},
		{"a 1024-character id", "/p", "/*", long(1024), "/x", true},
		{"a 1025-character id", "/p", "/*", long(1025), "/x", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newOfferServer(t)
			tr := newTransport(t, &squeeze.Transport{DictionaryStoreSize: 1 << 20})
			q := url.Values{"match": {tt.match}}
			if tt.id != "" {
				q.Set("id", tt.id)
			}
			fetchAs(t, tr, "", srv.URL+tt.storePath+"?"+q.Encode())
			fetchAs(t, tr, "", srv.URL+tt.askPath)
			if got := srv.offered(); got != tt.wantDictionary {
				t.Errorf("Available-Dictionary sent %v, want %v", got, tt.wantDictionary)
			}
		})
	}
}

// An origin keeps at most 64 dictionaries: a 65th drops that origin's least
// recently used one, and no other origin's.
func TestClientDictionaryStoreKeepsAtMost64PerOrigin(t *testing.T) {
	a, b := newOfferServer(t), newOfferServer(t)
	tr := newTransport(t, &squeeze.Transport{DictionaryStoreSize: 1 << 30})
	fetchAs(t, tr, "", b.URL+"/b?match=/b*")
	for i := range 65 {
		fetchAs(t, tr, "", fmt.Sprintf("%s/d%d?match=/d%d*", a.URL, i, i))
	}
	for _, tt := range []struct {
		srv            *offerServer
		path           string
		wantDictionary bool
	}{
		{a, "/d0x", false}, // the least recently used of a's 65
		{a, "/d1x", true},
		{a, "/d64x", true},
		{b, "/bx", true}, // older than all of a's, but another origin's
	} {
		fetchAs(t, tr, "", tt.srv.URL+tt.path)
		if got := tt.srv.offered(); got != tt.wantDictionary {
			t.Errorf("%s: Available-Dictionary sent %v, want %v", tt.path, got, tt.wantDictionary)
		}
	}
}
