package squeeze_test

import (
	"bytes"
	"net/http"
	"runtime"
	"strconv"
	"testing"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/writers"
)

// deltaServer is a Middleware with a Cache that remembers /js/ bodies as
// dictionaries and serves files from it whole (a buffer of 256 KiB), with
// codings in the order given, at fast levels (br 2, zstd 1): levels that an
// upgrade's fallback levels improve on too.
func deltaServer(t *testing.T, c *squeeze.Cache, files map[string][]byte, codings ...string) http.Handler {
	t.Helper()
	return newMiddleware(t, squeeze.WithCache(c, squeeze.CacheTrustedETags()), squeeze.WithBufferSize(256<<10),
		squeeze.WithLevel(squeeze.Brotli, 2), squeeze.WithLevel(squeeze.Zstd, 1),
		squeeze.WithDictionaryMatch("/js/*"), squeeze.WithEncodings(codings...)).Handler(scripts(files))
}

// A delta hit often is upgraded like any other entry: served again after
// the upgrade, it is the delta at the coding's best level against the same
// dictionary, byte for byte, smaller than the first, and decodes with the
// dictionary to the same bytes. Real release pairs from npm, whole and
// streamed (found by ETag).
func TestCacheUpgradesDeltasToTheBestLevel(t *testing.T) {
	for _, rel := range corpus.Releases(t) {
		for _, coding := range []string{squeeze.DCB, squeeze.DCZ} {
			for _, streamed := range []bool{false, true} {
				t.Run(rel.Name+"/"+coding+"/streamed="+strconv.FormatBool(streamed), func(t *testing.T) {
					c := newCache(t, 256<<20)
					opts := []squeeze.Option{squeeze.WithCache(c, squeeze.CacheTrustedETags()),
						squeeze.WithDictionaryMatch("/js/*"), squeeze.WithEncodings(coding, squeeze.Zstd)}
					if !streamed {
						opts = append(opts, squeeze.WithBufferSize(256<<10))
					}
					h := newMiddleware(t, opts...).Handler(scripts(map[string][]byte{"/js/old.js": rel.Old, "/js/new.js": rel.New}))
					serveAt(h, "/js/old.js", chromeAE)
					var first []byte
					for i := range 4 { // a store and three hits: the third queues the upgrade
						rec := serveAt(h, "/js/new.js", chromeAE, "Available-Dictionary", availableFor(rel.Old))
						if ce := rec.Header().Get("Content-Encoding"); ce != coding {
							t.Fatalf("Content-Encoding %q, want %s", ce, coding)
						}
						decodeDelta(t, rec.Header(), rec.Body.Bytes(), rel.Old, rel.New)
						if i == 0 {
							first = bytes.Clone(rec.Body.Bytes())
						}
					}
					if !waitFor(func() bool { return c.Stats().Upgrades == 1 }) {
						t.Fatalf("no upgrade after 3 hits: %+v", c.Stats())
					}
					rec := serveAt(h, "/js/new.js", chromeAE, "Available-Dictionary", availableFor(rel.Old))
					got := rec.Body.Bytes()
					decodeDelta(t, rec.Header(), got, rel.Old, rel.New)
					best, err := squeeze.BestDelta(coding, rel.Old, rel.New)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, best) {
						t.Errorf("after the upgrade: %d bytes, not the %d of the best-level delta", len(got), len(best))
					}
					if len(got) >= len(first) {
						t.Errorf("after the upgrade: %d bytes, want fewer than the %d before", len(got), len(first))
					}
					if cl := rec.Header().Get("Content-Length"); cl != strconv.Itoa(len(got)) {
						t.Errorf("after the upgrade: Content-Length %s, want %d", cl, len(got))
					}
					t.Logf("%s %s: %d bytes at the default level, %d at the best (plain %d)", rel.Name, coding, len(first), len(got), len(rel.New))
				})
			}
		}
	}
}

