package bench

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"math/bits"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	brrr "github.com/molecule-man/go-brrr"

	"github.com/squeezehttp/squeeze"
)

// BenchmarkBrotliEncoders compares andybalholm/brotli with go-brrr as br
// encoders, paired in one loop (the order alternating) at lgwin 18, the
// window squeeze uses: x-andy is andybalholm's time over go-brrr's, and
// each one's encoded size is reported.
func BenchmarkBrotliEncoders(b *testing.B) {
	c := loadCorpus(b)
	for _, level := range []int{4, 5, 6, 11} {
		for _, body := range []Body{c.HTML[1], c.HTML[3], c.JS, c.JSON} {
			b.Run("level="+strconv.Itoa(level)+"/body="+body.Name, func(b *testing.B) {
				andy := brotli.NewWriterOptions(io.Discard, brotli.WriterOptions{Quality: level, LGWin: 18})
				brr, err := brrr.NewWriterOptions(io.Discard, level, brrr.WriterOptions{LGWin: 18})
				if err != nil {
					b.Fatal(err)
				}
				var out [2]bytes.Buffer
				encs := [2]func(w io.Writer) error{
					func(w io.Writer) error { andy.Reset(w); andy.Write(body.Data); return andy.Close() },
					func(w io.Writer) error { brr.Reset(w); brr.Write(body.Data); return brr.Close() },
				}
				var spent [2]time.Duration
				for i := 0; b.Loop(); i++ {
					for k := range 2 {
						j := k ^ (i & 1)
						out[j].Reset()
						t0 := time.Now()
						if err := encs[j](&out[j]); err != nil {
							b.Fatal(err)
						}
						spent[j] += time.Since(t0)
					}
				}
				for j := range 2 {
					got, err := io.ReadAll(brotli.NewReader(bytes.NewReader(out[j].Bytes())))
					if err != nil || !bytes.Equal(got, body.Data) {
						b.Fatalf("encoder %d does not round-trip: %v", j, err)
					}
				}
				b.ReportMetric(float64(spent[0])/float64(spent[1]), "x-andy")
				b.ReportMetric(spent[0].Seconds()/float64(b.N), "andy-sec/op")
				b.ReportMetric(spent[1].Seconds()/float64(b.N), "brrr-sec/op")
				b.ReportMetric(float64(out[0].Len()), "andy-B")
				b.ReportMetric(float64(out[1].Len()), "brrr-B")
			})
		}
	}
}

// deltaPair is a new version of a document and the old one it is sent
// against.
type deltaPair struct {
	name     string
	old, new []byte
}

// deltaPairs returns the two releases of Underscore.js the demo serves
// and two HTML pages that share their head and navigation but differ in
// content: the first 64 KiB of the Go specification, and its first 8 KiB
// followed by 56 KiB from further on.
func deltaPairs(tb testing.TB) []deltaPair {
	c := loadCorpus(tb)
	spec := c.HTML[3].Data
	read := func(name string) []byte {
		b, err := os.ReadFile("../example/static/lib/" + name)
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	page2 := append(append([]byte(nil), spec[:8<<10]...), spec[120<<10:176<<10]...)
	return []deltaPair{
		{"underscore-1.13.6-to-7", read("underscore-1.13.6.min.js"), read("underscore-1.13.7.min.js")},
		{"html-64K-other-content", spec[:64<<10], page2},
	}
}

// BenchmarkDelta serves the new version of each pair through squeeze with
// the old one remembered as a dictionary, for each coding, and reports the
// bytes on the wire. The floor is the bare encoder doing the same work
// (for dcz and dcb a pooled encoder holding the dictionary), paired with
// squeeze in one loop: x-floor is the floor's time over squeeze's.
func BenchmarkDelta(b *testing.B) {
	for _, p := range deltaPairs(b) {
		m, err := squeeze.New(squeeze.WithDictionaryMatch("/v/*"), squeeze.WithEncodings(squeeze.DCZ, squeeze.DCB, squeeze.Zstd, squeeze.Brotli, squeeze.Gzip))
		if err != nil {
			b.Fatal(err)
		}
		serveBody := func(body []byte) http.Handler {
			return m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/javascript")
				w.Header().Set("Cache-Control", "max-age=3600") // a browser keeps only a fresh dictionary
				w.Write(body)
			}))
		}
		old, cur := serveBody(p.old), serveBody(p.new)
		old.ServeHTTP(NewResponseWriter(false), newGet("/v/old", "gzip", ""))
		sum := sha256.Sum256(p.old)
		avail := ":" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
		for _, coding := range []string{squeeze.Gzip, squeeze.Brotli, squeeze.Zstd, squeeze.DCZ, squeeze.DCB} {
			b.Run("pair="+p.name+"/coding="+coding, func(b *testing.B) {
				floor := floorEncoder(b, coding, p.old)
				r := newGet("/v/new", coding, avail)
				w := NewResponseWriter(false)
				var fout bytes.Buffer
				var spent [2]time.Duration
				var wire int
				for i := 0; b.Loop(); i++ {
					for k := range 2 {
						j := k ^ (i & 1)
						t0 := time.Now()
						if j == 0 {
							fout.Reset()
							floor.Reset(&fout)
							floor.Write(p.new)
							floor.Close()
						} else {
							w.Reset()
							cur.ServeHTTP(w, r)
							if ce := w.Header().Get("Content-Encoding"); ce != coding {
								b.Fatalf("Content-Encoding %q, want %s", ce, coding)
							}
							wire = int(w.Written())
						}
						spent[j] += time.Since(t0)
					}
				}
				b.ReportMetric(float64(spent[0])/float64(spent[1]), "x-floor")
				b.ReportMetric(spent[0].Seconds()/float64(b.N), "floor-sec/op")
				b.ReportMetric(spent[1].Seconds()/float64(b.N), "squeeze-sec/op")
				b.ReportMetric(float64(wire), "wire-B")
				b.ReportMetric(float64(len(p.new)), "plain-B")
			})
		}
	}
}

