package squeeze_test

import (
	"net/http"
	"runtime"
	"strconv"
	"testing"

	"github.com/squeezehttp/squeeze"
)

// Upgrades keep no best-level encoder once no upgrade waits, and run within
// the cache's budget: after many entries of every coding were upgraded on
// a machine with many cores, the heap is back near what it was before the
// upgrades, within the cache's size, measured in the same run.
func TestCacheUpgradesGiveTheirEncodersBack(t *testing.T) {
	if squeeze.RaceEnabled {
		t.Skip("the race detector changes heap sizes")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(16))
	const maxBytes = 8 << 20
	c := newCache(t, maxBytes)
	codings := []string{"zstd", "br", "gzip"}
	const bodies = 20
	h := newMiddleware(t, squeeze.WithCache(c), squeeze.WithEncodings(codings...)).Handler(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			i, _ := strconv.Atoi(r.URL.Query().Get("i"))
			writeText("text/plain", textBody(100+i, 16<<10), 0)(w, r)
		}))
	get := func(i int, coding string) {
		req := request("GET", coding)
		req.URL.RawQuery = "i=" + strconv.Itoa(i)
		res, raw := record(h, req)
		checkBody(t, res.Header, raw, textBody(100+i, 16<<10))
	}
	// A store and two hits each: one hit short of an upgrade.
	for range 3 {
		for i := range bodies {
			for _, coding := range codings {
				get(i, coding)
			}
		}
	}
	before := heapAfterGC()
	for i := range bodies {
		for _, coding := range codings {
			get(i, coding) // the third hit queues an upgrade
		}
	}
	squeeze.WaitUpgrades(c)
	after := heapAfterGC()
	s := c.Stats()
	const MiB = 1 << 20
	t.Logf("heap %+.1f MiB over %d upgrades (%d dropped) at GOMAXPROCS 16, %d MiB cache; %+v",
		float64(after-before)/MiB, s.Upgrades, s.UpgradesDropped, maxBytes/MiB, s)
	if s.Upgrades == 0 {
		t.Errorf("stats %+v: no upgrade", s)
	}
	if after-before > maxBytes {
		t.Errorf("the heap grew %.1f MiB over the upgrades; the cache holds at most %d MiB", float64(after-before)/MiB, maxBytes/MiB)
	}
	if s.Bytes != squeeze.CacheEntriesWeight(c) {
		t.Errorf("Bytes %d with no upgrade under way; the entries weigh %d", s.Bytes, squeeze.CacheEntriesWeight(c))
	}
}
