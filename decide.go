package squeeze

import (
	"net/http"
	"strconv"
	"strings"
)

// This file holds the one decision every response, and every file a
// [Middleware.FileServer] serves, goes through: encode it, send it as it
// is, or hold it back until more is known. Every reason a response or a
// file is not encoded is a case of the switch in decide, those found by
// trying to encode included: the writer (or the file server) records what
// the attempt found in the facts and asks again.

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

// Reason says why a response went out unencoded, as [ResponseInfo]
// reports it in Skipped; the zero Reason goes with an encoded response.
// The reasons are chosen in one place, the compress-or-not decision, so
// what the observer counts is what the middleware did.
type Reason uint8

// The reasons a response goes out unencoded. A new reason is added after
// the others, so that no value changes; each one's String is a stable name
// for metrics.
const (
	// reasonNone: the response was encoded (or is not decided yet).
	reasonNone Reason = iota
	// ReasonStatus: 1xx, 204 and 304 responses have no body.
	ReasonStatus
	// ReasonPartial: a 206 or a Content-Range describes the plain bytes.
	ReasonPartial
	// ReasonAlreadyEncoded: the handler set a Content-Encoding.
	ReasonAlreadyEncoded
	// ReasonNoTransform: Cache-Control: no-transform.
	ReasonNoTransform
	// ReasonContentType: the media type is not one to compress, or unknown.
	ReasonContentType
	// ReasonRange: the request asked for a byte range (of the plain bytes).
	ReasonRange
	// ReasonNotAccepted: the client accepts none of the offered codings.
	ReasonNotAccepted
	// ReasonTooSmall: the body is below the minimum size ([WithMinSize]).
	ReasonTooSmall
	// ReasonLength: the body did not match its declared Content-Length.
	ReasonLength
	// ReasonNoGain: the encoded body would not have been smaller.
	ReasonNoGain
	// ReasonNoEncoder: no encoder could be had.
	ReasonNoEncoder
	// ReasonTooLarge: a [Middleware.FileServer] file is larger than its
	// store keeps in one entry (it would be encoded for every request).
	ReasonTooLarge
	// ReasonNoRoom: the budget of a [Middleware.FileServer]'s store had no
	// room for the work of encoding the file.
	ReasonNoRoom

	// reasonCount is the number of reasons, reasonNone included.
	reasonCount
)

var reasonNames = [reasonCount]string{
	reasonNone:           "none",
	ReasonStatus:         "status",
	ReasonPartial:        "partial_content",
	ReasonAlreadyEncoded: "already_encoded",
	ReasonNoTransform:    "no_transform",
	ReasonContentType:    "content_type",
	ReasonRange:          "range_request",
	ReasonNotAccepted:    "not_accepted",
	ReasonTooSmall:       "too_small",
	ReasonLength:         "length_mismatch",
	ReasonNoGain:         "no_gain",
	ReasonNoEncoder:      "no_encoder",
	ReasonTooLarge:       "too_large",
	ReasonNoRoom:         "no_room",
}

// String returns the reason's name in snake case, as the [Counters] export
// it: "too_small", "content_type", and "none" for the zero Reason.
func (r Reason) String() string {
	if r >= reasonCount {
		return "Reason(" + strconv.Itoa(int(r)) + ")"
	}
	return reasonNames[r]
}

// varies reports whether a response that went out for this reason depends
// on Accept-Encoding: its content could have been encoded for another
// request. Such a response carries Vary: Accept-Encoding, encoded or not.
func (r Reason) varies() bool {
	return r == reasonNone || r >= ReasonRange
}