// resetEncoder is what the floor encoders have in common.
type resetEncoder interface {
	io.WriteCloser
	Reset(io.Writer)
}

// floorEncoder returns a bare encoder for coding at squeeze's default level
// and window; for dcz and dcb it holds dict.
func floorEncoder(tb testing.TB, coding string, dict []byte) resetEncoder {
	var e resetEncoder
	var err error
	switch coding {
	case squeeze.Gzip:
		e, err = gzip.NewWriterLevel(nil, 5)
	case squeeze.Brotli:
		e, err = brrr.NewWriterOptions(nil, 5, brrr.WriterOptions{LGWin: 18})
	case squeeze.Zstd, squeeze.DCZ:
		opts := []zstd.EOption{zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1),
			zstd.WithLowerEncoderMem(true), zstd.WithWindowSize(128 << 10)}
		if coding == squeeze.DCZ {
			// squeeze's window for a dictionary: the next power of two
			// above it plus 64 KiB.
			window := 1 << bits.Len(uint(len(dict)+64<<10-1))
			opts = append(opts, zstd.WithEncoderDictRaw(0, dict), zstd.WithWindowSize(window))
		}
		e, err = zstd.NewWriter(nil, opts...)
	case squeeze.DCB:
		var pd *brrr.PreparedDictionary
		if pd, err = brrr.PrepareDictionary(dict); err == nil {
			e, err = brrr.NewWriterOptions(nil, 5, brrr.WriterOptions{LGWin: 18, Dictionaries: []*brrr.PreparedDictionary{pd}})
		}
	}
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

func newGet(path, ae, avail string) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, path, nil)
	r.Header.Set("Accept-Encoding", ae)
	if avail != "" {
		r.Header.Set("Available-Dictionary", avail)
	}
	return r
}

// TestDeltaInflightMemory measures the heap one in-flight delta response
// holds: n responses of each coding are held open mid-stream (a first 16 KiB
// written and flushed) while the heap is measured, against the same with
// nothing in flight.
func TestDeltaInflightMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap")
	}
	p := deltaPairs(t)[0]
	const n = 100
	for _, coding := range []string{squeeze.Zstd, squeeze.Brotli, squeeze.DCZ, squeeze.DCB} {
		m, err := squeeze.New(squeeze.WithDictionaryMatch("/v/*"), squeeze.WithEncodings(squeeze.DCZ, squeeze.DCB, squeeze.Zstd, squeeze.Brotli))
		if err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		started := make(chan struct{}, n)
		done := make(chan struct{}, n)
		big := bytes.Repeat(p.new, 4) // streamed: past the 32 KiB buffer
		h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/javascript")
			w.Header().Set("Cache-Control", "max-age=3600") // a browser keeps only a fresh dictionary
			if r.URL.Path == "/v/old" {
				w.Write(p.old)
				return
			}
			w.Write(big[:48<<10])
			w.(http.Flusher).Flush()
			started <- struct{}{}
			<-release
			w.Write(big[48<<10:])
		}))
		h.ServeHTTP(NewResponseWriter(false), newGet("/v/old", "gzip", ""))
		sum := sha256.Sum256(p.old)
		avail := ":" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
		before := heapInuse()
		for range n {
			go func() {
				w := NewResponseWriter(false)
				h.ServeHTTP(w, newGet("/v/new", coding, avail))
				if ce := w.Header().Get("Content-Encoding"); ce != coding {
					t.Errorf("Content-Encoding %q, want %s", ce, coding)
				}
				done <- struct{}{}
			}()
		}
		for range n {
			<-started
		}
		during := heapInuse()
		close(release)
		for range n {
			<-done
		}
		t.Logf("%s: %.0f KiB per in-flight response", coding, float64(during-before)/n/1024)
	}
}

// heapInuse returns the heap in use after two collections: sync.Pool keeps
// what it drops for one more.
func heapInuse() int64 {
	runtime.GC()
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return int64(s.HeapInuse)
}
