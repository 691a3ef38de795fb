package squeeze

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/squeezehttp/squeeze/internal/pool"
	"github.com/squeezehttp/squeeze/writers"
)

// deltaBenchPage returns a generated HTML page of about 60 KB, number i
// of a site: a template every page shares and results that differ.
func deltaBenchPage(i int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!doctype html><html><head><title>page %d</title><style>", i)
	for k := range 200 {
		fmt.Fprintf(&b, ".c%d{margin:%dpx;color:#%06x}\n", k, k%9, uint64(k)*2654435761%0xffffff)
	}
	b.WriteString("</style></head><body><main>")
	x := uint32(i*7919 + 1)
	for b.Len() < 60000 {
		x = x*1664525 + 1013904223
		fmt.Fprintf(&b, `<li class="c%d"><a href="/doc/%d">result %d about %x</a><p>text %d of page %d, ranked %d</p></li>`+"\n",
			x%200, x%100000, x%1000, x, x%777, i, x%13)
	}
	b.WriteString("</main></body></html>")
	return b.Bytes()
}

// BenchmarkLearnedDeltaCost encodes one page as dcz and dcb against a
// 64 KiB and a 1 MiB dictionary of the site, at the levels a Middleware
// with default options serves them at, alternating in each iteration with
// the same coding and level without a dictionary, and reports the ratio
// of their thread CPU times (x-plain; the goroutine is locked to its
// thread, so a loaded machine's waits for a core do not count): what a
// delta costs over the response it replaces, from pooled encoders built
// once per dictionary. dcz/whole, in the same alternation, is an encoder
// given all of the dictionary and reset at both Get and Put, as dcz was
// before dczHistory and framedEncoder's single reset: x-plain of what they
// saved. dcz/collected is dcz with two garbage collections before each
// alternation, untimed, as a server collects between two responses of a
// route among others': the plain pool, a sync.Pool, gives its idle
// encoder up and builds one anew, as dcz's did before it kept one
// (newDCZ), whose new encoder hashes the dictionary too.
func BenchmarkLearnedDeltaCost(b *testing.B) {
	page := deltaBenchPage(1000)
	m, err := New(WithLearnedDictionary("/*"))
	if err != nil {
		b.Fatal(err)
	}
	s := m.dicts
	route := s.learner.routes[0]
	for gen, size := range []int{64 << 10, 1 << 20} {
		var data []byte
		for i := 0; len(data) < size; i++ {
			data = append(data, deltaBenchPage(i)...)
		}
		data = data[len(data)-size:]
		// Each live on the route, as a learned dictionary a client holds is.
		ld := route.newLearnedDict(data, uint64(gen+1), nil)
		if !route.publish(ld) {
			b.Fatal("the dictionary was not published")
		}
		d := ld.sd.d
		whole, err := pool.NewEncodersFunc(DCZ, func() (writers.Encoder, error) {
			return zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(s.level(DCZ))),
				zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(dczWindow(len(data))),
				zstd.WithLowerEncoderMem(true), zstd.WithEncoderDictRaw(0, data))
		})
		if err != nil {
			b.Fatal(err)
		}
		for _, coding := range []string{DCZ, DCB, "dcz/whole", "dcz/collected"} {
			var delta *pool.Encoders
			if coding == "dcz/whole" {
				delta = whole
			} else if o := s.offerFor(d, strings.TrimSuffix(coding, "/collected")); o != nil {
				delta = o.encoders
			} else {
				b.Fatalf("no %s offer", coding)
			}
			plain, err := pool.NewEncoders(deltaCodec(delta.Coding()), s.level(delta.Coding()))
			if err != nil {
				b.Fatal(err)
			}
			encode := func(p *pool.Encoders) time.Duration {
				t0 := threadCPU()
				e, err := p.Get(io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = e.Write(page)
				_ = e.Close()
				p.Put(e)
				return threadCPU() - t0
			}
			b.Run(fmt.Sprintf("%s/%dKiB", coding, size>>10), func(b *testing.B) {
				runtime.LockOSThread() // each benchmark runs in a goroutine of its own
				defer runtime.UnlockOSThread()
				encode(delta) // the pools' first encoders, and warm caches
				encode(plain)
				var withDict, without time.Duration
				for range b.N {
					if strings.HasSuffix(coding, "/collected") {
						runtime.GC()
						runtime.GC()
					}
					withDict += encode(delta)
					without += encode(plain)
				}
				b.ReportMetric(float64(withDict)/float64(without), "x-plain")
				b.ReportMetric(float64(withDict.Microseconds())/float64(b.N), "µs-delta")
				b.ReportMetric(float64(without.Microseconds())/float64(b.N), "µs-plain")
			})
		}
	}
}
