package squeeze

import (
	"net/http"
	"strings"
)

// This file holds the one decision every response goes through: encode it,
// send it as it is, or hold it back until more is known. Every reason a
// response is not encoded is a case of the switch in decide.

// verdict is what happens to a response body.
type verdict uint8

const (
	// wait holds the body back: too little is known yet.
	wait verdict = iota
	// sendPlain passes the body through unchanged.
	sendPlain
	// sendEncoded compresses the body with the negotiated coding.
	sendEncoded
)

// reason says why a response went out as it did. reasonNone goes with an
// encoded response or an undecided one; every other value names why a
// response went out unencoded.
type reason uint8

const (
	reasonNone reason = iota
	// reasonStatus: 1xx, 204 and 304 responses have no body.
	reasonStatus
	// reasonPartial: a 206 or a Content-Range describes the plain bytes.
	reasonPartial
	// reasonAlreadyEncoded: the handler set a Content-Encoding.
	reasonAlreadyEncoded
	// reasonNoTransform: Cache-Control: no-transform.
	reasonNoTransform
	// reasonContentType: the media type is not one to compress, or unknown.
	reasonContentType
	// reasonRange: the request asked for a byte range, which refers to the
	// plain bytes.
	reasonRange
	// reasonNotAccepted: the client accepts none of the offered codings.
	reasonNotAccepted
	// reasonTooSmall: the body is below the minimum size.
	reasonTooSmall
	// reasonLength: the body did not match its declared Content-Length, so
	// it goes out as the handler wrote it for net/http to report.
	reasonLength
	// reasonNoGain: the encoded body would not have been smaller.
	reasonNoGain
	// reasonNoEncoder: no encoder could be had.
	reasonNoEncoder
)

var reasonNames = [...]string{
	reasonNone:           "",
	reasonStatus:         "status",
	reasonPartial:        "partial content",
	reasonAlreadyEncoded: "already encoded",
	reasonNoTransform:    "no-transform",
	reasonContentType:    "content type",
	reasonRange:          "range request",
	reasonNotAccepted:    "not accepted",
	reasonTooSmall:       "too small",
	reasonLength:         "length mismatch",
	reasonNoGain:         "no gain",
	reasonNoEncoder:      "no encoder",
}

func (r reason) String() string { return reasonNames[r] }

// varies reports whether a response that went out for this reason depends
// on Accept-Encoding: its content could have been encoded for another
// request. Such a response carries Vary: Accept-Encoding, encoded or not.
func (r reason) varies() bool {
	return r == reasonNone || r >= reasonRange
}

// need says what a wait verdict waits for.
type need uint8

const (
	// needEnd waits for the end of the body, a flush, or a full buffer.
	needEnd need = iota
	// needBytes waits for the first bytes, to sniff the content type.
	needBytes
)

// event is the moment a decision is asked for.
type event uint8

const (
	// atHeader: the handler chose its status.
	atHeader event = iota
	// atWrite: the body grew but still fits in the buffer.
	atWrite
	// atOverflow: the next write does not fit in the buffer.
	atOverflow
	// atFlush: the handler flushed.
	atFlush
	// atEnd: the handler returned.
	atEnd
)

// facts is what is known of a response when it is decided.
type facts struct {
	status int
	header http.Header
	// contentType is the declared media type, or the sniffed one when the
	// handler declared none; typeKnown is false while neither is known.
	contentType string
	typeKnown   bool
	// declared is the Content-Length the handler set, or -1.
	declared int64
	// buffered is the number of body bytes held back so far.
	buffered int
	event    event
}

// decide is the compress-or-not decision: a function of the facts, the
// negotiated offer and the configuration, which changes nothing. The
// header edits that go with its verdict are made by commit.
func (cw *responseWriter) decide(f *facts) (verdict, reason, need) {
	h := f.header
	m := cw.m
	switch {
	case !bodyAllowed(f.status):
		return sendPlain, reasonStatus, 0
	case f.status == http.StatusPartialContent || len(h["Content-Range"]) > 0:
		return sendPlain, reasonPartial, 0
	case len(h["Content-Encoding"]) > 0:
		return sendPlain, reasonAlreadyEncoded, 0
	case headerHasToken(h["Cache-Control"], "no-transform"):
		return sendPlain, reasonNoTransform, 0
	case !f.typeKnown && f.event <= atWrite:
		// No byte to sniff yet. A body declared longer than the buffer is
		// decided on its first bytes; any other waits for its end.
		if f.declared > int64(m.buffers.Size()) {
			return wait, reasonNone, needBytes
		}
		return wait, reasonNone, needEnd
	case !f.typeKnown:
		// Nothing to sniff: an empty body, or a flush before any byte.
		return sendPlain, reasonContentType, 0
	case !matchType(m.types, f.contentType):
		return sendPlain, reasonContentType, 0
	case cw.ranged:
		return sendPlain, reasonRange, 0
	case cw.offer < 0:
		return sendPlain, reasonNotAccepted, 0
	}
	n := f.declared
	if f.event == atEnd {
		switch {
		case cw.head && f.buffered == 0:
			// A HEAD handler that wrote nothing: judge by what it declared.
			n = max(n, 0)
		case n >= 0 && int64(f.buffered) != n:
			return sendPlain, reasonLength, 0
		default:
			n = int64(f.buffered)
		}
	}
	switch {
	case n >= 0 && n < int64(m.minSize):
		return sendPlain, reasonTooSmall, 0
	case f.event >= atOverflow || n > int64(m.buffers.Size()):
		return sendEncoded, reasonNone, 0
	}
	return wait, reasonNone, needEnd
}

// bodyAllowed reports whether a response with this final status has a body.
func bodyAllowed(code int) bool {
	return code >= 200 && code != http.StatusNoContent && code != http.StatusNotModified
}

// hasTrailers reports whether the handler declared trailers, in a Trailer
// field or with keys prefixed by [http.TrailerPrefix]. Such a response is
// never given a Content-Length, which would make net/http send declared
// trailers as headers and drop prefixed ones.
func hasTrailers(h http.Header) bool {
	if len(h["Trailer"]) > 0 {
		return true
	}
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			return true
		}
	}
	return false
}
