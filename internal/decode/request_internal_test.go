package decode

import (
	"bytes"
	stdflate "compress/flate"
	stdgzip "compress/gzip"
	stdzlib "compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/internal/testtool"
	"github.com/squeezehttp/squeeze/writers"
)

// decodeOnly does what Handler does with a request body and nothing else, so
// these tests pin decodeRequest without the response path.
func decodeOnly(m *Decoders, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, release, ok := m.decodeRequest(w, r, r.Header["Content-Encoding"])
		if !ok {
			return
		}
		if release != nil {
			defer release()
		}
		next.ServeHTTP(w, r)
	})
}

// encodedRequest is a POST carrying body with the given Content-Encoding
// field lines, with the Content-Length a server would have parsed. A negative
// length stands for a chunked body of unknown length.
func encodedRequest(body []byte, length int64, lines ...string) *http.Request {
	var r *http.Request
	if length < 0 {
		r = httptest.NewRequest(http.MethodPost, "/", io.NopCloser(bytes.NewReader(body)))
	} else {
		r = httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		r.ContentLength = length
		r.Header.Set("Content-Length", fmt.Sprint(length))
	}
	if len(lines) > 0 {
		r.Header["Content-Encoding"] = lines
	}
	r.Header.Set("Content-Type", "text/html")
	return r
}

// seen is what a handler behind decodeOnly observed.
type seen struct {
	called        bool
	body          []byte
	err           error
	header        http.Header
	contentLength int64
}

// serveRead runs r through decodeOnly to a handler that reads the whole body.
func serveRead(m *Decoders, r *http.Request) (*httptest.ResponseRecorder, seen) {
	var s seen
	rec := httptest.NewRecorder()
	decodeOnly(m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.called = true
		s.header = r.Header.Clone()
		s.contentLength = r.ContentLength
		s.body, s.err = io.ReadAll(r.Body)
	})).ServeHTTP(rec, r)
	return rec, s
}

// goEncode compresses data with squeeze's own encoder for coding.
func goEncode(tb testing.TB, coding string, data []byte) []byte {
	tb.Helper()
	levels, err := writers.Levels(coding)
	if err != nil {
		tb.Fatal(err)
	}
	enc, err := writers.NewEncoder(coding, levels.Default)
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	enc.Reset(&buf)
	if _, err := enc.Write(data); err != nil {
		tb.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// stdEncode compresses data with the standard library, an implementation
// independent of the decoders under test. raw selects deflate without the
// zlib wrapper.
func stdEncode(tb testing.TB, coding string, raw bool, data []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	var err error
	switch {
	case coding == Gzip:
		w = stdgzip.NewWriter(&buf)
	case coding == Deflate && raw:
		w, err = stdflate.NewWriter(&buf, stdflate.DefaultCompression)
	case coding == Deflate:
		w = stdzlib.NewWriter(&buf)
	default:
		tb.Fatalf("no standard library encoder for %s", coding)
	}
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// toolEncode runs a reference program (gzip -c, zstd -c, brotli -c) over data.
func toolEncode(tb testing.TB, name string, data []byte, args ...string) []byte {
	tb.Helper()
	path := testtool.Require(tb, name)
	cmd := exec.Command(path, args...)
	cmd.Stdin = bytes.NewReader(data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("%s %v: %v: %s", name, args, err, stderr.String())
	}
	return out
}

func TestDecodeRequestRoundTrips(t *testing.T) {
	plain := corpus.Prefix(t, corpus.HTML(t), 32<<10)
	m := mustNew(t, 0, 0)
	cases := []struct {
		name  string
		lines []string
		body  func(t *testing.T) []byte
		want  []byte
	}{
		{"gzip by squeeze", []string{"gzip"}, func(t *testing.T) []byte { return goEncode(t, Gzip, plain) }, plain},
		{"gzip by the standard library", []string{"gzip"}, func(t *testing.T) []byte { return stdEncode(t, Gzip, false, plain) }, plain},
		{"gzip by the gzip program", []string{"gzip"}, func(t *testing.T) []byte { return toolEncode(t, "gzip", plain, "-c") }, plain},
		{"gzip at level 9 by the gzip program", []string{"gzip"}, func(t *testing.T) []byte { return toolEncode(t, "gzip", plain, "-9", "-c") }, plain},
		{"x-gzip means gzip", []string{"x-gzip"}, func(t *testing.T) []byte { return goEncode(t, Gzip, plain) }, plain},
		{"names ignore case", []string{"GZip"}, func(t *testing.T) []byte { return goEncode(t, Gzip, plain) }, plain},
		{"X-GZIP in upper case", []string{"X-GZIP"}, func(t *testing.T) []byte { return goEncode(t, Gzip, plain) }, plain},
		{"two gzip members in a row", []string{"gzip"}, func(t *testing.T) []byte {
			return append(goEncode(t, Gzip, plain[:1000]), goEncode(t, Gzip, plain[1000:])...)
		}, plain},
		{"deflate (zlib) by squeeze", []string{"deflate"}, func(t *testing.T) []byte { return goEncode(t, Deflate, plain) }, plain},
		{"deflate (zlib) by the standard library", []string{"deflate"}, func(t *testing.T) []byte { return stdEncode(t, Deflate, false, plain) }, plain},
		{"raw deflate by the standard library", []string{"Deflate"}, func(t *testing.T) []byte { return stdEncode(t, Deflate, true, plain) }, plain},
		{"br by squeeze", []string{"br"}, func(t *testing.T) []byte { return goEncode(t, Brotli, plain) }, plain},
		{"br by the brotli program", []string{"br"}, func(t *testing.T) []byte { return toolEncode(t, "brotli", plain, "-c") }, plain},
		{"BR in upper case", []string{"BR"}, func(t *testing.T) []byte { return goEncode(t, Brotli, plain) }, plain},
		{"zstd by squeeze", []string{"zstd"}, func(t *testing.T) []byte { return goEncode(t, Zstd, plain) }, plain},
		{"zstd by the zstd program", []string{"zstd"}, func(t *testing.T) []byte { return toolEncode(t, "zstd", plain, "-c") }, plain},
		{"zstd at level 19 by the zstd program", []string{"zstd"}, func(t *testing.T) []byte { return toolEncode(t, "zstd", plain, "-19", "-c") }, plain},
		{"zstd with the 8 MB window RFC 9659 requires", []string{"zstd"}, func(t *testing.T) []byte {
			return toolEncode(t, "zstd", plain, "--long=23", "-c")
		}, plain},
		{"ZSTD in upper case", []string{"ZSTD"}, func(t *testing.T) []byte { return goEncode(t, Zstd, plain) }, plain},
		{"an empty body, compressed", []string{"gzip"}, func(t *testing.T) []byte { return goEncode(t, Gzip, nil) }, []byte{}},
		{"an empty body, zstd", []string{"zstd"}, func(t *testing.T) []byte { return goEncode(t, Zstd, nil) }, []byte{}},
		{"identity is no coding", []string{"identity"}, func(*testing.T) []byte { return plain }, plain},
		{"identity around a coding", []string{"identity, gzip, IDENTITY"}, func(t *testing.T) []byte { return goEncode(t, Gzip, plain) }, plain},
		{"empty list elements and spaces", []string{" ,\tgzip ,, "}, func(t *testing.T) []byte { return goEncode(t, Gzip, plain) }, plain},
		{"stacked: gzip then br", []string{"gzip, br"}, func(t *testing.T) []byte {
			return goEncode(t, Brotli, goEncode(t, Gzip, plain))
		}, plain},
		{"stacked on two field lines", []string{"gzip", "br"}, func(t *testing.T) []byte {
			return goEncode(t, Brotli, goEncode(t, Gzip, plain))
		}, plain},
		{"stacked: zstd then deflate", []string{"zstd,deflate"}, func(t *testing.T) []byte {
			return goEncode(t, Deflate, goEncode(t, Zstd, plain))
		}, plain},
		{"stacked by the programs: gzip then zstd", []string{"gzip, zstd"}, func(t *testing.T) []byte {
			return toolEncode(t, "zstd", toolEncode(t, "gzip", plain, "-c"), "-c")
		}, plain},
	}
	for _, tc := range cases {
		for _, length := range []string{"Content-Length", "chunked"} {
			t.Run(tc.name+"/"+length, func(t *testing.T) {
				body := tc.body(t)
				n := int64(len(body))
				if length == "chunked" {
					n = -1
				}
				r := encodedRequest(body, n, tc.lines...)
				origBody, origHeader := r.Body, r.Header.Clone()

				rec, s := serveRead(m, r)

				if !s.called {
					t.Fatalf("handler not called; status %d %q", rec.Code, rec.Body)
				}
				if s.err != nil {
					t.Fatalf("reading the body: %v", s.err)
				}
				if !bytes.Equal(s.body, tc.want) {
					t.Fatalf("handler read %d bytes, want %d", len(s.body), len(tc.want))
				}
				if v, ok := s.header["Content-Encoding"]; ok {
					t.Errorf("handler saw Content-Encoding %q", v)
				}
				identity := bytes.Equal(body, tc.want) && len(body) > 0
				switch {
				case identity && s.contentLength != n:
					t.Errorf("identity body: ContentLength %d, want %d unchanged", s.contentLength, n)
				case !identity && s.contentLength != -1:
					t.Errorf("decoded body: ContentLength %d, want -1", s.contentLength)
				case !identity && s.header.Get("Content-Length") != "":
					t.Errorf("decoded body: handler saw Content-Length %q", s.header.Get("Content-Length"))
				}
				if s.header.Get("Content-Type") != "text/html" {
					t.Errorf("other fields must pass: Content-Type %q", s.header.Get("Content-Type"))
				}
				// The caller's request is untouched.
				if r.Body != origBody || r.ContentLength != n || !maps.EqualFunc(r.Header, origHeader, slices.Equal) {
					t.Errorf("caller's request was modified: ContentLength %d, header %v", r.ContentLength, r.Header)
				}
			})
		}
	}
}

func TestDecodeRequestWithoutContentEncodingIsUntouched(t *testing.T) {
	m := mustNew(t, 0, 0)
	r := encodedRequest([]byte("plain"), 5)
	rec := httptest.NewRecorder()
	r2, release, ok := m.decodeRequest(rec, r, r.Header["Content-Encoding"])
	if r2 != r || release != nil || !ok {
		t.Fatalf("decodeRequest = (%p, %v, %v), want (%p, nil, true)", r2, release != nil, ok, r)
	}
	if raceEnabled {
		t.Skip("allocation counts are unreliable under -race")
	}
	if allocs := testing.AllocsPerRun(100, func() { m.decodeRequest(rec, r, r.Header["Content-Encoding"]) }); allocs != 0 {
		t.Errorf("plain request: %v allocations, want 0", allocs)
	}
}

// TestDecodeRequestWithoutBodyOnlyStripsTheField covers the requests that
// have nothing to decode: no Body at all, or an empty one that claims only
// identity.
func TestDecodeRequestWithoutBodyOnlyStripsTheField(t *testing.T) {
	m := mustNew(t, 0, 0)
	cases := []struct {
		name string
		r    func() *http.Request
	}{
		{"GET with a nil Body", func() *http.Request {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Header.Set("Content-Encoding", "br")
			r.Body = nil
			return r
		}},
		{"identity on http.NoBody", func() *http.Request {
			r := httptest.NewRequest(http.MethodGet, "/", http.NoBody)
			r.Header.Set("Content-Encoding", "identity")
			return r
		}},
		{"identity on Content-Length 0", func() *http.Request { return encodedRequest(nil, 0, "identity, ") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r()
			var s seen
			rec := httptest.NewRecorder()
			decodeOnly(m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				s.called = true
				s.header = r.Header.Clone()
				if r.Body != nil {
					s.body, s.err = io.ReadAll(r.Body)
				}
			})).ServeHTTP(rec, r)
			if !s.called || s.err != nil || len(s.body) != 0 {
				t.Fatalf("called %v, err %v, %d bytes; status %d", s.called, s.err, len(s.body), rec.Code)
			}
			if v, ok := s.header["Content-Encoding"]; ok {
				t.Errorf("handler saw Content-Encoding %q", v)
			}
			if r.Header.Get("Content-Encoding") == "" {
				t.Error("the caller's header lost its Content-Encoding")
			}
		})
	}
}

// TestDecodeRequestEmptyBodiesAreInvalid: an empty byte string is not a
// stream in any coding, so reading it fails the same way however the empty
// body was framed. Nothing is refused before the handler runs, so a handler
// that does not read the body answers as usual.
func TestDecodeRequestEmptyBodiesAreInvalid(t *testing.T) {
	m := mustNew(t, 0, 0)
	noBody := func(lines ...string) func() *http.Request {
		return func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, "/", http.NoBody)
			r.Header["Content-Encoding"] = lines
			return r
		}
	}
	cases := []struct {
		name string
		r    func() *http.Request
	}{
		{"gzip on http.NoBody", noBody("gzip")},
		{"zstd on Content-Length 0", func() *http.Request { return encodedRequest(nil, 0, "zstd") }},
		{"br on Content-Length 0", func() *http.Request { return encodedRequest(nil, 0, "br") }},
		{"deflate on Content-Length 0", func() *http.Request { return encodedRequest(nil, 0, "identity, deflate") }},
		{"gzip, chunked", func() *http.Request { return encodedRequest(nil, -1, "gzip") }},
		{"two layers on http.NoBody", noBody("gzip, zstd")},
		{"an unknown coding on http.NoBody", noBody("compress, gzip, br, zstd")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r()
			rec, s := serveRead(m, r)
			if !s.called {
				t.Fatalf("status %d before the handler ran", rec.Code)
			}
			if !errors.Is(s.err, ErrInvalidBody) || !errors.Is(s.err, io.ErrUnexpectedEOF) {
				t.Fatalf("read %d bytes, error %v; want ErrInvalidBody wrapping io.ErrUnexpectedEOF", len(s.body), s.err)
			}
			if v, ok := s.header["Content-Encoding"]; ok {
				t.Errorf("handler saw Content-Encoding %q", v)
			}
			if s.contentLength != -1 {
				t.Errorf("ContentLength %d, want -1: the body is not the empty one the length declared", s.contentLength)
			}
			// A handler that never reads is not affected.
			rec = httptest.NewRecorder()
			decodeOnly(m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusNoContent)
			})).ServeHTTP(rec, tc.r())
			if rec.Code != http.StatusNoContent {
				t.Errorf("a handler that does not read answered %d, want 204", rec.Code)
			}
		})
	}
}