// Delta upgrades hold their encoders, with the dictionary's tables, within
// the cache's budget, and give them back: after many deltas against many
// dictionaries were upgraded, the heap is back near what it was before,
// within the cache's size, and Bytes is the entries' weight. A cache too
// small for the best level's encoder still upgrades, at a lesser level. The
// baseline is the heap of the same run before the upgrades. Six builds
// of a real release pair from npm.
func TestCacheDeltaUpgradesStayWithinTheBudget(t *testing.T) {
	if squeeze.RaceEnabled {
		t.Skip("the race detector changes heap sizes")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(16))
	const MiB = 1 << 20
	for _, tc := range []struct {
		coding   string
		maxBytes int64
	}{
		{squeeze.DCB, 64 * MiB}, {squeeze.DCZ, 64 * MiB},
		{squeeze.DCB, 24 * MiB}, {squeeze.DCZ, 24 * MiB}, // no room for br 11 or zstd's best: fallback levels
	} {
		t.Run(tc.coding+"/"+strconv.Itoa(int(tc.maxBytes/MiB))+"MiB", func(t *testing.T) {
			c := newCache(t, tc.maxBytes)
			const n = 6
			files := map[string][]byte{}
			rel := corpus.Releases(t)[0]
			for i := range n { // n distinct pairs of real releases
				tag := []byte("/* build " + strconv.Itoa(i) + " */\n")
				files["/js/a"+strconv.Itoa(i)+".v1.js"] = append(bytes.Clone(tag), rel.Old...)
				files["/js/a"+strconv.Itoa(i)+".v2.js"] = append(bytes.Clone(tag), rel.New...)
			}
			h := deltaServer(t, c, files, tc.coding, squeeze.Zstd, squeeze.Brotli)
			get := func(i int) {
				name := "/js/a" + strconv.Itoa(i)
				rec := serveAt(h, name+".v2.js", chromeAE, "Available-Dictionary", availableFor(files[name+".v1.js"]))
				if ce := rec.Header().Get("Content-Encoding"); ce != tc.coding {
					t.Fatalf("Content-Encoding %q, want %s", ce, tc.coding)
				}
				decodeDelta(t, rec.Header(), rec.Body.Bytes(), files[name+".v1.js"], files[name+".v2.js"])
			}
			for i := range n {
				serveAt(h, "/js/a"+strconv.Itoa(i)+".v1.js", chromeAE)
			}
			for range 3 {
				for i := range n {
					get(i)
				}
			}
			before := heapAfterGC()
			for i := range n {
				get(i) // the third hit queues an upgrade
				if s := c.Stats(); s.Bytes > s.MaxBytes {
					t.Fatalf("Bytes %d over MaxBytes %d", s.Bytes, s.MaxBytes)
				}
			}
			squeeze.WaitUpgrades(c)
			after := heapAfterGC()
			s := c.Stats()
			t.Logf("heap %+.1f MiB over %d delta upgrades (%d dropped), %d MiB cache; %+v",
				float64(after-before)/MiB, s.Upgrades, s.UpgradesDropped, tc.maxBytes/MiB, s)
			if s.Upgrades == 0 {
				t.Errorf("stats %+v: no delta upgrade", s)
			}
			if after-before > tc.maxBytes {
				t.Errorf("the heap grew %.1f MiB over the upgrades; the cache holds at most %d MiB", float64(after-before)/MiB, tc.maxBytes/MiB)
			}
			if s.Bytes != squeeze.CacheEntriesWeight(c) {
				t.Errorf("Bytes %d with no upgrade under way; the entries weigh %d", s.Bytes, squeeze.CacheEntriesWeight(c))
			}
			for i := range n {
				get(i)
			}
		})
	}
}

// BenchmarkDeltaLevels encodes real release pairs from npm as deltas
// against the older release, at the Middleware's default level and at the
// level the cache upgrades to: the size of each (B/delta) and the CPU of
// one encode.
func BenchmarkDeltaLevels(b *testing.B) {
	for _, rel := range corpus.Releases(b) {
		for _, tc := range []struct {
			coding, codec string
		}{{squeeze.DCB, squeeze.Brotli}, {squeeze.DCZ, squeeze.Zstd}} {
			r, err := writers.Levels(tc.codec)
			if err != nil {
				b.Fatal(err)
			}
			for _, level := range []int{r.Default, squeeze.UpgradeLevel(tc.coding)} {
				b.Run(rel.Name+"/"+tc.coding+"-"+strconv.Itoa(level), func(b *testing.B) {
					var out []byte
					b.SetBytes(int64(len(rel.New)))
					for b.Loop() {
						if out, err = squeeze.EncodeDelta(tc.coding, level, rel.Old, rel.New); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(len(out)), "B/delta")
				})
			}
		}
	}
}
