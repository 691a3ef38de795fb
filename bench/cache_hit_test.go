package bench

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

// BenchmarkCacheHitMedian is BenchmarkCacheVersusFloor with medians: the
// floor (a fresh encode) and squeeze with a warm cache serve one response
// each in turn, and each side reports the median time of its responses.
// On a machine shared with other work a response that loses its core
// takes many times its cost, and a mean takes those outliers in; the
// median does not. x-floor is the floor's median over the cache's.
func BenchmarkCacheHitMedian(b *testing.B) {
	eachCachedCase(b, func(b *testing.B, floorImpl *Impl, body Body, h http.Handler) {
		floor := floorImpl.Serve(body)
		w, r := NewResponseWriter(false), NewRequest(floorImpl.Coding)
		hs := []http.Handler{floor, h}
		spent := [2][]time.Duration{}
		for i := 0; b.Loop(); i++ {
			for k := range 2 {
				j := (i + k) % 2
				w.Reset()
				t0 := time.Now()
				hs[j].ServeHTTP(w, r)
				spent[j] = append(spent[j], time.Since(t0))
			}
		}
		med := func(d []time.Duration) float64 {
			slices.Sort(d)
			return d[len(d)/2].Seconds()
		}
		f, cached := med(spent[0]), med(spent[1])
		b.ReportMetric(f, "floor-sec/op")
		b.ReportMetric(cached, "cached-sec/op")
		b.ReportMetric(f/cached, "x-floor")
	})
}