func TestDecodeRequestRefusesWhatItCannotDecode(t *testing.T) {
	body := goEncode(t, Gzip, []byte("hello"))
	cases := []struct {
		name  string
		lines []string
	}{
		{"unknown coding", []string{"compress"}},
		{"dictionary coding", []string{"dcz"}},
		{"wildcard", []string{"*"}},
		{"parameters are not part of a coding", []string{"gzip;q=1"}},
		{"unknown coding after a known one", []string{"gzip, snappy"}},
		{"unknown coding after identity", []string{"identity, foo"}},
		{"three layers", []string{"gzip, br, zstd"}},
		{"three layers over three field lines", []string{"gzip", "gzip", "gzip"}},
	}
	m := mustNew(t, 0, 0)
	for _, tc := range cases {
		for _, via := range []string{"decodeRequest"} {
			t.Run(tc.name+"/"+via, func(t *testing.T) {
				called := false
				next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true })
				h := decodeOnly(m, next)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, encodedRequest(body, int64(len(body)), tc.lines...))
				if called {
					t.Error("handler was called")
				}
				if rec.Code != http.StatusUnsupportedMediaType {
					t.Errorf("status %d, want 415", rec.Code)
				}
				if got := rec.Header().Get("Accept-Encoding"); got != AcceptEncoding {
					t.Errorf("Accept-Encoding %q, want %q", got, AcceptEncoding)
				}
			})
		}
	}
}

func TestHandlers415HasNoAcceptEncoding(t *testing.T) {
	m := mustNew(t, 0, 0)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "want JSON", http.StatusUnsupportedMediaType)
	})
	body := goEncode(t, Gzip, []byte("<p>not json</p>"))
	for _, via := range []string{"decodeRequest"} {
		for _, lines := range [][]string{nil, {"gzip"}} {
			t.Run(fmt.Sprint(via, lines), func(t *testing.T) {
				h := decodeOnly(m, next)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, encodedRequest(body, int64(len(body)), lines...))
				if rec.Code != http.StatusUnsupportedMediaType {
					t.Fatalf("status %d, want the handler's 415", rec.Code)
				}
				if v, ok := rec.Header()["Accept-Encoding"]; ok {
					t.Errorf("a 415 for another reason carries Accept-Encoding %q", v)
				}
			})
		}
	}
}

func TestRequestCodingsListsEveryDecoder(t *testing.T) {
	want := strings.Join(writers.Codings(), ", ")
	if AcceptEncoding != want {
		t.Errorf("AcceptEncoding = %q, want %q", AcceptEncoding, want)
	}
	m := mustNew(t, 0, 0)
	for _, c := range writers.Codings() {
		if m.pools[c] == nil {
			t.Errorf("no decoder pool for %s", c)
		}
	}
}

