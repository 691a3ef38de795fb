package squeeze

// This file holds what the response writer sends once it has a verdict:
// the header edits that go with it, the header, and a body that ended
// within the buffer, encoded in one piece.

import (
	"errors"
	"net/http"
	"strings"
)

// sendWhole encodes a body that ended within the buffer into a second
// pooled buffer no larger than the body, and sends it with its encoded
// Content-Length if it came out smaller; a delta goes out only if it is
// smaller than the coding it replaced too. It reports whether it sent it; if
// not, it records why in f (noEncoder, noGain) for decide to name. A HEAD
// handler's declared but unwritten body sends the encoded header without a
// length, which only the body could give (RFC 9110 §9.3.2). decide sends
// here no body shorter than two bytes, and no empty one but HEAD's.
func (cw *responseWriter) sendWhole(h http.Header, f *facts, body []byte) bool {
	o := cw.offer
	if len(body) == 0 {
		// HEAD: the GET's body would have been long enough to encode.
		cw.setEncoded(h, o.coding)
		delete(h, "Content-Length")
		cw.state = stateSent
		cw.sendHeader(h)
		return true
	}
	// The cache, if any, may hold this body's encoding; on a miss, key
	// says where to store it (cache.go).
	var key cacheKey
	stored, store := cw.m.cachedWhole(cw.req, o, h, f, body, &key)
	if stored != nil {
		cw.fromCache = true
		cw.written = int64(len(body))
		cw.sendEncodedBody(h, o.coding, stored, stateSent)
		return true
	}
	// Anything not smaller than the input is no gain: cap the output there
	// and let the encoder fail instead of growing the buffer. The output
	// goes to a second pooled buffer, not the free tail of the first:
	// input and output in one buffer cost the encoders more than the
	// second buffer's Get and Put (docs/internals.md#what-a-response-costs).
	outBuf := cw.getBuffer()
	defer cw.keepBuffer(outBuf)
	out, ok, noEncoder := cw.encodeWhole(o, body, (*outBuf)[:0:len(body)-1])
	if fb := cw.fallbackOffer(); o.dict != nil && fb != nil {
		// A delta never goes out larger than the coding it replaces:
		// its header alone takes 36 or 40 bytes, more than a dictionary
		// that shares little with a small body saves. The coding is
		// tried capped below the delta, so it wins only when smaller.
		limit := len(body) - 1
		if ok {
			limit = len(out) - 1
		}
		fbBuf := cw.getBuffer()
		defer cw.keepBuffer(fbBuf)
		if fbOut, fbOK, _ := cw.encodeWhole(fb, body, (*fbBuf)[:0:max(limit, 0)]); fbOK {
			cw.m.storeWhole(&key, store, body, nil) // the delta, not kept
			cw.offer, cw.fallback = fb, 0
			cw.written = int64(len(body))
			cw.sendEncodedBody(h, fb.coding, fbOut, stateSent)
			return true
		}
	}
	if !ok {
		cw.m.storeWhole(&key, store, body, nil)
		f.noEncoder, f.noGain = noEncoder, !noEncoder
		return false
	}
	cw.m.storeWhole(&key, store, body, out)
	cw.written = int64(len(body))
	cw.sendEncodedBody(h, o.coding, out, stateSent)
	return true
}

// encodeWhole encodes body with o into dst, whose capacity is the most the
// encoding may take. ok is false when it would take more (no gain), or
// when no encoder could be had (noEncoder).
func (cw *responseWriter) encodeWhole(o *offer, body, dst []byte) (out []byte, ok, noEncoder bool) {
	cw.out = cappedBuffer{b: dst}
	t0 := cw.clock()
	enc, err := cw.slot.encoder(o, &cw.out)
	if err != nil {
		cw.out = cappedBuffer{}
		return nil, false, true
	}
	_, err = enc.Write(body)
	if err == nil {
		err = enc.Close()
	}
	cw.slot.keepEncoder(o, enc)
	cw.spent(t0)
	out = cw.out.b
	cw.out = cappedBuffer{}
	return out, err == nil, false
}

// sendEncodedBody sends a whole encoded body, freshly encoded or stored,
// with its Content-Length, and moves to state.
func (cw *responseWriter) sendEncodedBody(h http.Header, coding string, out []byte, state writerState) {
	cw.setEncoded(h, coding)
	cw.setLength(h, len(out))
	cw.state = state
	cw.sendHeader(h)
	_, _ = (*wire)(cw).Write(out)
}

// setEncoded sets the headers every encoded response carries.
func (cw *responseWriter) setEncoded(h http.Header, coding string) {
	cw.encodedAs = coding
	cw.values.encoding[0] = coding
	h["Content-Encoding"] = cw.values.encoding[:]
	if cw.onlyContentType {
		return
	}
	// Byte ranges would refer to the encoded bytes, which differ from one
	// response to the next; RFC 9110 §14.1.2.
	delete(h, "Accept-Ranges")
	suffixETag(h, coding)
}

// setLength sets Content-Length to n.
func (cw *responseWriter) setLength(h http.Header, n int) {
	cw.values.length[0] = cw.slot.lengthString(n)
	h["Content-Length"] = cw.values.length[:]
}

// addVary adds Accept-Encoding to Vary unless it, or "*", is there already.
func (cw *responseWriter) addVary(h http.Header) {
	var v []string
	if !cw.onlyContentType {
		v = h["Vary"]
	}
	switch {
	case headerHasToken(v, "accept-encoding") || headerHasToken(v, "*"):
	case len(v) == 0:
		cw.values.vary[0] = "Accept-Encoding"
		h["Vary"] = cw.values.vary[:]
	default:
		// A full slice forces append to copy: the handler may share its
		// header values between responses.
		h["Vary"] = append(v[:len(v):len(v)], "Accept-Encoding")
	}
}

// errNoGain stops an encoder whose output would not be smaller than its
// input.
var errNoGain = errors.New("squeeze: encoded body would not be smaller")

// cappedBuffer collects encoder output up to the capacity of b.
type cappedBuffer struct{ b []byte }

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if len(p) > cap(c.b)-len(c.b) {
		return 0, errNoGain
	}
	c.b = append(c.b, p...)
	return len(p), nil
}

// restoreHeader undoes the changes the handler made to the header after it
// chose the status, as net/http ignores them. Trailers are set after the
// body by design: keys with [http.TrailerPrefix] stay, and the values of
// trailers declared in the Trailer field wait in late until sendHeader has
// sent the header without them.
func (cw *responseWriter) restoreHeader(h http.Header) {
	a := cw.after
	if a == nil || a.snapshot == nil {
		return
	}
	declared := a.snapshot["Trailer"]
	for k, v := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			continue
		}
		if headerHasToken(declared, k) {
			if a.late == nil {
				a.late = http.Header{}
			}
			a.late[k] = v
		}
		if _, ok := a.snapshot[k]; !ok {
			delete(h, k)
		}
	}
	for k, v := range a.snapshot {
		h[k] = v
	}
	a.snapshot = nil
}

// sendHeader sends the status and the header, then puts back the declared
// trailers that restoreHeader held out, for net/http to send after the
// body.
func (cw *responseWriter) sendHeader(h http.Header) {
	if !cw.untouched {
		cw.w.WriteHeader(cw.status)
	}
	if cw.after != nil {
		for k, v := range cw.after.late {
			h[k] = v
		}
		cw.after.late = nil
	}
}
