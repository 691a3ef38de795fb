package bench

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"github.com/klauspost/compress/gzhttp"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/pool"
)

// Decoder is one implementation of request-body decoding for one coding.
type Decoder struct {
	// Name is the value of the impl= key in benchmark names.
	Name string
	// Coding is the Content-Encoding of the request bodies.
	Coding string

	wrap  func(http.Handler) http.Handler
	floor *pool.Decoders
}

// Decoders returns the request decoders for coding: the hand-pooled floor,
// squeeze, and gzhttp's AllowCompressedRequests for gzip, the only coding it
// decodes. (httpcompression, chi and gziphandler do not decode requests.)
func Decoders(coding string) ([]*Decoder, error) {
	fp, err := pool.NewDecoders(coding)
	if err != nil {
		return nil, err
	}
	out := []*Decoder{{Name: "floor", Coding: coding, floor: fp}}
	m, err := squeeze.New()
	if err != nil {
		return nil, err
	}
	out = append(out, &Decoder{Name: "squeeze", Coding: coding, wrap: m.Handler})
	if coding == squeeze.Gzip {
		gz, err := gzhttp.NewWrapper(gzhttp.AllowCompressedRequests(true))
		if err != nil {
			return nil, err
		}
		out = append(out, &Decoder{Name: "gzhttp", Coding: coding, wrap: httpHandlerOf(gz)})
	}
	return out, nil
}

// Discard returns a handler that reads the request body to the end and
// throws it away, through the decoder.
func (d *Decoder) Discard() http.Handler {
	return d.handler(func(r io.Reader) error {
		_, err := io.Copy(io.Discard, r)
		return err
	}, nil)
}

// Check returns a handler that reads the request body and records in *errp
// whether it decoded to want with the Content-Encoding removed.
func (d *Decoder) Check(want []byte, errp *error) http.Handler {
	return d.handler(func(r io.Reader) error {
		got, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("decoded body differs from the input (%d bytes, want %d)", len(got), len(want))
		}
		return nil
	}, errp)
}

// handler reads the body with read and records any error in *errp, if errp
// is not nil.
func (d *Decoder) handler(read func(io.Reader) error, errp *error) http.Handler {
	record := func(err error) {
		if err != nil && errp != nil {
			*errp = err
		}
	}
	if d.floor != nil {
		p := d.floor
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			dec, err := p.Get(r.Body)
			if err != nil {
				record(err)
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			record(read(dec))
			p.Put(dec)
			w.WriteHeader(http.StatusNoContent)
		})
	}
	return d.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ce := r.Header.Get("Content-Encoding"); ce != "" {
			record(fmt.Errorf("handler sees Content-Encoding %q: body not decoded", ce))
			w.WriteHeader(http.StatusUnsupportedMediaType)
			return
		}
		record(read(r.Body))
		w.WriteHeader(http.StatusNoContent)
	}))
}

// CheckRequest sends payload, which is plain encoded with coding, through d
// and checks that the handler reads plain back.
func CheckRequest(d *Decoder, payload, plain []byte) error {
	var err error
	h := d.Check(plain, &err)
	u := NewUpload(d.Coding, payload)
	w := NewResponseWriter(true)
	h.ServeHTTP(w, u.Req)
	if err != nil {
		return err
	}
	if w.Status() != http.StatusNoContent {
		return fmt.Errorf("status %d, want 204", w.Status())
	}
	return nil
}