func TestCompressedLimit(t *testing.T) {
	cases := []struct{ limit, want int64 }{
		{1, 1 + codecOverhead},
		{1 << 20, 1<<20 + 1<<14 + codecOverhead},
		{defaultMaxSize, defaultMaxSize + defaultMaxSize/64 + codecOverhead},
		{math.MaxInt64 - 10, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64},
	}
	for _, tc := range cases {
		if got := CompressedLimit(tc.limit); got != tc.want {
			t.Errorf("CompressedLimit(%d) = %d, want %d", tc.limit, got, tc.want)
		}
	}
}

func TestDecodeRequestRefusesDeclaredLengthBeyondTheCap(t *testing.T) {
	const limit = 1 << 20
	m := mustNew(t, limit, 0)
	body := goEncode(t, Gzip, []byte("small"))
	cases := []struct {
		name     string
		declared int64
		want     int
	}{
		{"just over the compressed limit", CompressedLimit(limit) + 1, http.StatusRequestEntityTooLarge},
		{"far over", 1 << 40, http.StatusRequestEntityTooLarge},
		{"at the compressed limit", CompressedLimit(limit), http.StatusOK},
		{"unknown length", -1, http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			called := false
			r := encodedRequest(body, 0, "gzip")
			r.ContentLength = tc.declared
			rec := httptest.NewRecorder()
			decodeOnly(m, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true })).ServeHTTP(rec, r)
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d", rec.Code, tc.want)
			}
			if refused := tc.want != http.StatusOK; refused == called {
				t.Errorf("handler called: %v", called)
			}
			if tc.want == http.StatusRequestEntityTooLarge && rec.Header().Get("Connection") != "close" {
				t.Errorf("Connection %q, want close: the rest of the body will not be read", rec.Header().Get("Connection"))
			}
		})
	}
}

// zeroBomb returns a valid stream in coding that decodes to mib MiB of
// zeros. Each encoder reaches a fixed point after a flush: the bytes for one
// more piece of zeros are the same every time. So the stream is built from
// the bytes for the first piece, the bytes for the next repeated, and the
// end, which costs milliseconds where compressing 1 GiB costs seconds
// (minutes under -race). The windows are the largest each coding allows, as
// an attacker would choose.
func zeroBomb(tb testing.TB, coding string, mib int) []byte {
	tb.Helper()
	const piece = 256 << 10
	pieces := mib * (1 << 20 / piece)
	zeros := make([]byte, piece)
	type flusher interface {
		io.WriteCloser
		Flush() error
	}
	repeat := func(w flusher, buf *bytes.Buffer) []byte {
		var parts [3][]byte
		for i := range parts {
			if _, err := w.Write(zeros); err != nil {
				tb.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				tb.Fatal(err)
			}
			parts[i] = bytes.Clone(buf.Bytes())
			buf.Reset()
		}
		if !bytes.Equal(parts[1], parts[2]) {
			tb.Fatalf("%s: the encoder has no fixed point to repeat", coding)
		}
		if err := w.Close(); err != nil {
			tb.Fatal(err)
		}
		out := parts[0]
		for range pieces - 1 {
			out = append(out, parts[1]...)
		}
		return append(out, buf.Bytes()...)
	}
	var buf bytes.Buffer
	switch coding {
	case Gzip, Deflate:
		fw, err := flate.NewWriter(&buf, 1)
		if err != nil {
			tb.Fatal(err)
		}
		deflated := repeat(fw, &buf)
		total := uint64(mib) << 20
		if coding == Deflate {
			// zlib: CMF/FLG, the deflate stream, then Adler-32. Over n
			// zeros Adler-32's low sum stays 1 and its high sum is n.
			out := append([]byte{0x78, 0x01}, deflated...)
			return binary.BigEndian.AppendUint32(out, uint32(total%65521)<<16|1)
		}
		out := append([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}, deflated...)
		out = binary.LittleEndian.AppendUint32(out, crc32Zeros(total))
		return binary.LittleEndian.AppendUint32(out, uint32(total))
	case Brotli:
		return repeat(brotli.NewWriterOptions(&buf, brotli.WriterOptions{Quality: 5, LGWin: 24}), &buf)
	case Zstd:
		// Whole frames, each with its checksum, one after another.
		zw, err := zstd.NewWriter(&buf, zstd.WithWindowSize(writers.ZstdMaxWindow), zstd.WithEncoderConcurrency(1))
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := zw.Write(zeros); err != nil {
			tb.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			tb.Fatal(err)
		}
		return bytes.Repeat(buf.Bytes(), pieces)
	}
	tb.Fatalf("no bomb for %s", coding)
	return nil
}

// crc32Zeros returns the IEEE CRC-32 of n zero bytes in O(log n) steps:
// feeding a zero byte is a linear map of the CRC register, so feeding n of
// them is that map's n-th power.
func crc32Zeros(n uint64) uint32 {
	var step [32]uint32 // the register after one zero byte, from register 1<<i
	for i := range step {
		step[i] = ^crc32.Update(^uint32(1<<i), crc32.IEEETable, []byte{0})
	}
	apply := func(m *[32]uint32, v uint32) uint32 {
		var r uint32
		for i := 0; v != 0; i, v = i+1, v>>1 {
			if v&1 != 0 {
				r ^= m[i]
			}
		}
		return r
	}
	reg := ^uint32(0)
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			reg = apply(&step, reg)
		}
		var squared [32]uint32
		for i := range squared {
			squared[i] = apply(&step, step[i])
		}
		step = squared
	}
	return ^reg
}

// TestZeroBombsAreValid decodes small bombs, built the same way, to the end
// with decoders other than squeeze's pools.
func TestZeroBombsAreValid(t *testing.T) {
	for _, n := range []uint64{0, 1, 2, 1000, 1 << 20, 3<<20 + 7} {
		if got, want := crc32Zeros(n), crc32.ChecksumIEEE(make([]byte, n)); got != want {
			t.Errorf("crc32Zeros(%d) = %#x, want %#x", n, got, want)
		}
	}
	for _, coding := range writers.Codings() {
		t.Run(coding, func(t *testing.T) {
			const mib = 1 // the first piece, then the repeated one three times
			bomb := zeroBomb(t, coding, mib)
			var r io.Reader
			var err error
			switch coding {
			case Gzip:
				r, err = stdgzip.NewReader(bytes.NewReader(bomb))
			case Deflate:
				r, err = stdzlib.NewReader(bytes.NewReader(bomb))
			case Brotli:
				r = brotli.NewReader(bytes.NewReader(bomb))
			case Zstd:
				var d *zstd.Decoder
				d, err = zstd.NewReader(bytes.NewReader(bomb), zstd.WithDecoderConcurrency(1))
				if err == nil {
					defer d.Close()
				}
				r = d
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			if err != nil {
				t.Fatalf("after %d bytes: %v", len(got), err)
			}
			if len(got) != mib<<20 || bytes.ContainsFunc(got, func(r rune) bool { return r != 0 }) {
				t.Fatalf("decoded %d bytes, want %d zeros", len(got), mib<<20)
			}
		})
	}
}

// codecTables bounds what a fresh decoder allocates besides its window:
// Huffman and FSE tables, block buffers, the request copy.
const codecTables = 1 << 20

// bombLimit is the decoded cap the bombs run into: 1 MiB, or 256 KiB under
// -race, where decoding each MiB of zeros costs a second or more.
func bombLimit() int64 {
	if raceEnabled {
		return 256 << 10
	}
	return 1 << 20
}

// windowSlack bounds what a decoder may allocate for its window, whatever
// the cap: deflate's fixed 32 KiB; zstd's 8 MB maximum plus two blocks of
// working space; br's 16 MiB maximum, allocated up to twice over because
// the decoder grows its ring buffer by doubling.
var windowSlack = map[string]uint64{
	Gzip:    64 << 10,
	Deflate: 64 << 10,
	Zstd:    writers.ZstdMaxWindow + 2*(128<<10+64),
	Brotli:  2 * (16<<20 + 64<<10),
}

// TestDecodeRequestBombsStopAtTheCap sends 1 GiB of zeros in every coding
// against a 1 MiB cap. Sent chunked, the handler reads exactly the cap, then
// gets the error http.MaxBytesReader gives. The bytes allocated meanwhile (an
// upper bound on the heap's growth) stay within the coding's window plus
// 1 MiB of tables, whatever the cap: nothing scales with the decoded size;
// the only large allocation is the window the stream declares. Sent with its
// Content-Length, a bomb is either refused before the handler runs (the
// deflate ones are longer than the cap allows) or stopped the same way.
func TestDecodeRequestBombsStopAtTheCap(t *testing.T) {
	limit := bombLimit()
	for _, coding := range writers.Codings() {
		bomb := zeroBomb(t, coding, 1024)
		for _, length := range []string{"chunked", "Content-Length"} {
			t.Run(coding+"/"+length, func(t *testing.T) {
				var called bool
				var n int64
				var err error
				declared := int64(len(bomb))
				if length == "chunked" {
					declared = -1
				}
				var rec *httptest.ResponseRecorder
				bound := windowSlack[coding] + codecTables
				allocated := testtool.LeastWithin(bound, func() uint64 {
					called, n, err = false, 0, nil
					h := decodeOnly(mustNew(t, limit, 0), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						called = true
						n, err = io.Copy(io.Discard, r.Body)
					}))
					r := encodedRequest(bomb, declared, coding)
					rec = httptest.NewRecorder()
					return testtool.AllocatedBy(func() { h.ServeHTTP(rec, r) })
				})

				if declared > CompressedLimit(limit) {
					if called || rec.Code != http.StatusRequestEntityTooLarge {
						t.Fatalf("%d-byte bomb: handler called %v, status %d; want 413 before the handler", len(bomb), called, rec.Code)
					}
					return
				}
				var tooLarge *http.MaxBytesError
				if !errors.As(err, &tooLarge) || tooLarge.Limit != limit {
					t.Fatalf("after %d bytes: error %v, want *http.MaxBytesError with Limit %d", n, err, limit)
				}
				if n != limit {
					t.Errorf("handler read %d bytes, want exactly the cap %d", n, limit)
				}
				t.Logf("%s: %d-byte bomb of 1 GiB; allocated %d KiB (bound %d KiB)", coding, len(bomb), allocated>>10, bound>>10)
				if allocated > bound {
					t.Errorf("decoding allocated %d bytes, want at most %d (%s window + tables)", allocated, bound, coding)
				}
			})
		}
	}
}

