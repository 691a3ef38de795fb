package bench

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// Decode decodes data, encoded with coding, with the codec libraries
// directly rather than through squeeze's writers package, so a fault there
// cannot hide itself.
func Decode(coding string, data []byte) ([]byte, error) {
	r, done, err := openReader(coding, data)
	if err != nil {
		return nil, err
	}
	defer done()
	return io.ReadAll(r)
}

// openReader returns a streaming decoder of data built from the codec
// libraries directly, and a func that releases it.
func openReader(coding string, data []byte) (io.Reader, func(), error) {
	src := bytes.NewReader(data)
	nothing := func() {}
	switch coding {
	case "gzip":
		zr, err := gzip.NewReader(src)
		return zr, nothing, err
	case "deflate":
		zr, err := zlib.NewReader(src)
		return zr, nothing, err
	case "zstd":
		zr, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, nil, err
		}
		return zr, zr.Close, nil
	case "br":
		return brotli.NewReader(src), nothing, nil
	}
	return nil, nil, fmt.Errorf("bench: cannot decode %q", coding)
}

// Encode encodes data with coding at level using the codec libraries
// directly, for request bodies.
func Encode(coding string, level int, data []byte) ([]byte, error) {
	var buf bytes.Buffer
	var w io.WriteCloser
	var err error
	switch coding {
	case "gzip":
		w, err = gzip.NewWriterLevel(&buf, level)
	case "zstd":
		w, err = zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)), zstd.WithEncoderConcurrency(1))
	case "br":
		w = brotli.NewWriterLevel(&buf, level)
	default:
		err = fmt.Errorf("bench: cannot encode %q", coding)
	}
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Result is what one checked response looked like on the wire.
type Result struct {
	// Wire is the number of body bytes sent.
	Wire int
}

// CheckResponse serves one request for impl's coding through h and checks
// that the response declares the coding, varies on Accept-Encoding, carries
// no stale Content-Length, and decodes to want.
func CheckResponse(h http.Handler, coding string, want []byte) (Result, error) {
	w := NewResponseWriter(true)
	h.ServeHTTP(w, NewRequest(coding))
	if w.Status() != http.StatusOK {
		return Result{}, fmt.Errorf("status %d, want 200", w.Status())
	}
	if got := w.Header().Get("Content-Encoding"); got != coding {
		return Result{}, fmt.Errorf("response Content-Encoding %q, want %q (body %d bytes for %d plain)", got, coding, len(w.Body()), len(want))
	}
	if !varies(w.Header()) {
		return Result{}, fmt.Errorf("response Vary %q does not name Accept-Encoding", w.Header().Values("Vary"))
	}
	if cl := w.Header().Get("Content-Length"); cl != "" && cl != fmt.Sprint(len(w.Body())) {
		return Result{}, fmt.Errorf("response Content-Length %s for a %d-byte encoded body", cl, len(w.Body()))
	}
	got, err := Decode(coding, w.Body())
	if err != nil {
		return Result{}, fmt.Errorf("decoding the %s body: %w", coding, err)
	}
	if !bytes.Equal(got, want) {
		return Result{}, fmt.Errorf("decoded body differs from the input (%d bytes, want %d)", len(got), len(want))
	}
	return Result{Wire: len(w.Body())}, nil
}

func varies(h http.Header) bool {
	for _, v := range h.Values("Vary") {
		for _, f := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), "Accept-Encoding") {
				return true
			}
		}
	}
	return false
}
