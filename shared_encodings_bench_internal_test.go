package squeeze

import (
	"bytes"
	"context"
	"crypto/sha256"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/writers"
)

// mapStore is a SharedStore in a map, for benchmarks: a Get costs a map
// look-up and a copy, as a store's client returns a fresh slice.
type mapStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *mapStore) Get(_ context.Context, key string, limit int) ([]byte, bool, error) {
	s.mu.Lock()
	v, ok := s.m[key]
	s.mu.Unlock()
	if !ok || len(v) > limit {
		return nil, false, nil
	}
	return bytes.Clone(v), true, nil
}

func (s *mapStore) Set(_ context.Context, key string, value []byte, _ time.Duration) error {
	s.mu.Lock()
	s.m[key] = bytes.Clone(value)
	s.mu.Unlock()
	return nil
}

func (s *mapStore) Claim(_ context.Context, key string, value []byte, _ time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[key]; ok {
		return false, nil
	}
	s.m[key] = bytes.Clone(value)
	return true, nil
}

// BenchmarkSharedUpgradeTake compares what a replica spends on a variant
// another replica upgraded: taking it from the store (the fetch from an
// in-memory store and the verification, a decode and a SHA-256 of the
// plain body) against encoding it itself at the default and at the best
// level. Real bodies: the first 24 KiB of lodash.min.js (a body within the
// buffer) and the whole of react-dom's production build, deltas against
// the previous release.
func BenchmarkSharedUpgradeTake(b *testing.B) {
	rels := corpus.Releases(b)
	for _, body := range []struct {
		name       string
		old, plain []byte
	}{
		{"lodash-24K", rels[1].Old[:24<<10], rels[1].New[:24<<10]},
		{"react-dom-129K", rels[0].Old, rels[0].New},
	} {
		for _, coding := range []string{writers.Brotli, writers.Zstd, DCB, DCZ} {
			var d *dictionary
			if coding == DCB || coding == DCZ {
				d = &dictionary{hash: sha256.Sum256(body.old), data: body.old}
			}
			r, _ := writers.Levels(deltaCodec(coding))
			encode := func(b *testing.B, level int) []byte {
				enc, err := newUpgradeEncoder(coding, level, d)
				if err != nil {
					b.Fatal(err)
				}
				var out bytes.Buffer
				enc.Reset(&out)
				if _, err := enc.Write(body.plain); err != nil {
					b.Fatal(err)
				}
				if err := enc.Close(); err != nil {
					b.Fatal(err)
				}
				return out.Bytes()
			}
			for _, level := range []int{r.Default, upgradeLevel(coding)} {
				b.Run(body.name+"/"+coding+"/encode-"+strconv.Itoa(level), func(b *testing.B) {
					b.SetBytes(int64(len(body.plain)))
					for b.Loop() {
						encode(b, level)
					}
				})
			}
			b.Run(body.name+"/"+coding+"/shared-hit", func(b *testing.B) {
				best := encode(b, upgradeLevel(coding))
				store := &mapStore{m: map[string][]byte{}}
				s := newShared(&config{shared: store, sharedTimeout: 5 * time.Second}, nil)
				v := newSharedVariant(s, sha256.Sum256(body.plain), len(body.plain), coding, upgradeLevel(coding), d)
				if err := store.Set(context.Background(), v.key, best, 0); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(body.plain)))
				for b.Loop() {
					if got, _ := v.take(context.Background(), len(best)); got == nil {
						b.Fatal("no shared hit")
					}
				}
			})
		}
	}
}