// TestDecodeRequestWindowsCostAtMostTheirSize pins the one cost a tiny
// body can impose regardless of the cap: a stream that declares the largest
// window its coding allows makes the decoder allocate it. Larger windows
// are refused before anything is allocated.
func TestDecodeRequestWindowsCostAtMostTheirSize(t *testing.T) {
	cases := []struct {
		name   string
		coding string
		body   []byte
	}{
		// Magic, a header with a Window_Descriptor of exactly 8 MiB, then a
		// raw 5-byte block that is not the last: the stream is cut short.
		{"zstd 8 MiB window", Zstd, []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x68, 0x28, 0x00, 0x00, 'h', 'e', 'l', 'l', 'o'}},
		// WBITS 24, then an uncompressed meta-block declaring 16 MiB of
		// which 5 bytes arrive.
		{"br 16 MiB window", Brotli, []byte{0xcf, 0xff, 0xff, 0xff, 'h', 'e', 'l', 'l', 'o'}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s seen
			bound := windowSlack[tc.coding] + codecTables
			allocated := testtool.LeastWithin(bound, func() uint64 {
				m := mustNew(t, 1<<20, 0)
				r := encodedRequest(tc.body, int64(len(tc.body)), tc.coding)
				return testtool.AllocatedBy(func() { _, s = serveRead(m, r) })
			})
			if !errors.Is(s.err, ErrInvalidBody) {
				t.Fatalf("error %v, want ErrInvalidBody", s.err)
			}
			t.Logf("%d-byte body: allocated %d KiB (bound %d KiB)", len(tc.body), allocated>>10, bound>>10)
			if allocated > bound {
				t.Errorf("allocated %d bytes, want at most %d", allocated, bound)
			}
		})
	}
}

func TestDecodeRequestRefusesHugeZstdWindows(t *testing.T) {
	m := mustNew(t, 0, 0)
	// A frame header with Window_Descriptor 0xa0 (2^30: 1 GiB), then a
	// last raw block of 5 bytes. Everything else about it is valid.
	crafted := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xa0, 0x29, 0x00, 0x00, 'h', 'e', 'l', 'l', 'o'}
	cases := []struct {
		name string
		body func(t *testing.T) []byte
	}{
		{"crafted 1 GiB window", func(*testing.T) []byte { return crafted }},
		{"9 MiB window, just over the maximum", func(*testing.T) []byte {
			b := bytes.Clone(crafted)
			b[5] = 0x69 // 8 MiB + 1/8
			return b
		}},
		{"zstd --long=27 (128 MiB window)", func(t *testing.T) []byte {
			return toolEncode(t, "zstd", corpus.Prefix(t, corpus.HTML(t), 4096), "--long=27", "-c")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body(t)
			_, s := serveRead(m, encodedRequest(body, int64(len(body)), Zstd))
			if !errors.Is(s.err, ErrInvalidBody) {
				t.Fatalf("error %v, want ErrInvalidBody", s.err)
			}
			if !errors.Is(s.err, zstd.ErrWindowSizeExceeded) && !errors.Is(s.err, zstd.ErrDecoderSizeExceeded) {
				t.Errorf("error %v does not wrap the codec's window error", s.err)
			}
			if len(s.body) != 0 {
				t.Errorf("%d bytes decoded before the refusal", len(s.body))
			}
		})
	}
}

// endless is a request body that repeats unit without end.
type endless struct {
	unit []byte
	off  int
	n    int64
}

func (e *endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], e.unit[e.off:])
		n += c
		e.off = (e.off + c) % len(e.unit)
	}
	e.n += int64(n)
	return n, nil
}

func (e *endless) Close() error { return nil }

// TestDecodeRequestLimitsCompressedInput covers streams that decode to
// little or nothing: without a limit on their input, a client could keep one
// decoder busy for as long as it keeps sending.
func TestDecodeRequestLimitsCompressedInput(t *testing.T) {
	const limit = 1 << 20
	inLimit := CompressedLimit(limit)
	skippable := func(size int) []byte {
		frame := binary.LittleEndian.AppendUint32([]byte{0x50, 0x2a, 0x4d, 0x18}, uint32(size))
		return append(frame, make([]byte, size)...)
	}
	cases := []struct {
		name  string
		lines []string
		unit  []byte
	}{
		{"endless zstd skippable frames", []string{"zstd"}, skippable(64 << 10)},
		{"endless empty gzip members", []string{"gzip"}, goEncode(t, Gzip, nil)},
		{"endless empty zstd frames", []string{"zstd"}, goEncode(t, Zstd, nil)},
		// gzip undoes to skippable frames far beyond the limit for zstd's
		// input while the bytes sent stay small.
		{"a layer that inflates into an endless inner layer", []string{"zstd", "gzip"},
			goEncode(t, Gzip, bytes.Repeat(skippable(1000), 4*limit/1000))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := mustNew(t, limit, 0)
			src := &endless{unit: tc.unit}
			r := httptest.NewRequest(http.MethodPost, "/", src)
			r.Header["Content-Encoding"] = tc.lines
			_, s := serveRead(m, r)
			var tooLarge *http.MaxBytesError
			if !errors.As(s.err, &tooLarge) || tooLarge.Limit != inLimit {
				t.Fatalf("error %v, want *http.MaxBytesError with Limit %d", s.err, inLimit)
			}
			if errors.Is(s.err, ErrInvalidBody) {
				t.Errorf("a limit is not an invalid body: %v", s.err)
			}
			if len(s.body) != 0 {
				t.Errorf("decoded %d bytes, want 0", len(s.body))
			}
			if src.n > inLimit+64<<10 {
				t.Errorf("read %d bytes of the body, want about %d", src.n, inLimit)
			}
		})
	}
}

// TestDecodeRequestBombsOverAServer checks the end to end behaviour: the
// handler's usual "413 on *http.MaxBytesError" answers, and net/http then
// closes the connection because the rest of the body was never read.
func TestDecodeRequestBombsOverAServer(t *testing.T) {
	m := mustNew(t, bombLimit(), 0)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.Copy(io.Discard, r.Body)
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			http.Error(w, "too large", http.StatusRequestEntityTooLarge)
		case errors.Is(err, ErrInvalidBody):
			http.Error(w, "bad body", http.StatusBadRequest)
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	bombs := map[string][]byte{}
	for _, coding := range writers.Codings() {
		bombs[coding] = zeroBomb(t, coding, 1024)
	}
	direct := httptest.NewServer(decodeOnly(m, next))
	defer direct.Close()
	for _, coding := range writers.Codings() {
		for _, length := range []string{"Content-Length", "chunked"} {
			t.Run(coding+"/"+length, func(t *testing.T) {
				testBombOverAServer(t, direct.URL, coding, bombs[coding], length == "chunked")
			})
		}
	}
	// Compressed bytes that decode to nothing run into the input limit:
	// zstd skippable frames, twice as many as the limit allows.
	var skippable []byte
	for len(skippable) < 2*int(CompressedLimit(bombLimit())) {
		skippable = binary.LittleEndian.AppendUint32(append(skippable, 0x50, 0x2a, 0x4d, 0x18), 1000)
		skippable = append(skippable, make([]byte, 1000)...)
	}
	t.Run("compressed input over its limit", func(t *testing.T) {
		testBombOverAServer(t, direct.URL, Zstd, skippable, true)
	})
}

