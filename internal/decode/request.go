package decode

import (
	"io"
	"net/http"

	"github.com/squeezehttp/squeeze/writers"
)

// Codings collects the codings a request's Content-Encoding names, handed
// to Add one by one by the caller's reader of the field. The zero value
// has none.
type Codings struct {
	names   [MaxCodings]string // canonical, in the order applied
	n       int
	last    string // the last coding named: the first to undo
	refusal string // why the codings cannot be undone
}

// Add notes the next coding the field names, trimmed; identity and empty
// list elements, which change nothing, are not to be added. It reports
// false once the codings cannot be undone (a coding squeeze does not
// implement, or more than MaxCodings): later ones need not be added.
func (c *Codings) Add(token string) bool {
	c.last = token
	coding, ok := writers.Canonical(token)
	if !ok {
		c.refusal = "unsupported Content-Encoding"
		return false
	}
	if c.n == len(c.names) {
		c.refusal = "too many Content-Encoding layers"
		return false
	}
	c.names[c.n] = coding
	c.last = coding
	c.n++
	return true
}

// AcceptEncoding is the Accept-Encoding a 415 answer carries, listing the
// codings Request undoes.
const AcceptEncoding = "zstd, br, gzip, deflate"

// Request prepares r for the handler when its body carries a
// Content-Encoding, whose codings cs has collected. report,
// when not nil, gets the body's Stats once its decoders are released. It
// returns the request to
// pass on, a func to run when the handler returns (nil when there is nothing
// to release), and false when it has already answered: 415 for a coding it
// cannot undo or a stack deeper than MaxCodings, 413 for a declared
// length no body within the cap could have.
//
// A request without a Body, or whose codings are all identity, only loses
// the field. An empty body (http.NoBody or ContentLength 0, as servers
// report one) with any other coding, even one squeeze cannot undo, reaches
// the handler with a Body whose Read fails with an error matching
// ErrInvalidBody: no stream of any coding is empty, and failing on Read
// rather than up front leaves a handler that does not read unaffected.
//
// The decoded request is a shallow copy with a cloned header, without
// Content-Encoding and Content-Length and with ContentLength -1; r itself is
// never modified. Decoders are taken from the pools on the first Read, so a
// handler that answers without reading pays for none and a stream's header is
// read only when the handler asks for the body. Exceeding a limit has the
// connection closed on HTTP/1.x (see Body.tooLarge); w is best the
// ResponseWriter the server gave, which closes it even after the header
// has gone out.
func (d *Decoders) Request(w http.ResponseWriter, r *http.Request, cs *Codings, report func(Stats)) (*http.Request, func(), bool) {
	if r.Body == nil {
		// Nothing a handler could read.
		r2 := new(http.Request)
		copyWithoutEncoding(r2, r, false)
		return r2, nil, true
	}
	codings, n, last, refusal := &cs.names, cs.n, cs.last, cs.refusal
	if last == "" {
		// identity only: the body is already what it claims to be.
		r2 := new(http.Request)
		copyWithoutEncoding(r2, r, false)
		return r2, nil, true
	}
	if r.Body == http.NoBody || r.ContentLength == 0 {
		// An empty body, as servers report one: not a stream in any
		// coding. Reading it fails; nothing is refused up front, so a
		// handler that does not read is unaffected.
		e := new(emptyRequest)
		e.body.coding = last
		copyWithoutEncoding(&e.req, r, true)
		e.req.Body = &e.body
		return &e.req, nil, true
	}
	if refusal != "" {
		unsupportedCoding(w, refusal)
		return nil, nil, false
	}
	inLimit := CompressedLimit(d.limits.MaxSize)
	if r.ContentLength > inLimit {
		// No stream within the cap is this long; refuse before reading.
		// HTTP/1 cannot skip the unread body but by closing; HTTP/2
		// resets the stream, and its server would take Connection: close
		// as a cue to shut down every other stream too.
		if r.ProtoMajor == 1 {
			w.Header().Set("Connection", "close")
		}
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return nil, nil, false
	}
	dr := new(decodedRequest)
	b := &dr.body
	*b = Body{w: w, http1: r.ProtoMajor == 1, ctx: r.Context(), dec: d, raw: r.Body, n: n, limit: d.limits.MaxSize, left: d.limits.MaxSize, inLimit: inLimit}
	b.report = report
	for i := range n {
		// Content-Encoding lists codings in the order applied; undo the
		// last one first.
		coding := codings[n-1-i]
		b.initLayer(i, coding, coding, d.pools[coding], nil)
	}
	copyWithoutEncoding(&dr.req, r, true)
	dr.req.Body = b
	return &dr.req, b.release, true
}

// emptyRequest is the request copy with an empty encoded body, in one
// allocation.
type emptyRequest struct {
	req  http.Request
	body emptyBody
}

// emptyBody is an empty body that claims a coding other than identity.
type emptyBody struct{ coding string }

// Read fails with an error matching ErrInvalidBody and io.ErrUnexpectedEOF,
// as a body that ended before its stream began.
func (b *emptyBody) Read([]byte) (int, error) {
	return 0, &invalidBodyError{coding: b.coding, err: io.ErrUnexpectedEOF}
}

// Close does nothing: the server closes the body that arrived.
func (b *emptyBody) Close() error { return nil }

// decodedRequest puts the request copy and its body in one allocation.
type decodedRequest struct {
	req  http.Request
	body Body
}

// unsupportedCoding answers 415 with the Accept-Encoding that RFC 9110
// §15.5.16 asks for when the problem is the request's content coding.
func unsupportedCoding(w http.ResponseWriter, msg string) {
	w.Header().Set("Accept-Encoding", AcceptEncoding)
	http.Error(w, msg, http.StatusUnsupportedMediaType)
}

// copyWithoutEncoding makes dst a shallow copy of r whose header, cloned,
// has no Content-Encoding. When decoded, the length goes too: the decoded
// body's length is unknown until it has been read.
func copyWithoutEncoding(dst, r *http.Request, decoded bool) {
	*dst = *r
	dst.Header = r.Header.Clone()
	delete(dst.Header, "Content-Encoding")
	if decoded {
		delete(dst.Header, "Content-Length")
		dst.ContentLength = -1
		dst.GetBody = nil
	}
}
