package bench

import (
	"container/list"
	"crypto/sha256"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/maypok86/otter/v2"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/pool"
)

// cacheBodies are the sizes the cache is measured at: a 2 KiB API answer,
// a 16 KiB page and the whole Go specification (about 286 KiB, streamed,
// found only by its strong ETag, and only with squeeze.CacheTrustedETags).
func cacheBodies(c *Corpus) []Body {
	return []Body{c.SmallJSON, c.HTML[1], c.HTML[len(c.HTML)-1]}
}

// cachedImpl returns a handler serving body through squeeze with a cache,
// at the floor's coding and level: without an ETag if key is "content";
// with a strong ETag if key is "validator" (a body within the buffer is
// still found by content, a stream is not cached); and with the tag and
// squeeze.CacheTrustedETags if key is "trusted".
func cachedImpl(tb testing.TB, coding string, body Body, key string) (http.Handler, *squeeze.Cache) {
	tb.Helper()
	c, err := squeeze.NewCache(64 << 20)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	var cacheOpts []squeeze.CacheOption
	if key == "trusted" {
		cacheOpts = append(cacheOpts, squeeze.CacheTrustedETags())
	}
	m, err := squeeze.New(squeeze.WithCache(c, cacheOpts...), squeeze.WithEncodings(coding), squeeze.WithLevel(coding, Level(coding)))
	if err != nil {
		tb.Fatal(err)
	}
	ct, tag := []string{body.ContentType}, []string{`"spec-1"`}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header()["Content-Type"] = ct
		if key != "content" {
			w.Header()["Etag"] = tag
		}
		must(w.Write(body.Data))
	}))
	if _, err := CheckResponse(h, coding, body.Data); err != nil {
		tb.Fatalf("cached squeeze does not round-trip: %v", err)
	}
	return h, c
}

// settle serves h until its entry has been upgraded, bounded; a response
// the cache does not store has nothing to settle.
func settle(tb testing.TB, h http.Handler, c *squeeze.Cache, coding string) {
	tb.Helper()
	w, r := NewResponseWriter(false), NewRequest(coding)
	for i := 0; c.Stats().Upgrades == 0; i++ {
		if i == 3000 {
			tb.Fatalf("no upgrade after %d hits: %+v", i, c.Stats())
		}
		if i == 10 && c.Stats().Stores == 0 {
			return
		}
		w.Reset()
		h.ServeHTTP(w, r)
		time.Sleep(time.Millisecond)
	}
}

// cacheKeys returns the ways body can be served: by content only while it
// fits in the buffer.
func cacheKeys(body Body) []string {
	if len(body.Data) > 32<<10 {
		return []string{"validator", "trusted"}
	}
	return []string{"content", "validator", "trusted"}
}

// BenchmarkCacheVersusFloor serves each body alternately through the floor
// (a fresh encode at the same coding and level) and through squeeze with a
// warm, upgraded cache, paired as in BenchmarkVersusFloor. x-floor is the
// cache's speed-up: responses per second over the floor's.
func BenchmarkCacheVersusFloor(b *testing.B) {
	eachCachedCase(b, func(b *testing.B, floor *Impl, body Body, h http.Handler) {
		cached := &Impl{Name: "cached", Coding: floor.Coding, wrap: func(http.Handler) http.Handler { return h }}
		benchVersusFloor(b, []*Impl{floor, cached}, body, false)
	})
}

// eachCachedCase runs bench for every coding, cache body and key, with the
// floor at that coding and a handler whose cache holds the body, warm and
// upgraded.
func eachCachedCase(b *testing.B, bench func(b *testing.B, floor *Impl, body Body, h http.Handler)) {
	corpus := loadCorpus(b)
	for _, coding := range Codings() {
		fp, err := pool.NewEncoders(coding, Level(coding))
		if err != nil {
			b.Fatal(err)
		}
		b.Run("coding="+coding, func(b *testing.B) {
			for _, body := range cacheBodies(corpus) {
				for _, key := range cacheKeys(body) {
					b.Run("body="+body.Name+"/key="+key, func(b *testing.B) {
						h, c := cachedImpl(b, coding, body, key)
						settle(b, h, c, coding)
						bench(b, &Impl{Name: "floor", Coding: coding, floor: fp}, body, h)
					})
				}
			}
		})
	}
}