func testBombOverAServer(t *testing.T, url, coding string, bomb []byte, chunked bool) {
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	post := func(body []byte) (*http.Response, bool) {
		var reused bool
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
		ctx := httptrace.WithClientTrace(context.Background(), trace)
		var src io.Reader = bytes.NewReader(body)
		if chunked {
			src = io.MultiReader(src) // hides the length
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, src)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Encoding", coding)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp, reused
	}
	// A small valid body first, so the connection is idle and
	// reusable when the bomb goes out on it.
	if resp, _ := post(goEncode(t, coding, []byte("warm up"))); resp.StatusCode != http.StatusOK {
		t.Fatalf("warm-up status %d", resp.StatusCode)
	}
	resp, reused := post(bomb)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("bomb status %d, want 413", resp.StatusCode)
	}
	if !reused {
		t.Error("the bomb did not go out on the warm connection; the check below proves nothing")
	}
	if !resp.Close {
		t.Error("the 413 does not close the connection")
	}
	if _, reused := post(goEncode(t, coding, []byte("after"))); reused {
		t.Error("the connection that carried the bomb was reused")
	}
}

// TestDecodeRequestRejectsCorruptStreams truncates streams at every length
// and flips every bit of them. Truncation is always detected. A flip is
// detected or, in the codings with a checksum, decodes to the original
// bytes (a flip in an unchecked header field); br and raw deflate have no
// checksum, so a flip there may decode to other bytes, but never to an
// error other than ErrInvalidBody.
func TestDecodeRequestRejectsCorruptStreams(t *testing.T) {
	plain := corpus.Prefix(t, corpus.HTML(t), 400)
	m := mustNew(t, 0, 0)
	cases := []struct {
		name     string
		coding   string
		body     []byte
		checksum bool
	}{
		{"gzip", Gzip, goEncode(t, Gzip, plain), true},
		{"deflate (zlib)", Deflate, goEncode(t, Deflate, plain), true},
		{"raw deflate", Deflate, stdEncode(t, Deflate, true, plain), false},
		{"br", Brotli, goEncode(t, Brotli, plain), false},
		{"zstd", Zstd, goEncode(t, Zstd, plain), true},
		{"gzip, br", "gzip, br", goEncode(t, Brotli, goEncode(t, Gzip, plain)), true},
	}
	for _, tc := range cases {
		t.Run(tc.name+"/truncated", func(t *testing.T) {
			for n := range len(tc.body) {
				length := int64(n)
				if n == 0 {
					length = -1 // a declared 0 is no body at all
				}
				_, s := serveRead(m, encodedRequest(tc.body[:n], length, tc.coding))
				if !errors.Is(s.err, ErrInvalidBody) {
					t.Fatalf("cut to %d of %d bytes: error %v after %d bytes, want ErrInvalidBody", n, len(tc.body), s.err, len(s.body))
				}
			}
		})
		t.Run(tc.name+"/bit flipped", func(t *testing.T) {
			detected, changed := 0, 0
			for bit := range 8 * len(tc.body) {
				body := bytes.Clone(tc.body)
				body[bit/8] ^= 1 << (bit % 8)
				_, s := serveRead(m, encodedRequest(body, int64(len(body)), tc.coding))
				switch {
				case errors.Is(s.err, ErrInvalidBody):
					detected++
				case s.err != nil:
					t.Fatalf("bit %d: error %v, want nil or ErrInvalidBody", bit, s.err)
				case !bytes.Equal(s.body, plain):
					changed++
					if tc.checksum {
						t.Fatalf("bit %d: decoded to other bytes without an error", bit)
					}
				}
			}
			t.Logf("%d of %d flips detected, %d decoded to other bytes", detected, 8*len(tc.body), changed)
			if detected == 0 {
				t.Error("no flip was detected")
			}
		})
	}
}

func TestDecodeRequestErrorsWrapTheCodecError(t *testing.T) {
	m := mustNew(t, 0, 0)
	plain := []byte(strings.Repeat("squeeze ", 200))
	flipLast := func(b []byte) []byte {
		b = bytes.Clone(b)
		b[len(b)-5] ^= 0xff
		return b
	}
	cases := []struct {
		name   string
		coding string
		body   []byte
		is     error
		as     any
	}{
		{"gzip bad magic", Gzip, []byte("not gzip at all"), gzip.ErrHeader, nil},
		{"gzip bad checksum", Gzip, flipLast(goEncode(t, Gzip, plain)), gzip.ErrChecksum, nil},
		{"gzip truncated", Gzip, goEncode(t, Gzip, plain)[:30], io.ErrUnexpectedEOF, nil},
		{"zlib bad checksum", Deflate, goEncode(t, Deflate, plain)[:len(goEncode(t, Deflate, plain))-1], io.ErrUnexpectedEOF, nil},
		{"raw deflate corrupt", Deflate, []byte{0xff, 0xff, 0xff, 0xff}, nil, new(flate.CorruptInputError)},
		{"zstd bad magic", Zstd, []byte("definitely not zstd"), zstd.ErrMagicMismatch, nil},
		{"zstd bad checksum", Zstd, flipLast(goEncode(t, Zstd, plain)), nil, nil},
		{"empty chunked body", Gzip, nil, io.ErrUnexpectedEOF, nil},
		{"zlib", Deflate, append([]byte{0x78, 0x9c}, 0xff, 0xff), nil, new(flate.CorruptInputError)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			length := int64(len(tc.body))
			if length == 0 {
				length = -1
			}
			_, s := serveRead(m, encodedRequest(tc.body, length, tc.coding))
			if !errors.Is(s.err, ErrInvalidBody) {
				t.Fatalf("error %v, want ErrInvalidBody", s.err)
			}
			if tc.is != nil && !errors.Is(s.err, tc.is) {
				t.Errorf("error %v does not wrap %v", s.err, tc.is)
			}
			if tc.as != nil && !errors.As(s.err, tc.as) {
				t.Errorf("error %v does not wrap a %T", s.err, tc.as)
			}
			if !strings.Contains(s.err.Error(), tc.coding) {
				t.Errorf("error %q does not name the coding", s.err)
			}
		})
	}
}

// failingBody returns its bytes, then err: a client that went away, a read
// timeout.
type failingBody struct {
	r   io.Reader
	err error
}

func (f *failingBody) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		err = f.err
	}
	return n, err
}

func (f *failingBody) Close() error { return nil }

func TestDecodeRequestPassesOnTheBodysOwnErrors(t *testing.T) {
	errGone := errors.New("client went away")
	plain := corpus.Prefix(t, corpus.HTML(t), 32<<10)
	m := mustNew(t, 0, 0)
	for _, lines := range [][]string{{Gzip}, {Deflate}, {Brotli}, {Zstd}, {"gzip, br"}} {
		t.Run(lines[0], func(t *testing.T) {
			body := plain
			for _, c := range strings.Split(lines[0], ", ") {
				body = goEncode(t, c, body)
			}
			r := httptest.NewRequest(http.MethodPost, "/", &failingBody{r: bytes.NewReader(body[:len(body)/2]), err: errGone})
			r.Header["Content-Encoding"] = lines
			_, s := serveRead(m, r)
			if !errors.Is(s.err, errGone) {
				t.Fatalf("error %v, want the body's own error", s.err)
			}
			if errors.Is(s.err, ErrInvalidBody) {
				t.Errorf("the body's failure is reported as an invalid stream: %v", s.err)
			}
		})
	}
}

