package bench

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzhttp"
	"github.com/klauspost/compress/zstd"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/pool"
)

// memoryServer is a RoundTripper that answers every request with payload
// under Content-Encoding coding, from memory, so the client side is all
// that is measured.
type memoryServer struct {
	coding  string
	payload []byte
}

func (m memoryServer) RoundTrip(r *http.Request) (*http.Response, error) {
	h := http.Header{"Content-Encoding": {m.coding}, "Content-Type": {"text/html"}}
	return &http.Response{
		StatusCode: 200, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(m.payload)),
		ContentLength: int64(len(m.payload)), Request: r,
	}, nil
}

// clientImpl decodes one response per call and returns how many bytes it
// decoded.
type clientImpl struct {
	name  string
	fetch func(buf []byte) (int64, error)
}

// clientImpls returns the decoder floor (a pooled decoder reading the
// payload, no HTTP), squeeze.Transport and gzhttp.Transport, all reading a
// response of payload in coding into buf-sized reads.
func clientImpls(coding string, payload []byte) ([]clientImpl, error) {
	fp, err := pool.NewDecoders(coding)
	if err != nil {
		return nil, err
	}
	var src bytes.Reader
	floor := func(buf []byte) (int64, error) {
		src.Reset(payload)
		d, err := fp.Get(&src)
		if err != nil {
			return 0, err
		}
		defer fp.Put(d)
		return io.CopyBuffer(io.Discard, struct{ io.Reader }{d}, buf)
	}
	base := memoryServer{coding, payload}
	viaTransport := func(rt http.RoundTripper) func([]byte) (int64, error) {
		req, _ := http.NewRequest("GET", "http://bench.invalid/", nil)
		return func(buf []byte) (int64, error) {
			resp, err := rt.RoundTrip(req)
			if err != nil {
				return 0, err
			}
			n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{resp.Body}, buf)
			if cerr := resp.Body.Close(); err == nil {
				err = cerr
			}
			if resp.Header.Get("Content-Encoding") != "" {
				err = fmt.Errorf("response still encoded")
			}
			return n, err
		}
	}
	return []clientImpl{
		{"floor", floor},
		{"squeeze", viaTransport(&squeeze.Transport{Base: base})},
		{"gzhttp", viaTransport(gzhttp.Transport(base))},
	}, nil
}

// BenchmarkTransport decodes responses of the HTML sizes, gzip and zstd at
// squeeze's levels, through the decoder floor, squeeze.Transport and
// gzhttp.Transport, alternating the three in one loop as
// BenchmarkVersusFloor does, so machine drift cancels. It reports each
// one's time per response, squeeze's throughput relative to the floor and
// to gzhttp (x-floor, x-gzhttp: above 1 is faster), and each one's
// allocations per response, counted apart after the timed loop.
func BenchmarkTransport(b *testing.B) {
	c := loadCorpus(b)
	for _, coding := range []string{squeeze.Gzip, squeeze.Zstd} {
		b.Run("coding="+coding, func(b *testing.B) {
			for _, body := range c.HTML {
				payload, err := Encode(coding, Level(coding), body.Data)
				if err != nil {
					b.Fatal(err)
				}
				b.Run("body="+body.Name, func(b *testing.B) {
					impls, err := clientImpls(coding, payload)
					if err != nil {
						b.Fatal(err)
					}
					buf := make([]byte, 32<<10)
					for _, im := range impls {
						for range 2 { // warm the pools
							if n, err := im.fetch(buf); err != nil || n != int64(len(body.Data)) {
								b.Fatalf("%s: %d bytes, %v; want %d", im.name, n, err, len(body.Data))
							}
						}
					}
					spent := make([]time.Duration, len(impls))
					b.SetBytes(int64(len(body.Data)))
					for i := 0; b.Loop(); i++ {
						for k := range impls {
							j := (i + k) % len(impls)
							t0 := time.Now()
							_, _ = impls[j].fetch(buf)
							spent[j] += time.Since(t0)
						}
					}
					for j, im := range impls {
						b.ReportMetric(spent[j].Seconds()/float64(b.N), im.name+"-sec/op")
						allocs := testing.AllocsPerRun(50, func() { _, _ = im.fetch(buf) })
						b.ReportMetric(allocs, im.name+"-allocs/op")
					}
					b.ReportMetric(float64(spent[0])/float64(spent[1]), "x-floor")
					b.ReportMetric(float64(spent[2])/float64(spent[1]), "x-gzhttp")
				})
			}
		})
	}
}