// BenchmarkCacheWire reports the bytes a cached response puts on the wire
// at the Middleware's level (the first response) and after the background
// upgrade to the coding's best level.
func BenchmarkCacheWire(b *testing.B) {
	corpus := loadCorpus(b)
	for _, coding := range Codings() {
		b.Run("coding="+coding, func(b *testing.B) {
			for _, body := range cacheBodies(corpus) {
				b.Run("body="+body.Name, func(b *testing.B) {
					h, c := cachedImpl(b, coding, body, cacheKeys(body)[len(cacheKeys(body))-1])
					before, err := CheckResponse(h, coding, body.Data)
					if err != nil {
						b.Fatal(err)
					}
					settle(b, h, c, coding)
					var after Result
					for b.Loop() {
						if after, err = CheckResponse(h, coding, body.Data); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(len(body.Data)), "plain-B")
					b.ReportMetric(float64(before.Wire), "before-B")
					b.ReportMetric(float64(after.Wire), "after-B")
				})
			}
		})
	}
}

// BenchmarkContentHash is what a lookup by content costs: SHA-256 (the
// choice) and maphash (rejected, see cache.go) of the 2 and 16 KiB bodies,
// to set against BenchmarkCacheVersusFloor's floor-sec/op, the encode a hit
// saves.
func BenchmarkContentHash(b *testing.B) {
	corpus := loadCorpus(b)
	seed := maphash.MakeSeed()
	for _, body := range cacheBodies(corpus)[:2] {
		b.Run("body="+body.Name+"/hash=sha256", func(b *testing.B) {
			b.SetBytes(int64(len(body.Data)))
			for b.Loop() {
				_ = sha256.Sum256(body.Data)
			}
		})
		b.Run("body="+body.Name+"/hash=maphash", func(b *testing.B) {
			b.SetBytes(int64(len(body.Data)))
			for b.Loop() {
				_ = maphash.Bytes(seed, body.Data)
			}
		})
	}
}

// trace is a request stream over keys with weights: a Zipf-distributed
// popular set, and optionally a scan of one-hit wonders mixed in.
type trace struct {
	keys    []int
	weights map[int]uint32
}

func zipfTrace(n, keys int, scan bool) trace {
	r := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(r, 1.01, 1, uint64(keys-1))
	t := trace{weights: map[int]uint32{}}
	next := keys
	for i := range n {
		k := int(z.Uint64())
		if scan && i%4 == 0 { // a quarter of the requests are never seen again
			k, next = next, next+1
		}
		if _, ok := t.weights[k]; !ok {
			t.weights[k] = uint32(512 + r.IntN(8<<10))
		}
		t.keys = append(t.keys, k)
	}
	return t
}

// otterRatio is the hit ratio of otter configured as cache.go configures
// it: bounded by weight, maintenance on the caller.
func otterRatio(t trace, capacity uint64) float64 {
	c := otter.Must(&otter.Options[int, uint32]{
		MaximumWeight: capacity,
		Weigher:       func(_ int, w uint32) uint32 { return w },
		Executor:      func(fn func()) { fn() },
	})
	hits := 0
	for _, k := range t.keys {
		if _, ok := c.GetIfPresent(k); ok {
			hits++
		} else {
			c.Set(k, t.weights[k])
		}
	}
	return float64(hits) / float64(len(t.keys))
}

// lruRatio is the hit ratio of a plain weight-bounded LRU.
func lruRatio(t trace, capacity uint64) float64 {
	order := list.New()
	at := map[int]*list.Element{}
	var size uint64
	hits := 0
	for _, k := range t.keys {
		if e, ok := at[k]; ok {
			hits++
			order.MoveToFront(e)
			continue
		}
		w := uint64(t.weights[k])
		for size+w > capacity && order.Len() > 0 {
			old := order.Remove(order.Back()).(int)
			delete(at, old)
			size -= uint64(t.weights[old])
		}
		at[k] = order.PushFront(k)
		size += w
	}
	return float64(hits) / float64(len(t.keys))
}

// TestCacheHitRatio prints the hit ratio of otter's W-TinyLFU, the cache's
// eviction, against plain LRU on Zipf traces with and without a scan of
// one-hit wonders, at cache sizes from 1% to 10% of the distinct bytes. It
// fails if W-TinyLFU is worse than LRU at any of them.
func TestCacheHitRatio(t *testing.T) {
	const requests, keys = 400_000, 50_000
	for _, scan := range []bool{false, true} {
		tr := zipfTrace(requests, keys, scan)
		var total uint64
		for _, w := range tr.weights {
			total += uint64(w)
		}
		for _, pct := range []uint64{1, 5, 10} {
			capacity := total * pct / 100
			o, l := otterRatio(tr, capacity), lruRatio(tr, capacity)
			name := fmt.Sprintf("scan=%v size=%d%%", scan, pct)
			t.Logf("%-22s W-TinyLFU %.3f  LRU %.3f", name, o, l)
			if o < l {
				t.Errorf("%s: W-TinyLFU hit ratio %.3f below LRU's %.3f", name, o, l)
			}
		}
	}
}