// FuzzDecodeRequest feeds arbitrary bytes under every coding, and two
// stacks. Whatever the bytes: no panic, never more than the cap, and only
// the errors handlers are told to expect.
func FuzzDecodeRequest(f *testing.F) {
	codings := []string{Gzip, Deflate, Brotli, Zstd, "gzip, br", "zstd, deflate"}
	const limit = 64 << 10
	seed := []byte(strings.Repeat(`{"name":"squeeze","tags":["a","b"]}`, 40))
	for i, c := range codings {
		body := seed
		for _, layer := range strings.Split(c, ", ") {
			body = goEncode(f, layer, body)
		}
		f.Add(uint8(i), body)
		f.Add(uint8(i), body[:len(body)/2])
		f.Add(uint8(i), []byte{})
	}
	for i, c := range writers.Codings() {
		f.Add(uint8(i), zeroBomb(f, c, 1))
	}
	m := mustNew(f, limit, 0)
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		coding := codings[int(which)%len(codings)]
		length := int64(len(data))
		if length == 0 {
			length = -1
		}
		var n int64
		var err, afterClose error
		decodeOnly(m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n, err = io.Copy(io.Discard, r.Body)
			r.Body.Close()
			_, afterClose = r.Body.Read(make([]byte, 1))
		})).ServeHTTP(httptest.NewRecorder(), encodedRequest(data, length, coding))
		if n > limit {
			t.Fatalf("%s: read %d bytes, beyond the cap %d", coding, n, limit)
		}
		var tooLarge *http.MaxBytesError
		if err != nil && !errors.Is(err, ErrInvalidBody) && !errors.As(err, &tooLarge) {
			t.Fatalf("%s: unexpected error %v", coding, err)
		}
		if afterClose != http.ErrBodyReadAfterClose {
			t.Fatalf("%s: Read after Close: %v", coding, afterClose)
		}
	})
}

func TestDecodeRequestLeavesNoGoroutines(t *testing.T) {
	plain := corpus.Prefix(t, corpus.HTML(t), 2<<10)
	m := mustNew(t, 0, 0)
	bodies := map[string][]byte{}
	for _, c := range writers.Codings() {
		bodies[c] = goEncode(t, c, plain)
	}
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				c := writers.Codings()[(g+i)%4]
				body := bodies[c]
				if i%3 == 0 {
					body = body[:len(body)/2] // failures too
				}
				_, s := serveRead(m, encodedRequest(body, int64(len(body)), c))
				if s.err == nil && !bytes.Equal(s.body, plain) {
					t.Errorf("%s: wrong body", c)
					return
				}
			}
		})
	}
	wg.Wait()
	after := runtime.NumGoroutine()
	// Their goroutines end as their bodies close, which a loaded machine
	// may take seconds to schedule; one that leaked never ends.
	for deadline := time.Now().Add(10 * time.Second); after > before && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		after = runtime.NumGoroutine()
	}
	if after > before {
		t.Errorf("%d goroutines before 2000 decodes, %d after", before, after)
	}
}

// decodeAllocs is what decodeRequest adds to the codec's own allocations
// with warm pools: the request copy with its body (one), the cloned header
// (three), the release func (one).
const decodeAllocs = 5

func TestDecodeRequestAllocationsDoNotGrowWithTheBody(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops Puts under -race, so allocation counts mean nothing")
	}
	json := corpus.JSON(t)
	m := mustNew(t, 0, 0)
	rec := httptest.NewRecorder()
	buf := make([]byte, 32<<10)
	drain := func(r io.Reader, want int) {
		total := 0
		for {
			n, err := r.Read(buf)
			total += n
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if total != want {
			t.Fatalf("decoded %d bytes, want %d", total, want)
		}
	}
	for _, coding := range writers.Codings() {
		t.Run(coding, func(t *testing.T) {
			var allocs, floor [2]float64
			for i, size := range []int{1 << 10, 64 << 10} {
				body := goEncode(t, coding, corpus.Prefix(t, json, size))
				src := bytes.NewReader(body)
				r := httptest.NewRequest(http.MethodPost, "/", io.NopCloser(src))
				r.ContentLength = int64(len(body))
				r.Header.Set("Content-Encoding", coding)
				r.Header.Set("Content-Type", "application/json")
				floor[i] = testing.AllocsPerRun(200, func() {
					src.Reset(body)
					d, err := m.pools[coding].Get(src)
					if err != nil {
						t.Fatal(err)
					}
					drain(d, size)
					m.pools[coding].Put(d)
				})
				allocs[i] = testing.AllocsPerRun(200, func() {
					src.Reset(body)
					r2, release, ok := m.decodeRequest(rec, r, r.Header["Content-Encoding"])
					if !ok {
						t.Fatal("refused")
					}
					drain(r2.Body, size)
					release()
				})
			}
			t.Logf("%s: %v allocations for 1 KiB, %v for 64 KiB (the codec alone: %v, %v)",
				coding, allocs[0], allocs[1], floor[0], floor[1])
			if allocs[1] > allocs[0] {
				t.Errorf("allocations grow with the body: %v for 1 KiB, %v for 64 KiB", allocs[0], allocs[1])
			}
			for i := range allocs {
				if allocs[i] > floor[i]+decodeAllocs {
					t.Errorf("%v allocations, want at most the codec's %v + %d", allocs[i], floor[i], decodeAllocs)
				}
			}
		})
	}
}

// body returns the Body behind a decoded request.
func body(t *testing.T, r *http.Request) *Body {
	t.Helper()
	b, ok := r.Body.(*Body)
	if !ok {
		t.Fatalf("Body is a %T, not a Body", r.Body)
	}
	return b
}

// assertReleased checks that every decoder went back to its pool (Put
// panics on a second return, so "once" needs no check of its own).
func assertReleased(t *testing.T, b *Body) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.released {
		t.Fatal("decoders not released")
	}
	for i := range b.n {
		if b.layers[i].dec != nil {
			t.Fatalf("layer %d still holds its decoder", i)
		}
	}
}

// closeRecorder notes whether the body that arrived was closed.
type closeRecorder struct {
	io.Reader
	closed int
}

func (c *closeRecorder) Close() error { c.closed++; return nil }

func TestDecodeRequestReleasesDecodersExactlyOnce(t *testing.T) {
	plain := corpus.Prefix(t, corpus.HTML(t), 64<<10)
	m := mustNew(t, 0, 0)
	for _, lines := range [][]string{{Gzip}, {Deflate}, {Brotli}, {Zstd}, {"zstd, br"}} {
		encoded := plain
		for _, c := range strings.Split(lines[0], ", ") {
			encoded = goEncode(t, c, encoded)
		}
		request := func() (*http.Request, *closeRecorder) {
			raw := &closeRecorder{Reader: bytes.NewReader(encoded)}
			r := httptest.NewRequest(http.MethodPost, "/", raw)
			r.ContentLength = int64(len(encoded))
			r.Header["Content-Encoding"] = lines
			return r, raw
		}
		t.Run(lines[0]+"/handler closes early", func(t *testing.T) {
			r, raw := request()
			decodeOnly(m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, err := io.ReadFull(r.Body, make([]byte, 100)); err != nil {
					t.Fatal(err)
				}
				if err := r.Body.Close(); err != nil {
					t.Fatal(err)
				}
				assertReleased(t, body(t, r)) // at Close, not at return
				if raw.closed != 1 {
					t.Errorf("the body that arrived was closed %d times, want 1", raw.closed)
				}
				if _, err := r.Body.Read(make([]byte, 1)); err != http.ErrBodyReadAfterClose {
					t.Errorf("Read after Close: %v, want http.ErrBodyReadAfterClose", err)
				}
				if err := r.Body.Close(); err != nil {
					t.Errorf("second Close: %v", err)
				}
			})).ServeHTTP(httptest.NewRecorder(), r)
			if raw.closed != 1 {
				t.Errorf("the body that arrived was closed %d times, want 1", raw.closed)
			}
		})
		t.Run(lines[0]+"/handler never reads", func(t *testing.T) {
			r, _ := request()
			var b *Body
			decodeOnly(m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b = body(t, r)
			})).ServeHTTP(httptest.NewRecorder(), r)
			assertReleased(t, b)
			if b.started {
				t.Error("decoders were taken for a body nobody read")
			}
		})
		t.Run(lines[0]+"/handler panics", func(t *testing.T) {
			r, _ := request()
			var b *Body
			func() {
				defer func() {
					if recover() == nil {
						t.Error("the panic was swallowed")
					}
				}()
				decodeOnly(m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					b = body(t, r)
					if _, err := io.ReadFull(r.Body, make([]byte, 100)); err != nil {
						t.Fatal(err)
					}
					panic("handler bug")
				})).ServeHTTP(httptest.NewRecorder(), r)
			}()
			assertReleased(t, b)
		})
		t.Run(lines[0]+"/Read and Close after the handler returned", func(t *testing.T) {
			r, raw := request()
			var kept io.ReadCloser
			decodeOnly(m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				kept = r.Body
				if _, err := io.ReadFull(r.Body, make([]byte, 100)); err != nil {
					t.Fatal(err)
				}
			})).ServeHTTP(httptest.NewRecorder(), r)
			assertReleased(t, kept.(*Body))
			if _, err := kept.Read(make([]byte, 1)); err != http.ErrBodyReadAfterClose {
				t.Errorf("Read after release: %v, want http.ErrBodyReadAfterClose", err)
			}
			if err := kept.Close(); err != nil {
				t.Errorf("Close after release: %v", err)
			}
			if raw.closed != 0 {
				t.Error("the server's body is the server's to close once the handler has returned")
			}
		})
	}
}

