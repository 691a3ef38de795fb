package squeeze

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze/internal/pool"
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

// BenchmarkLearnedDeltaCost encodes one page as dcz (zstd 3) and dcb (br
// 5) against a 64 KiB and a 1 MiB dictionary of the site, alternating
// with the same coding and level without a dictionary in each iteration,
// and reports the ratio of their times (x-plain): what a delta costs over
// the response it replaces, from pooled encoders built once per
// dictionary.
func BenchmarkLearnedDeltaCost(b *testing.B) {
	page := deltaBenchPage(1000)
	for _, size := range []int{64 << 10, 1 << 20} {
		var data []byte
		for i := 0; len(data) < size; i++ {
			data = append(data, deltaBenchPage(i)...)
		}
		data = data[len(data)-size:]
		s, err := newDictStore(&config{dictMatch: []string{"/*"}, dictStoreSize: 64 << 20}, 3, 5)
		if err != nil {
			b.Fatal(err)
		}
		d := &dictionary{hash: sha256.Sum256(data), data: data, static: true}
		for _, coding := range []string{DCZ, DCB} {
			o := s.offerFor(d, coding)
			plain, err := pool.NewEncoders(deltaCodec(coding), s.level(coding))
			if err != nil || o == nil {
				b.Fatal(err)
			}
			encode := func(p *pool.Encoders) time.Duration {
				t0 := time.Now()
				e, err := p.Get(io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = e.Write(page)
				_ = e.Close()
				p.Put(e)
				return time.Since(t0)
			}
			encode(o.encoders) // the pools' first encoders
			encode(plain)
			b.Run(fmt.Sprintf("%s/%dKiB", coding, size>>10), func(b *testing.B) {
				var withDict, without time.Duration
				for range b.N {
					withDict += encode(o.encoders)
					without += encode(plain)
				}
				b.ReportMetric(float64(withDict)/float64(without), "x-plain")
				b.ReportMetric(float64(withDict.Microseconds())/float64(b.N), "µs-delta")
				b.ReportMetric(float64(without.Microseconds())/float64(b.N), "µs-plain")
			})
		}
	}
}
