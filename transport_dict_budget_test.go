package squeeze_test

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// The Transport's dictionary store holds no more heap than
// DictionaryStoreSize, however many origins give it dictionaries and however
// their patterns are written.

// A server (or many virtual hosts of one attacker, *.evil.example) that
// gives each origin one tiny dictionary: the heap the store holds must stay
// within DictionaryStoreSize.
func TestClientDictionaryStoreOneDictionaryPerOriginWithinBudget(t *testing.T) {
	clientStoreHeapWithinBudget(t, func(r *http.Request) string { return `match="/*"` })
}

// A full-URL match of the request's own origin whose user information runs to
// 2 KiB: the stored pattern is "/*", charged 2 bytes, and must not be a
// substring that keeps the whole parsed value alive beyond
// DictionaryStoreSize.
func TestClientDictionaryPatternFromALongURLStaysWithinBudget(t *testing.T) {
	clientStoreHeapWithinBudget(t, func(r *http.Request) string {
		return `match="https://` + strings.Repeat("u", 1990) + "@" + r.Host + `/*"`
	})
}

// clientStoreHeapWithinBudget has 40,000 origins each give the Transport one
// tiny dictionary with the Use-As-Dictionary value useAs returns, and fails
// if the heap grows by more than DictionaryStoreSize.
func clientStoreHeapWithinBudget(t *testing.T, useAs func(*http.Request) string) {
	if squeeze.RaceEnabled {
		// The race detector's shadow memory and its sync.Pool, which
		// drops Puts at random, make the heap say nothing of the store.
		t.Skip("heap growth is not the store's under -race")
	}
	const budget = 4 << 20
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		h := http.Header{}
		h.Set("Use-As-Dictionary", useAs(r))
		h.Set("Cache-Control", "max-age=3600")
		h.Set("Content-Type", "text/plain")
		return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader("x")), Request: r, ContentLength: 1}, nil
	})
	// The heap is every goroutine's, and other tests' leftovers may hold
	// more at the end than at the start: while over the budget, a new
	// Transport is measured again (up to three times in all), and the
	// least growth is the store's own.
	grew := testtool.LeastWithin(budget, func() int64 { return storeHeapGrowth(t, base, budget) })
	t.Logf("heap grew %d bytes against a %d-byte budget (%.2fx)", grew, budget, float64(grew)/budget)
	if grew > budget {
		t.Errorf("one dictionary per origin: the store holds %.2f MiB of heap against a %.0f MiB DictionaryStoreSize", float64(grew)/(1<<20), float64(budget)/(1<<20))
	}
}

// storeHeapGrowth returns how much the live heap grows while 40,000
// origins each give a new Transport over base, with a dictionary store of
// budget bytes, one tiny dictionary.
func storeHeapGrowth(t *testing.T, base http.RoundTripper, budget int64) int64 {
	tr := &squeeze.Transport{Base: base, DictionaryStoreSize: budget}
	get := func(i int) {
		req, _ := http.NewRequest("GET", "https://10.0.0.1/p", nil)
		req.Host = fmt.Sprintf("h%07d.evil.example", i)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	get(-1)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range 40000 {
		get(i)
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(tr)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc)
}