// TestDecodeRequestNeverPoolsADecoderInUse covers a handler that leaves a
// goroutine reading (http.TimeoutHandler does): the decoders go back when
// that Read ends, not while it runs.
func TestDecodeRequestNeverPoolsADecoderInUse(t *testing.T) {
	plain := corpus.Prefix(t, corpus.HTML(t), 64<<10)
	for _, coding := range writers.Codings() {
		t.Run(coding, func(t *testing.T) {
			encoded := goEncode(t, coding, plain)
			pr, pw := io.Pipe()
			r := httptest.NewRequest(http.MethodPost, "/", pr)
			r.Header.Set("Content-Encoding", coding)
			m := mustNew(t, 0, 0)
			r2, release, ok := m.decodeRequest(httptest.NewRecorder(), r, r.Header["Content-Encoding"])
			if !ok {
				t.Fatal("refused")
			}
			b := body(t, r2)
			type result struct {
				n   int
				err error
			}
			done := make(chan result)
			go func() {
				n, err := io.ReadFull(r2.Body, make([]byte, len(plain)))
				done <- result{n, err}
			}()
			// Half the stream, so the Read is inside the decoder waiting
			// for more when the handler returns.
			if _, err := pw.Write(encoded[:len(encoded)/2]); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(5 * time.Second); ; {
				b.mu.Lock()
				reading := b.reading
				b.mu.Unlock()
				if reading {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the Read never started")
				}
				time.Sleep(time.Millisecond)
			}
			release()
			b.mu.Lock()
			released := b.released
			b.mu.Unlock()
			if released {
				t.Fatal("decoders released while a Read was using them")
			}
			go func() {
				_, _ = pw.Write(encoded[len(encoded)/2:])
				pw.Close()
			}()
			res := <-done
			assertReleased(t, b)
			// The Read that straddled the release may have finished or
			// been cut short; either way the next one is refused.
			if res.err != nil && res.err != http.ErrBodyReadAfterClose && !errors.Is(res.err, io.ErrUnexpectedEOF) {
				t.Errorf("straddling Read: %v", res.err)
			}
			if _, err := r2.Body.Read(make([]byte, 1)); err != http.ErrBodyReadAfterClose {
				t.Errorf("Read after release: %v, want http.ErrBodyReadAfterClose", err)
			}
		})
	}
}

// BenchmarkDecodeRequest decodes the Go specification (about 290 KiB of
// HTML) per coding: "codec" is the floor, a pooled decoder read directly;
// "decodeRequest" is the whole path a handler sees.
func BenchmarkDecodeRequest(b *testing.B) {
	plain := corpus.HTML(b)
	m := mustNew(b, 0, 0)
	rec := httptest.NewRecorder()
	buf := make([]byte, 32<<10)
	drain := func(b *testing.B, r io.Reader) {
		for {
			_, err := r.Read(buf)
			if err == io.EOF {
				return
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, coding := range writers.Codings() {
		body := goEncode(b, coding, plain)
		src := bytes.NewReader(body)
		b.Run(coding+"/codec", func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			b.ReportAllocs()
			for b.Loop() {
				src.Reset(body)
				d, err := m.pools[coding].Get(src)
				if err != nil {
					b.Fatal(err)
				}
				drain(b, d)
				m.pools[coding].Put(d)
			}
		})
		b.Run(coding+"/decodeRequest", func(b *testing.B) {
			r := httptest.NewRequest(http.MethodPost, "/", io.NopCloser(src))
			r.ContentLength = int64(len(body))
			r.Header.Set("Content-Encoding", coding)
			b.SetBytes(int64(len(plain)))
			b.ReportAllocs()
			for b.Loop() {
				src.Reset(body)
				r2, release, ok := m.decodeRequest(rec, r, r.Header["Content-Encoding"])
				if !ok {
					b.Fatal("refused")
				}
				drain(b, r2.Body)
				release()
			}
			b.ReportMetric(float64(len(body))/float64(len(plain)), "ratio")
		})
	}
}

// TestDecodeRequestRejectsTrailingData sends a complete stream followed by
// bytes that belong to no stream: the handler must not get a clean end with
// part of the body unread, whatever the coding.
func TestDecodeRequestRejectsTrailingData(t *testing.T) {
	plain := corpus.Prefix(t, corpus.HTML(t), 4<<10)
	m := mustNew(t, 0, 0)
	cases := []struct {
		name   string
		coding string
		body   []byte
	}{
		{"gzip", Gzip, goEncode(t, Gzip, plain)},
		{"deflate zlib", Deflate, stdEncode(t, Deflate, false, plain)},
		{"deflate raw", Deflate, stdEncode(t, Deflate, true, plain)},
		{"zstd", Zstd, goEncode(t, Zstd, plain)},
		{"br", Brotli, goEncode(t, Brotli, plain)},
	}
	for _, tc := range cases {
		for _, length := range []string{"Content-Length", "chunked"} {
			t.Run(tc.name+"/"+length, func(t *testing.T) {
				body := append(bytes.Clone(tc.body), "trailing garbage"...)
				declared := int64(len(body))
				if length == "chunked" {
					declared = -1
				}
				_, s := serveRead(m, encodedRequest(body, declared, tc.coding))
				if !errors.Is(s.err, ErrInvalidBody) {
					t.Fatalf("read %d bytes, error %v; want ErrInvalidBody", len(s.body), s.err)
				}
			})
		}
	}
}

// emptyBrotliBlocks returns a valid brotli stream of n empty metadata
// meta-blocks and nothing else: it decodes to no bytes at all, however
// long. WBITS 16 takes the first bit; each empty metadata block is
// ISLAST 0, MNIBBLES 0 (coded 3), a reserved 0 bit and MSKIPBYTES 0,
// padded to a byte; ISLAST and ISLASTEMPTY end the stream.
func emptyBrotliBlocks(n int) []byte {
	out := make([]byte, 0, n+2)
	out = append(out, 0x0c) // WBITS 16, then the first empty block
	for range n - 1 {
		out = append(out, 0x06)
	}
	return append(out, 0x03)
}

// TestDecodeRequestBoundsWorkAcrossLayers sends bodies whose outer layer
// expands, inside every cap, into megabytes of an inner stream that decodes
// to nothing: decoding them used to cost a quarter of a second of CPU for a
// few hundred bytes, and the handler saw a valid empty body. An inner layer
// may read little more than it produces, so they fail after a few hundred
// KiB of inner input. Bytes are counted, not time.
func TestDecodeRequestBoundsWorkAcrossLayers(t *testing.T) {
	empty := emptyBrotliBlocks(10 << 20)
	if got, err := io.ReadAll(brotli.NewReader(bytes.NewReader(empty))); err != nil || len(got) != 0 {
		t.Fatalf("the inner stream is not a valid empty brotli stream: %d bytes, %v", len(got), err)
	}
	var emptyFrames []byte
	for frame := goEncode(t, Zstd, nil); len(emptyFrames) < 8<<20; {
		emptyFrames = append(emptyFrames, frame...)
	}
	cases := []struct {
		name  string
		lines []string
		body  []byte
	}{
		{"br, zstd: empty brotli meta-blocks", []string{"br, zstd"}, goEncode(t, Zstd, empty)},
		{"zstd, gzip: empty zstd frames", []string{"zstd", "gzip"}, goEncode(t, Gzip, emptyFrames)},
		{"br, gzip: empty brotli meta-blocks", []string{"br, gzip"}, goEncode(t, Gzip, empty)},
	}
	const innerBound = 1 << 20
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := mustNew(t, 0, 0) // the default cap, 10 MiB
			r := encodedRequest(tc.body, int64(len(tc.body)), tc.lines...)
			var b *Body
			var got []byte
			var err error
			decodeOnly(m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b = body(t, r)
				got, err = io.ReadAll(r.Body)
			})).ServeHTTP(httptest.NewRecorder(), r)
			inner := b.inLimit - b.layers[1].in.left
			t.Logf("%d-byte body: the inner layer read %d KiB; error %v", len(tc.body), inner>>10, err)
			var tooLarge *http.MaxBytesError
			if !errors.As(err, &tooLarge) {
				t.Fatalf("decoded %d bytes, error %v; want *http.MaxBytesError", len(got), err)
			}
			if inner > innerBound {
				t.Errorf("the inner layer read %d bytes producing none, want at most %d", inner, innerBound)
			}
		})
	}
}

