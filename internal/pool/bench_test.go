package pool_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/writers"
)

// BenchmarkEncodersParallel compares one encoder shared behind a
// sync.Mutex with a pool, each goroutine compressing 16 KiB of HTML per
// op. The field bug behind it: a database driver that serialised all
// compression through one locked encoder got 8x faster with a pool. Run
//
//	go test ./pool -run '^$' -bench EncodersParallel -cpu 1,2
//
// At -cpu 1 the two should match (the pool's cost is Get and Put); with
// more cores the mutex caps throughput at one core.
func BenchmarkEncodersParallel(b *testing.B) {
	body := corpus.Prefix(b, corpus.HTML(b), 16<<10)
	for _, coding := range codings {
		b.Run("mutex/"+coding, func(b *testing.B) {
			e, err := writers.NewEncoder(coding, defaultLevel(b, coding))
			if err != nil {
				b.Fatal(err)
			}
			var mu sync.Mutex
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var out bytes.Buffer
				out.Grow(64 << 10)
				for pb.Next() {
					out.Reset()
					mu.Lock()
					e.Reset(&out)
					_, err1 := e.Write(body)
					err2 := e.Close()
					mu.Unlock()
					if err1 != nil || err2 != nil {
						b.Error(err1, err2)
						return
					}
				}
			})
		})
		b.Run("pool/"+coding, func(b *testing.B) {
			p := newEncoders(b, coding)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var out bytes.Buffer
				out.Grow(64 << 10)
				for pb.Next() {
					out.Reset()
					e, err := p.Get(&out)
					if err != nil {
						b.Error(err)
						return
					}
					_, err1 := e.Write(body)
					err2 := e.Close()
					p.Put(e)
					if err1 != nil || err2 != nil {
						b.Error(err1, err2)
						return
					}
				}
			})
		})
	}
}

// BenchmarkGetPut is the pool's own overhead per borrowed codec.
func BenchmarkGetPut(b *testing.B) {
	b.Run("encoder", func(b *testing.B) {
		p := newEncoders(b, writers.Gzip)
		b.ReportAllocs()
		for b.Loop() {
			e, err := p.Get(nil)
			if err != nil {
				b.Fatal(err)
			}
			p.Put(e)
		}
	})
	b.Run("decoder", func(b *testing.B) {
		p := newDecoders(b, writers.Zstd)
		stream := compress(b, newEncoders(b, writers.Zstd), []byte("x"))
		src := bytes.NewReader(stream)
		b.ReportAllocs()
		for b.Loop() {
			src.Reset(stream)
			d, err := p.Get(src)
			if err != nil {
				b.Fatal(err)
			}
			p.Put(d)
		}
	})
	b.Run("buffer", func(b *testing.B) {
		p := newBuffers(b, 32<<10)
		b.ReportAllocs()
		for b.Loop() {
			p.Put(p.Get())
		}
	})
}
