package squeeze

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"
)

// BenchmarkDictStore measures the store of remembered dictionaries through
// its own methods, as the middleware calls them: a hit, and churn that
// evicts on every store.
func BenchmarkDictStore(b *testing.B) {
	body := func(i int) []byte {
		p := make([]byte, 2<<10)
		binary.LittleEndian.PutUint64(p, uint64(i))
		return p
	}
	newStore := func(b *testing.B, budget int64) *dictStore {
		c := &config{dictMatch: []string{"/api/*"}, dictStoreSize: budget}
		s, err := newDictStore(c, 3, 5)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	b.Run("hit", func(b *testing.B) {
		s := newStore(b, 1<<20)
		var hashes [64][32]byte
		for i := range hashes {
			p := body(i)
			s.remember(p, "/api/*", true, fromResponse, 0)
			hashes[i] = sha256.Sum256(p)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if s.lookup(hashes[i&63]) == nil {
				b.Fatal("miss")
			}
		}
	})
	// A dictionary path's response remembered again, as every response
	// after the first is: 488 KB, a bundle's size.
	b.Run("remember-known", func(b *testing.B) {
		s := newStore(b, 4<<20)
		p := make([]byte, 488<<10)
		for i := range p {
			p[i] = byte(i * 7 / 3)
		}
		s.remember(p, "/api/*", true, fromResponse, 0)
		b.SetBytes(int64(len(p)))
		b.ReportAllocs()
		for b.Loop() {
			s.remember(p, "/api/*", false, fromResponse, 0)
		}
	})
	b.Run("churn", func(b *testing.B) {
		s := newStore(b, 64*(2<<10+dictEntryBytes))
		bodies := make([][]byte, 1024)
		for i := range bodies {
			bodies[i] = body(i)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			s.remember(bodies[i&1023], "/api/*", true, fromResponse, 0)
		}
	})
}
