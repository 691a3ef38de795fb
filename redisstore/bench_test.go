package redisstore_test

import (
	"bytes"
	"testing"

	"github.com/squeezehttp/squeeze/redisstore"
)

// BenchmarkStore measures one call's latency against a redis-server on
// loopback, for values of the sizes squeeze stores: a small body's
// encoding, a typical dictionary, a large bundle.
//
//	go test -run '^$' -bench Store -benchtime 2s ./redisstore
func BenchmarkStore(b *testing.B) {
	srv, raw := startRedis(b)
	s := newStore(b, srv, true) // measures latency, not the timeout
	ctx := b.Context()
	for _, size := range []struct {
		name string
		n    int
	}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1 << 20}} {
		value := bytes.Repeat([]byte("squeeze!"), size.n/8)
		key := "bench/" + size.name
		if err := s.Set(ctx, key, value, 0); err != nil {
			b.Fatal(err)
		}
		b.Run("Get/"+size.name, func(b *testing.B) {
			b.SetBytes(int64(size.n))
			for b.Loop() {
				if v, ok, err := s.Get(ctx, key, size.n); err != nil || !ok || len(v) != size.n {
					b.Fatal(len(v), ok, err)
				}
			}
		})
		// The floor: a plain GET, which no limit bounds.
		b.Run("RawGET/"+size.name, func(b *testing.B) {
			b.SetBytes(int64(size.n))
			for b.Loop() {
				if v, err := raw.Get(ctx, redisstore.DefaultPrefix+key).Bytes(); err != nil || len(v) != size.n {
					b.Fatal(len(v), err)
				}
			}
		})
		b.Run("GetOverLimit/"+size.name, func(b *testing.B) {
			for b.Loop() {
				if _, ok, err := s.Get(ctx, key, size.n-1); err != nil || ok {
					b.Fatal(ok, err)
				}
			}
		})
		b.Run("Set/"+size.name, func(b *testing.B) {
			b.SetBytes(int64(size.n))
			for b.Loop() {
				if err := s.Set(ctx, key, value, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("Claim", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Claim(ctx, "bench/claim", []byte("1"), 0); err != nil {
				b.Fatal(err)
			}
		}
	})
}
