package squeeze

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// The three byte-budgeted stores through their own methods, as the file
// server, the dictionary middleware and the Transport call them: a hit,
// and churn that evicts on every store. go test -run '^$' -bench Store
// -benchmem.

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
			s.remember(p, "/api/*", true, fromResponse)
			hashes[i] = sha256.Sum256(p)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if s.lookup(hashes[i&63]) == nil {
				b.Fatal("miss")
			}
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
			s.remember(bodies[i&1023], "/api/*", true, fromResponse)
		}
	})
}

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
