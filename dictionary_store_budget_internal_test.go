package squeeze

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	brrr "github.com/molecule-man/go-brrr"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// The dictionary store's budget (WithDictionaryStoreSize) holds all the
// store keeps: the bytes of each dictionary, its entry, and the tables a dcb
// encoder prepares for it.

// heldHeap returns the live heap after two collections, so that idle pooled
// encoders (sync.Pool keeps them one collection more) are gone.
func heldHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// apiStore returns a Middleware remembering every /api/ response, with a
// dictionary budget of budget bytes and codings as WithEncodings takes them
// (nil for the default), and a handler that sends body(q) for ?q=.
func apiStore(t *testing.T, budget int64, codings []string, body func(q string) []byte) (*Middleware, http.Handler) {
	t.Helper()
	opts := []Option{WithDictionaryMatch("/api/*"), WithDictionaryStoreSize(budget)}
	if codings != nil {
		opts = append(opts, WithEncodings(codings...))
	}
	m, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m, m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=3600") // fresh, to be kept as a dictionary
		_, _ = w.Write(body(r.URL.Query().Get("q")))
	}))
}

// serveAPI serves GET /api/x?q=q with Accept-Encoding ae and, unless dict
// is nil, Available-Dictionary naming dict.
func serveAPI(h http.Handler, q, ae string, dict []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/api/x?q="+q, nil)
	req.Header.Set("Accept-Encoding", ae)
	if dict != nil {
		sum := sha256.Sum256(dict)
		req.Header.Set("Available-Dictionary", ":"+base64.StdEncoding.EncodeToString(sum[:])+":")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// paddedJSON returns a JSON body of about 2 KiB naming q: a response that
// differs for every q, as an API's do. The padding is the same for every
// q but not repetitive, so that a delta against another q's body is far
// smaller than the body in a plain coding.
func paddedJSON(q string) []byte {
	return []byte(`{"q":"` + q + `","pad":"` + jsonPad + `"}`)
}

// jsonPad is 1,920 hex digits of a fixed pseudo-random sequence.
var jsonPad = func() string {
	var b strings.Builder
	x := uint32(2463534242)
	for range 240 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		fmt.Fprintf(&b, "%08x", x)
	}
	return b.String()
}()

// checkStoreAccounts checks that the store's cost is the sum of its
// dictionaries' and within the budget.
func checkStoreAccounts(t *testing.T, s *dictStore) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.remembered
	var sum int64
	for hash := range c.All() {
		sum += c.Weight(hash)
	}
	if sum != c.Used() || c.Used()+c.Reserved() > c.Budget() {
		t.Errorf("store charges %d bytes for dictionaries costing %d, against a budget of %d", c.Used(), sum, c.Budget())
	}
}

// A hundred distinct 2 KiB bodies on a dictionary path, then one dcb
// request naming each: every dictionary's go-brrr tables (265 KiB each) are
// charged to the store, so it holds the tables of the three it has room
// for, not a hundred against a 256 KiB budget.
func TestDictionaryStoreBudgetHoldsDCBTables(t *testing.T) {
	const budget = 1 << 20
	const n = 100 // 100 x ~2 KiB and their entries, inside the budget
	var dcb int
	grew := testtool.LeastWithin(2*budget, func() int64 {
		m, h := apiStore(t, budget, nil, paddedJSON)
		for i := range n {
			serveAPI(h, fmt.Sprint(i), "gzip", nil)
		}
		before := heldHeap()
		dcb = 0
		for i := range n {
			q := fmt.Sprint(i)
			if serveAPI(h, q, "dcb", paddedJSON(q)).Header().Get("Content-Encoding") == DCB {
				dcb++
			}
		}
		grew := heldHeap() - before
		checkStoreAccounts(t, m.dicts)
		return grew
	})
	t.Logf("%d dcb responses; the heap grew by %d bytes against a %d-byte budget", dcb, grew, budget)
	if dcb == 0 {
		t.Fatal("no dcb responses: a 2 KiB dictionary's tables fit a 1 MiB budget")
	}
	if grew > 2*budget {
		t.Errorf("the heap grew by %.1f MiB after %d dcb requests against a %d KiB dictionary store: dcb tables are not charged to it",
			float64(grew)/(1<<20), n, budget>>10)
	}
}

