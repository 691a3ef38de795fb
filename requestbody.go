package squeeze

import (
	"cmp"
	"net/http"

	"github.com/squeezehttp/squeeze/internal/decode"
)

// This file connects the Middleware to internal/decode, which decodes
// request bodies (and the Transport's response bodies) under limits, and
// holds the names of that package users check: the errors and the default
// budget.

// ErrInvalidBody is reported by Read on a request body that squeeze decodes,
// or a response body that a [Transport] decodes, when the bytes are not a
// valid stream of their Content-Encoding: corrupt, truncated, empty, or
// asking for more than the decoder grants (a zstd window over 8 MB), or, for
// dcz and dcb, compressed with another dictionary than the one offered. The
// error returned also wraps the codec's own error, so errors.Is and errors.As
// find both; its message says which body it was, request or response. A
// handler would typically answer 400.
var ErrInvalidBody = decode.ErrInvalidBody

// ErrDecoderBusy is reported by Read on a request body that squeeze decodes
// when the memory budget for decoders ([WithDecoderMemory]) stays spent for
// the short wait allowed, or the request's context ends during that wait. A
// [Transport] reports it the same way on a response body, against its own
// budget ([Transport.DecoderMemory]).
// Nothing is wrong with the body: the server is busy decoding others. A
// handler should answer 503 Service Unavailable with a Retry-After header.
var ErrDecoderBusy = decode.ErrBusy

// defaultDecoderMemory is the default of [WithDecoderMemory]: room for seven
// br streams with the largest window (16 MiB, charged 32 MiB), thirty zstd
// ones at 8 MB, or four thousand gzip ones or zstd and br ones at the
// windows squeeze's own encoders use (128 and 256 KiB) at once. With
// stalled bombs the heap stays at or under this much above its base instead
// of growing with the number of clients (the measurement is in
// docs/internals.md#request-and-response-decoding).
const defaultDecoderMemory = 256 << 20

// newDecoding builds the request-body decoders c asks for, and the func that
// reports each decoded body to the observer; both nil when request decoding
// is off, the second nil without an observer too.
func newDecoding(c *config) (*decode.Decoders, func(decode.Stats), error) {
	if c.noRequestDecoding {
		return nil, nil, nil
	}
	d, err := decode.New(decode.Limits{MaxSize: c.maxDecompressedSize, Memory: cmp.Or(c.decoderMemory, defaultDecoderMemory)})
	if err != nil {
		return nil, nil, err
	}
	observe := c.observer.RequestBody
	if observe == nil {
		return d, nil, nil
	}
	return d, func(st decode.Stats) {
		observe(RequestBodyInfo{Coding: st.Coding, Decoded: st.Decoded, Compressed: st.Compressed, Elapsed: st.Elapsed})
	}, nil
}

// decodeRequest prepares r for the handler when its body carries a
// Content-Encoding, whose field lines are values (see
// decode.Decoders.Request): it returns the request to pass on, a func to run
// when the handler returns (nil when there is nothing to release), and
// false when it has already answered, with 415 or 413. A request without
// Content-Encoding, or any request when request decoding is off
// (WithRequestDecoding), is returned as it is, without allocating.
func (m *Middleware) decodeRequest(w http.ResponseWriter, r *http.Request, values []string) (*http.Request, func(), bool) {
	if len(values) == 0 || m.decoding == nil {
		return r, nil, true
	}
	var codings decode.Codings
	for token := range contentCodings(values) {
		if !codings.Add(token) {
			break
		}
	}
	return m.decoding.Request(w, r, &codings, m.reportDecoded)
}
