package squeeze

import (
	"encoding/binary"
	"testing"
)

// BenchmarkFileStore measures the FileServer's store through its own
// methods, as the file server calls them: a hit, and churn that evicts on
// every store. go test -run '^$' -bench Store -benchmem runs it with the
// dictionary stores'.
func BenchmarkFileStore(b *testing.B) {
	key := func(i int) repKey {
		var k repKey
		binary.LittleEndian.PutUint64(k.plain[:], uint64(i))
		k.coding = Brotli
		return k
	}
	data := make([]byte, 4<<10)
	b.Run("hit", func(b *testing.B) {
		s := newLRUStore(1 << 20)
		for i := range 64 {
			s.store(key(i), rep{data: data}, 0)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, ok := s.load(key(i & 63)); !ok {
				b.Fatal("miss")
			}
		}
	})
	b.Run("churn", func(b *testing.B) {
		s := newLRUStore(64 * (4<<10 + repOverhead))
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			s.store(key(i), rep{data: data}, 0)
		}
	})
}