// TestDecodeRequestStacksOfRealDataPassTheWorkBound: the bound on inner
// layers leaves real data alone, incompressible data (stored or raw
// blocks, read nearly byte for byte) included.
func TestDecodeRequestStacksOfRealDataPassTheWorkBound(t *testing.T) {
	random := make([]byte, 3<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	html := corpus.Prefix(t, corpus.HTML(t), 256<<10)
	m := mustNew(t, 0, 0)
	for _, plain := range [][]byte{random, html} {
		for _, inner := range writers.Codings() {
			for _, outer := range []string{Zstd, Gzip} {
				name := fmt.Sprintf("%d bytes/%s, %s", len(plain), inner, outer)
				t.Run(name, func(t *testing.T) {
					body := goEncode(t, outer, goEncode(t, inner, plain))
					_, s := serveRead(m, encodedRequest(body, int64(len(body)), inner+", "+outer))
					if s.err != nil || !bytes.Equal(s.body, plain) {
						t.Fatalf("decoded %d bytes, error %v; want the %d plain bytes", len(s.body), s.err, len(plain))
					}
				})
			}
		}
	}
}

// brBomb is a br stream declaring the largest window, 16 MiB, then an
// uncompressed meta-block of 16 MiB of which 5 bytes arrive.
var brBomb = []byte{0xcf, 0xff, 0xff, 0xff, 'h', 'e', 'l', 'l', 'o'}

// stalled starts a request whose body is head and then nothing, as from a
// client that stopped sending, and returns once its decoder has taken head
// in and asked for more: by then it holds whatever head made it allocate,
// so a measurement that follows does not see that allocation. stop makes
// the body fail, and waits for the handler to return.
func stalled(t *testing.T, h http.Handler, coding string, head []byte) (stop func()) {
	t.Helper()
	pr, pw := io.Pipe()
	body := &headReader{r: pr, head: int64(len(head)), more: make(chan struct{})}
	r := httptest.NewRequest(http.MethodPost, "/", body)
	r.Header.Set("Content-Encoding", coding)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(httptest.NewRecorder(), r)
	}()
	if _, err := pw.Write(head); err != nil { // returns once read
		t.Fatal(err)
	}
	select {
	case <-body.more:
	case <-done:
		t.Fatal("the handler returned before asking for more of the body")
	}
	return func() {
		pw.CloseWithError(errors.New("client gone"))
		<-done
	}
}

// headReader reads r, of which head bytes come at first, and closes more
// when a Read begins after all of them were read: the reader asks for
// more. It tells by the bytes read, not by counting calls, so however the
// calls interleave with the writer it cannot miss that moment.
type headReader struct {
	r    io.Reader
	head int64
	n    atomic.Int64
	once sync.Once
	more chan struct{}
}

func (c *headReader) Read(p []byte) (int, error) {
	if c.n.Load() >= c.head {
		c.once.Do(func() { close(c.more) })
	}
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestDecodeRequestDecoderBudget: decoders are charged to the budget when
// taken, a body that finds it spent fails with ErrBusy (not as an
// invalid body), and the charge comes back exactly once when the handler
// returns.
func TestDecodeRequestDecoderBudget(t *testing.T) {
	const budget = 40 << 20
	m := mustNew(t, 0, budget)
	readAll := decodeOnly(m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	stop := stalled(t, readAll, Brotli, brBomb) // holds 32 MiB of the 40
	plain := []byte("a small body")
	cases := []struct {
		name   string
		coding string
		body   []byte
		busy   bool
	}{
		{"br, another 16 MiB window", Brotli, brBomb, true},
		{"zstd, an 8 MiB window", Zstd, zstdBomb, true},
		// Charged for the small first frame, then for the next one's
		// window as its header goes by, before its first block.
		{"zstd, an 8 MiB window in the second frame", Zstd, slices.Concat(goEncode(t, Zstd, plain), zstdBomb), true},
		{"zstd, a small window", Zstd, goEncode(t, Zstd, plain), false},
		{"gzip", Gzip, goEncode(t, Gzip, plain), false},
		{"br, lgwin 18", Brotli, goEncode(t, Brotli, plain), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s seen
			bound := uint64(math.MaxUint64)
			if tc.busy {
				bound = codecTables
			}
			allocated := testtool.LeastWithin(bound, func() uint64 {
				r := encodedRequest(tc.body, int64(len(tc.body)), tc.coding)
				return testtool.AllocatedBy(func() { _, s = serveRead(m, r) })
			})
			if busy := errors.Is(s.err, ErrBusy); busy != tc.busy {
				t.Fatalf("error %v; want ErrBusy: %v", s.err, tc.busy)
			}
			// Refused before the window is allocated.
			if tc.busy && allocated > codecTables {
				t.Errorf("allocated %d KiB before the refusal", allocated>>10)
			}
			if tc.busy && errors.Is(s.err, ErrInvalidBody) {
				t.Errorf("a busy server is not an invalid body: %v", s.err)
			}
			if !tc.busy && (s.err != nil || !bytes.Equal(s.body, plain)) {
				t.Errorf("decoded %q, %v", s.body, s.err)
			}
		})
	}
	t.Run("the request's context ends while waiting", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := encodedRequest(brBomb, int64(len(brBomb)), Brotli).WithContext(ctx)
		if _, s := serveRead(m, r); !errors.Is(s.err, ErrBusy) {
			t.Fatalf("error %v, want ErrBusy", s.err)
		}
	})
	stop()
	t.Run("once the stalled body is gone", func(t *testing.T) {
		_, s := serveRead(m, encodedRequest(brBomb, int64(len(brBomb)), Brotli))
		if !errors.Is(s.err, ErrInvalidBody) {
			t.Fatalf("error %v, want ErrInvalidBody: the budget should be back", s.err)
		}
	})
	if !m.budget.TryAcquire(budget) {
		t.Fatal("the budget did not all come back")
	}
	m.budget.Release(budget)

	t.Run("a charge over the whole budget takes all of it", func(t *testing.T) {
		m := mustNew(t, 0, 1<<20)
		body := goEncode(t, Zstd, plain)
		for range 3 {
			if _, s := serveRead(m, encodedRequest(body, int64(len(body)), Zstd)); s.err != nil || !bytes.Equal(s.body, plain) {
				t.Fatalf("decoded %q, %v", s.body, s.err)
			}
		}
	})
}

// BenchmarkDecoderBudget times what the budget adds to each layer of a
// request body when it has room: a charge and its release.
func BenchmarkDecoderBudget(b *testing.B) {
	m := mustNew(b, 0, 0)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n, err := m.acquire(ctx, charge(Zstd, writers.ZstdMaxWindow))
			if err != nil {
				b.Error(err)
				return
			}
			m.budget.Release(n)
		}
	})
}

// defaultMaxSize is the Middleware's default cap on a decoded body.
const defaultMaxSize = 10 << 20

// The codings, as the tests name them.
const (
	Zstd    = writers.Zstd
	Brotli  = writers.Brotli
	Gzip    = writers.Gzip
	Deflate = writers.Deflate
)

// mustNew returns decoders with the Middleware's defaults where maxSize or
// memory is 0.
func mustNew(tb testing.TB, maxSize, memory int64) *Decoders {
	tb.Helper()
	if maxSize == 0 {
		maxSize = defaultMaxSize
	}
	d, err := New(Limits{MaxSize: maxSize, Memory: memory})
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// decodeRequest is what the Middleware does with a request's
// Content-Encoding lines: nothing without any, Request with them.
func (d *Decoders) decodeRequest(w http.ResponseWriter, r *http.Request, values []string) (*http.Request, func(), bool) {
	if len(values) == 0 {
		return r, nil, true
	}
	cs := codingsOf(values)
	return d.Request(w, r, &cs, nil)
}

// codingsOf collects the codings of Content-Encoding lines as the
// Middleware's list reader does, for lines without quoted strings: comma
// separated, trimmed, without identity and empty elements.
func codingsOf(lines []string) Codings {
	var cs Codings
	for _, line := range lines {
		for line != "" {
			var token string
			token, line, _ = strings.Cut(line, ",")
			token = strings.Trim(token, " \t")
			if token == "" || strings.EqualFold(token, "identity") {
				continue
			}
			if !cs.Add(token) {
				return cs
			}
		}
	}
	return cs
}