// variesWith reports whether a response sent for why, with facts f and
// header h, carries Vary: Accept-Encoding. Besides the reasons that vary,
// a 304 and a 206 carry the Vary that a 200 to the same request would
// have (RFC 9110 §15.4.5 and §15.3.7): a 304 unless its type says the 200
// would not be encoded; a 206 when its type is one to compress, since the
// 200 to a Range request varies then (ReasonRange), or is not known. A
// multipart 206 names only multipart/byteranges, not its parts' type, and
// so varies, as a 304 without a type does: Vary where none was needed
// costs a cache some sharing, none where it was needed serves a client a
// coding it did not accept.
func (m *Middleware) variesWith(why Reason, f *facts, h http.Header) bool {
	switch {
	case why.varies():
		return true
	case f.status == http.StatusNotModified:
		return notModifiedVaries(m.types, h)
	case f.status == http.StatusPartialContent:
		return !f.encoded && !f.noTransform && (f.eligible || isByteRanges(f.contentType))
	}
	return false
}

// byteRanges is the type of a 206 with more than one part, compiled for
// matchTypes.
var byteRanges = compileTypes([]string{"multipart/byteranges"})

// isByteRanges reports whether ct is multipart/byteranges.
func isByteRanges(ct string) bool { return matchTypes(byteRanges, ct) }

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
	// atFile: a [Middleware.FileServer] file is to be served, its length
	// known before a byte of it is read.
	atFile
)

// responseFields is what the response header says about encoding, read in one
// pass when the handler chooses its status: net/http too sends the header as
// it was then.
//
// The booleans come last, together, so that the struct pads once: it is
// part of the pooled per-response state (see responseWriter).
type responseFields struct {
	// contentType is the declared media type; typed is false when the
	// handler declared none.
	contentType string
	// declared is the Content-Length the handler set, or -1.
	declared int64
	// keys is the number of keys the header had, so that keys added later
	// (prefixed trailers, set after the body) can be noticed cheaply.
	keys int
	// eligible records that the type is one to compress (matched once,
	// by the writer, as the type is fixed from here on).
	typed, eligible bool
	// encoded, partial and noTransform record Content-Encoding,
	// Content-Range and Cache-Control: no-transform.
	encoded, partial, noTransform bool
	// trailers records a Trailer field or a key with [http.TrailerPrefix].
	trailers bool
}

// readFields reads the fields decide needs from h, all but eligible.
func readFields(h http.Header) responseFields {
	f := responseFields{declared: -1, keys: len(h)}
	if v, ok := h["Content-Type"]; ok && len(h) == 1 {
		// The commonest header of all, an API handler's: one look-up
		// instead of a walk over the map.
		f.typed = true
		if len(v) > 0 {
			f.contentType = v[0]
		}
		return f
	}
	for k, v := range h {
		switch fieldName(k) {
		case "Content-Type":
			f.typed = true
			if len(v) > 0 {
				f.contentType = v[0]
			}
		case "Content-Length":
			f.declared = parseLength(v)
		case "Content-Encoding":
			f.encoded = f.encoded || len(v) > 0
		case "Content-Range":
			f.partial = f.partial || len(v) > 0
		case "Cache-Control":
			f.noTransform = f.noTransform || headerHasToken(v, "no-transform")
		case "Trailer":
			f.trailers = f.trailers || len(v) > 0
		default:
			f.trailers = f.trailers || strings.HasPrefix(k, http.TrailerPrefix)
		}
	}
	return f
}

// fieldName returns the canonical name of k when it is one of the fields
// readFields looks at, under any case: a handler that assigns to the map
// directly (h["content-encoding"]) may leave a key as it wrote it, and
// net/http sends it all the same. Any other key comes back as it is.
func fieldName(k string) string {
	for _, name := range [...]string{"Content-Type", "Content-Length", "Content-Encoding", "Content-Range", "Cache-Control", "Trailer"} {
		if len(k) == len(name) && (k == name || equalFold(k, name)) {
			return name
		}
	}
	return k
}

