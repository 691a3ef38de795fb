package squeeze

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// BenchmarkClientDictStore measures the Transport's dictionary store
// through its own methods, as the Transport calls them: a hit, and churn
// that evicts on every store.
func BenchmarkClientDictStore(b *testing.B) {
	exp := time.Now().Add(time.Hour)
	dict := func(i int) *clientDict {
		return &clientDict{
			origin:  "https://example.com",
			pattern: fmt.Sprintf("/app/%d/*", i),
			data:    make([]byte, 2<<10),
			expires: exp,
		}
	}
	b.Run("match", func(b *testing.B) {
		s := newClientDictStore(1<<20, time.Hour)
		for i := range 32 {
			s.add(dict(i), 0)
		}
		req, _ := http.NewRequest(http.MethodGet, "https://example.com/app/7/main.js", nil)
		now := time.Now()
		b.ReportAllocs()
		for b.Loop() {
			if s.match(req, now) == nil {
				b.Fatal("no match")
			}
		}
	})
	b.Run("churn", func(b *testing.B) {
		s := newClientDictStore(16*(2<<10+dictEntryOverhead+64), time.Hour)
		ds := make([]*clientDict, 1024)
		for i := range ds {
			ds[i] = dict(i)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			d := ds[i&1023]
			key := dictKey{d.origin, d.pattern}
			if !s.reserve(key, int64(cap(d.data))) {
				b.Fatal("no room")
			}
			s.add(d, int64(cap(d.data)))
		}
	})
}