// BenchmarkTransportPoll polls a JSON endpoint whose answer changes a
// little each time (the 16 KiB corpus JSON with one field changed per
// version) and reports the response bytes on the wire per poll: plain,
// zstd as squeeze sends it, and dcz once squeeze.Transport holds the
// previous answer as a dictionary. The dcz server is written here by hand
// (RFC 9842 framing, zstd with the raw dictionary at squeeze's level),
// standing in for squeeze's own server-side dictionaries.
func BenchmarkTransportPoll(b *testing.B) {
	c := loadCorpus(b)
	version := func(n int) []byte {
		// A changing counter in the first object: a typical poll delta.
		return []byte(strings.Replace(string(c.JSON.Data), `"id"`, fmt.Sprintf(`"poll":%d,"id"`, n), 1))
	}
	for _, dicts := range []bool{false, true} {
		b.Run(fmt.Sprintf("dictionaries=%v", dicts), func(b *testing.B) {
			srv := &pollServer{version: version}
			var store int64
			if dicts {
				store = 1 << 20
			}
			tr := &squeeze.Transport{Base: srv, DictionaryStoreSize: store}
			req, _ := http.NewRequest("GET", "http://api.invalid/api/status", nil)
			fetch := func() {
				resp, err := tr.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				got, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if err != nil || !bytes.Equal(got, version(srv.n)) {
					b.Fatalf("poll %d: %d bytes, %v", srv.n, len(got), err)
				}
			}
			fetch() // the first answer, never a delta
			srv.wire, srv.plain, srv.polls = 0, 0, 0
			for b.Loop() {
				fetch()
			}
			b.ReportMetric(float64(srv.wire)/float64(srv.polls), "wire-B/poll")
			b.ReportMetric(float64(srv.plain)/float64(srv.polls), "plain-B/poll")
		})
	}
}

// pollServer answers with version(n) for the n-th request, as zstd, or as
// dcz against the previous version when the request offers it.
type pollServer struct {
	version            func(int) []byte
	n                  int
	last               []byte
	wire, plain, polls int
}

func (s *pollServer) RoundTrip(r *http.Request) (*http.Response, error) {
	s.n++
	body := s.version(s.n)
	h := http.Header{
		"Content-Type":      {"application/json"},
		"Cache-Control":     {"max-age=60"},
		"Use-As-Dictionary": {`match="/api/*"`},
	}
	var out []byte
	var err error
	sum := sha256.Sum256(s.last)
	offered := fmt.Sprintf(":%s:", b64(sum[:]))
	if s.last != nil && r.Header.Get("Available-Dictionary") == offered && strings.Contains(r.Header.Get("Accept-Encoding"), "dcz") {
		h.Set("Content-Encoding", "dcz")
		out, err = dcz(s.last, body)
	} else {
		h.Set("Content-Encoding", "zstd")
		out, err = Encode(squeeze.Zstd, Level(squeeze.Zstd), body)
	}
	if err != nil {
		return nil, err
	}
	s.last = body
	s.wire += len(out)
	s.plain += len(body)
	s.polls++
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(bytes.NewReader(out)), ContentLength: int64(len(out)), Request: r}, nil
}

func dcz(dict, body []byte) ([]byte, error) {
	sum := sha256.Sum256(dict)
	e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderDictRaw(0, dict),
		zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(Level(squeeze.Zstd))), zstd.WithWindowSize(128<<10))
	if err != nil {
		return nil, err
	}
	return e.EncodeAll(body, append([]byte{0x5e, 0x2a, 0x4d, 0x18, 0x20, 0, 0, 0}, sum[:]...)), nil
}

func b64(p []byte) string { return base64.StdEncoding.EncodeToString(p) }