// parseLength returns the length a Content-Length field gives, or -1. As
// net/http, it reads the first value, with no space around the digits.
func parseLength(v []string) int64 {
	if len(v) == 0 {
		return -1
	}
	n, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// facts is what is known of a response when it is decided.
type facts struct {
	responseFields
	status int
	// sniffed is set when contentType was sniffed from the body because
	// the handler declared none.
	sniffed bool
	// buffered is the number of body bytes held back so far.
	buffered int
	event    event
	// head and ranged are set for a HEAD request and a Range request;
	// offered when the client accepts a coding on offer.
	head, ranged, offered bool
	// noEncoder and noGain are what trying to encode found: no encoder
	// could be had, or the encoding would not have been smaller.
	noEncoder, noGain bool
	// secret is set when the handler marked a secret (secret.go): the
	// response is no dictionary, no stored encoding and no sample.
	secret bool

	// The facts of a [Middleware.FileServer] file, zero for a response.
	// precoded: the file goes out as a precompressed sibling the client
	// accepts, whatever its type and size. siblings: it has siblings on
	// offer, so its type alone does not keep it plain. storeLimit: the
	// longest file the file server encodes, what its store keeps in one
	// entry (below zero when the store keeps none). noRoom: the store's
	// budget had no room for the work of encoding it.
	precoded, siblings, noRoom bool
	storeLimit                 int64
}

// decide is the compress-or-not decision, for a response and for a
// [Middleware.FileServer] file alike: a function of the facts and the
// configuration, which changes nothing. The header edits that go with its
// verdict are made by commit, or by the file server.
func (m *Middleware) decide(f *facts) (verdict, Reason, need) {
	switch {
	case !bodyAllowed(f.status):
		return sendPlain, ReasonStatus, 0
	case f.status == http.StatusPartialContent || f.partial:
		return sendPlain, ReasonPartial, 0
	case f.encoded:
		return sendPlain, ReasonAlreadyEncoded, 0
	case f.noTransform:
		return sendPlain, ReasonNoTransform, 0
	case f.precoded:
		return sendEncoded, reasonNone, 0
	case !f.typed && f.event <= atWrite:
		// No byte to sniff yet. A body declared longer than the buffer is
		// decided on its first bytes; any other waits for its end.
		if f.declared > int64(m.buffers.Size()) {
			return wait, reasonNone, needBytes
		}
		return wait, reasonNone, needEnd
	case !f.typed:
		// Nothing to sniff: an empty body, or a flush before any byte.
		return sendPlain, ReasonContentType, 0
	case !f.eligible && !f.siblings:
		return sendPlain, ReasonContentType, 0
	case f.ranged:
		return sendPlain, ReasonRange, 0
	case !f.offered:
		return sendPlain, ReasonNotAccepted, 0
	case f.noEncoder:
		return sendPlain, ReasonNoEncoder, 0
	case f.noGain:
		return sendPlain, ReasonNoGain, 0
	}
	n := f.declared
	if f.event == atEnd {
		switch {
		case f.head && f.buffered == 0:
			// A HEAD handler that wrote nothing: judge by what it declared.
			n = max(n, 0)
		case n >= 0 && int64(f.buffered) != n:
			return sendPlain, ReasonLength, 0
		default:
			n = int64(f.buffered)
		}
	}
	switch {
	case n >= 0 && n < int64(m.minSize):
		return sendPlain, ReasonTooSmall, 0
	case f.event == atFile && n > f.storeLimit:
		return sendPlain, ReasonTooLarge, 0
	case f.noRoom:
		return sendPlain, ReasonNoRoom, 0
	case f.event == atEnd && !f.trailers && n < 2:
		// A whole body of fewer than two bytes never comes out smaller.
		return sendPlain, ReasonNoGain, 0
	case f.event >= atOverflow || n > int64(m.buffers.Size()):
		return sendEncoded, reasonNone, 0
	}
	return wait, reasonNone, needEnd
}

// bodyAllowed reports whether a response with this final status has a body:
// not 1xx, 204 or 304, nor 205, which RFC 9110 §15.3.6 forbids content
// although net/http lets a handler write some.
func bodyAllowed(code int) bool {
	return code >= 200 && code != http.StatusNoContent && code != http.StatusResetContent && code != http.StatusNotModified
}

// hasPrefixedTrailers reports whether h has a key with [http.TrailerPrefix],
// which declares a trailer without the Trailer field.
func hasPrefixedTrailers(h http.Header) bool {
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			return true
		}
	}
	return false
}
