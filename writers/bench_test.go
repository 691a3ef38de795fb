package writers_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/writers"
)

// The Reuse/New pairs show what pooling buys per response: run
//
//	go test ./writers -run '^$' -bench 'Encoder(Reuse|New)|Decoder(Reuse|New)'
//
// New builds a codec per response, as a middleware without a pool does; the
// field bugs behind these benchmarks were an lz4 writer that reallocated its
// 8 MB buffer on every Reset (reuse 200x slower) and a zlib writer built per
// packet (1.5 MB and 160 allocations each).

func benchBody(b *testing.B) []byte {
	b.Helper()
	return corpus.Prefix(b, corpus.HTML(b), 16<<10)
}

func BenchmarkEncoderReuse(b *testing.B) {
	body := benchBody(b)
	for _, coding := range codings {
		b.Run(coding, func(b *testing.B) {
			e := newEncoder(b, coding, defaultLevel(b, coding))
			var out bytes.Buffer
			out.Grow(64 << 10)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			cpu := startCPU(b)
			for b.Loop() {
				encodeInto(b, e, &out, body)
			}
			cpu.report(len(body))
		})
	}
}

// encodeInto compresses body into out, emptied first, through e.
func encodeInto(b *testing.B, e writers.Encoder, out *bytes.Buffer, body []byte) {
	out.Reset()
	e.Reset(out)
	if _, err := e.Write(body); err != nil {
		b.Fatal(err)
	}
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkEncoderNew(b *testing.B) {
	body := benchBody(b)
	for _, coding := range codings {
		b.Run(coding, func(b *testing.B) {
			level := defaultLevel(b, coding)
			var out bytes.Buffer
			out.Grow(64 << 10)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			cpu := startCPU(b)
			for b.Loop() {
				e, err := writers.NewEncoder(coding, level)
				if err != nil {
					b.Fatal(err)
				}
				encodeInto(b, e, &out, body)
			}
			cpu.report(len(body))
		})
	}
}

func BenchmarkDecoderReuse(b *testing.B) {
	body := benchBody(b)
	for _, coding := range codings {
		b.Run(coding, func(b *testing.B) {
			stream := encode(b, coding, defaultLevel(b, coding), body)
			d := newDecoder(b, coding)
			src := bytes.NewReader(stream)
			var out bytes.Buffer
			out.Grow(64 << 10)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			cpu := startCPU(b)
			for b.Loop() {
				decodeInto(b, d, src, stream, &out)
			}
			cpu.report(len(body))
		})
	}
}

// decodeInto decodes stream into out, emptied first, through d.
func decodeInto(b *testing.B, d writers.Decoder, src *bytes.Reader, stream []byte, out *bytes.Buffer) {
	out.Reset()
	src.Reset(stream)
	if err := d.Reset(src); err != nil {
		b.Fatal(err)
	}
	if _, err := out.ReadFrom(d); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkDecoderNew(b *testing.B) {
	body := benchBody(b)
	for _, coding := range codings {
		b.Run(coding, func(b *testing.B) {
			stream := encode(b, coding, defaultLevel(b, coding), body)
			src := bytes.NewReader(stream)
			var out bytes.Buffer
			out.Grow(64 << 10)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			cpu := startCPU(b)
			for b.Loop() {
				d, err := writers.NewDecoder(coding)
				if err != nil {
					b.Fatal(err)
				}
				decodeInto(b, d, src, stream, &out)
			}
			cpu.report(len(body))
		})
	}
}

// BenchmarkLevels measures speed (MB/s of input) and compression ratio
// (input size / output size) for each coding and level over real documents,
// the data behind the defaults in Levels. docs/perf-history.md holds the table and
// the command. deflate is gzip's compressor in a different frame and is
// left out. zstd levels map onto four encoder speeds, so one level per
// speed is measured. br 10 and 11 run only on the documents of 32 KiB or
// less: on the others one op takes seconds.
func BenchmarkLevels(b *testing.B) {
	html := corpus.HTML(b)
	docs := []corpus.Doc{
		{Name: "html16k", Data: corpus.Prefix(b, html, 16<<10)},
		{Name: "html", Data: html},
		{Name: "json", Data: corpus.JSON(b)},
		{Name: "js", Data: corpus.JS(b)},
	}
	levels := map[string][]int{
		writers.Gzip:   {-3, -2, 1, 2, 3, 4, 5, 6, 7, 8, 9},
		writers.Zstd:   zstdSpeeds,
		writers.Brotli: {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
	}
	for _, coding := range []string{writers.Gzip, writers.Zstd, writers.Brotli} {
		for _, level := range levels[coding] {
			for _, doc := range docs {
				if coding == writers.Brotli && level >= 10 && len(doc.Data) > 32<<10 {
					continue
				}
				b.Run(fmt.Sprintf("%s/%d/%s", coding, level, doc.Name), func(b *testing.B) {
					e := newEncoder(b, coding, level)
					var out bytes.Buffer
					out.Grow(len(doc.Data))
					b.SetBytes(int64(len(doc.Data)))
					cpu := startCPU(b)
					for b.Loop() {
						out.Reset()
						e.Reset(&out)
						if _, err := e.Write(doc.Data); err != nil {
							b.Fatal(err)
						}
						if err := e.Close(); err != nil {
							b.Fatal(err)
						}
					}
					cpu.report(len(doc.Data))
					b.ReportMetric(float64(len(doc.Data))/float64(out.Len()), "ratio")
				})
			}
		}
	}
}

// cpuMeter measures the process CPU time a benchmark loop used. The machine
// this project benchmarks on is shared and busy: wall-clock ns/op and MB/s
// there include the time spent waiting for a core, CPU time does not. It
// counts every thread of the process, so the garbage collector's work for
// a benchmark that allocates is included.
type cpuMeter struct {
	b     *testing.B
	start time.Duration
	ok    bool
}

func startCPU(b *testing.B) cpuMeter {
	t, ok := processCPUTime()
	return cpuMeter{b: b, start: t, ok: ok}
}

// report adds cpu-ns/op and, for loops that each handle size bytes,
// cpuMB/s.
func (m cpuMeter) report(size int) {
	end, ok := processCPUTime()
	if !m.ok || !ok || m.b.N == 0 || end <= m.start {
		return
	}
	perOp := float64(end-m.start) / float64(m.b.N)
	m.b.ReportMetric(perOp, "cpu-ns/op")
	if size > 0 {
		m.b.ReportMetric(float64(size)/perOp*1e3, "cpuMB/s")
	}
}