// A flood of tiny distinct bodies on a dictionary path: each remembered
// body costs its entry too, so the store keeps some 250 of them within a
// 256 KiB budget, not the 13,000 their bytes alone would allow.
func TestDictionaryStoreBudgetHoldsEntriesOfTinyBodies(t *testing.T) {
	const budget = 256 << 10
	var stored int
	grew := testtool.LeastWithin(2*budget, func() int64 {
		m, h := apiStore(t, budget, nil, func(q string) []byte { return []byte(`{"q":"` + q + `"}`) })
		before := heldHeap()
		for i := range 12000 {
			serveAPI(h, fmt.Sprintf("%010d", i), "gzip", nil) // 19-byte bodies
		}
		grew := heldHeap() - before
		checkStoreAccounts(t, m.dicts)
		m.dicts.mu.Lock()
		stored = m.dicts.remembered.Len()
		m.dicts.mu.Unlock()
		return grew
	})
	t.Logf("%d dictionaries stored; the heap grew by %d bytes against a %d-byte budget", stored, grew, budget)
	if grew > 2*budget {
		t.Errorf("the heap grew by %.1f MiB for %d tiny dictionaries against a %d KiB store: their entries are not charged",
			float64(grew)/(1<<20), stored, budget>>10)
	}
}

// A server preferring dcb whose budget cannot hold a dictionary's tables
// sends dcz to a client naming both, and no delta to one naming dcb alone.
func TestDictionaryDCBTablesBeyondTheBudgetFallBackToDCZ(t *testing.T) {
	const budget = 64 << 10 // a 2 KiB dictionary's tables are 265 KiB
	m, h := apiStore(t, budget, []string{DCB, DCZ, Brotli}, paddedJSON)
	serveAPI(h, "1", "br", nil)
	for _, tc := range []struct{ ae, want string }{{"dcb, dcz, br", DCZ}, {"dcb, br", Brotli}} {
		if ce := serveAPI(h, "2", tc.ae, paddedJSON("1")).Header().Get("Content-Encoding"); ce != tc.want {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q, want %q", tc.ae, ce, tc.want)
		}
	}
	checkStoreAccounts(t, m.dicts)
	if d := m.dicts.lookup(sha256.Sum256(paddedJSON("1"))); d == nil {
		t.Error("the dictionary was evicted for tables that could never fit")
	}
}

// dcbTableBytes charges at least what go-brrr keeps for a prepared
// dictionary of incompressible bytes, the most it keeps for that size.
func TestDCBTableBytesCoversThePreparedDictionary(t *testing.T) {
	if testing.Short() {
		t.Skip("a heap measurement of prepared dictionaries up to 3 MiB: it runs without -short (.ci/run runs it without -race)")
	}
	for _, n := range []int{5, 2 << 10, 100 << 10, 1 << 20, 3 << 20} {
		data := make([]byte, n)
		_, _ = rand.NewChaCha8([32]byte{byte(n), byte(n >> 8), byte(n >> 16)}).Read(data)
		charged := dcbTableBytes(n)
		// Many copies of a small dictionary, so that what other tests'
		// goroutines allocate meanwhile is small against what is measured.
		copies := max(4, (4<<20)/max(int(charged), 1))
		held := testtool.LeastWithin(int64(copies)*(charged+charged/50+1024), func() int64 {
			keep := make([]*brrr.PreparedDictionary, copies)
			before := heldHeap()
			for i := range keep {
				var err error
				if keep[i], err = brrr.PrepareDictionary(data); err != nil {
					t.Fatal(err)
				}
			}
			grew := heldHeap() - before
			runtime.KeepAlive(keep)
			return grew
		}) / int64(copies)
		t.Logf("%d-byte dictionary: go-brrr holds %d bytes, charged %d", n, held, charged)
		if held > charged+charged/50+1024 {
			t.Errorf("%d-byte dictionary: go-brrr holds %d bytes of tables, dcbTableBytes charges %d", n, held, charged)
		}
	}
}
