package squeeze

// This file holds what the response writer sends once it has a verdict:
// the header edits that go with it, the header, and a body that ended
// within the buffer, encoded in one piece.

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
)

// sendWhole encodes a body that ended within the buffer into a second
// pooled buffer no larger than the body, and sends it with its encoded
// Content-Length if it came out smaller; a delta goes out only if it is
// smaller than the coding it replaces too. It reports whether it sent it; if
// not, it records why in f (noEncoder, noGain) for decide to name. A HEAD
// handler's declared but unwritten body sends the encoded header without a
// length, which only the body could give (RFC 9110 §9.3.2). decide sends
// here no body shorter than two bytes, and no empty one but HEAD's.
func (rw *responseWriter) sendWhole(h http.Header, f *facts, body []byte) bool {
	o := rw.offer
	if len(body) == 0 {
		// HEAD: the GET's body would have been long enough to encode.
		rw.setEncoded(h, o.coding)
		delete(h, "Content-Length")
		rw.state = stateSent
		rw.sendHeader(h)
		return true
	}
	// The cache, if any, may hold this body's encoding; on a miss, key
	// says where to store it (cache.go).
	var key cacheKey
	stored, lost, store := rw.m.cachedWhole(rw.req, o, h, f, body, &key)
	if stored != nil {
		rw.fromCache = true
		rw.written = int64(len(body))
		rw.sendEncodedBody(h, o.coding, stored, stateSent, -1)
		return true
	}
	var fb *offer // negotiated only for a delta: no work for any other body
	if o.dict != nil {
		fb = rw.withoutDictionary()
	}
	if lost > 0 {
		// The cache says this delta lost to the coding without the
		// dictionary (storeBeaten in cache.go): that coding goes out
		// if it is smaller, from the cache or encoded, and only
		// otherwise the delta, which is not stored then: the verdict
		// holds its key.
		if fb == nil {
			rw.m.cache.misses.Add(1)
		} else if rw.sendBeaten(h, fb, body, &key, lost) {
			return true
		}
		fb = nil // no smaller than the delta, which goes out
	}
	// Anything not smaller than the input is no gain: cap the output there
	// and let the encoder fail instead of growing the buffer. The output
	// goes to a second pooled buffer, not the free tail of the first:
	// input and output in one buffer cost the encoders more than the
	// second buffer's Get and Put (docs/internals.md#what-a-response-costs).
	outBuf := rw.getBuffer()
	defer rw.keepBuffer(outBuf)
	out, split, ok, noEncoder := rw.encodeWhole(o, body, (*outBuf)[:0:len(body)-1])
	if fb != nil {
		// The delta goes out only if the coding it replaces is no
		// smaller, which a delta that won before wins again
		// (delta_wins.go).
		var won uint64
		if ok {
			won = deltaKey(rw.m.dicts.knownSeed, body, o, fb)
		}
		if won == 0 || !o.dict.wins.won(won) {
			limit := len(body) - 1
			if ok {
				limit = len(out) - 1
			}
			sent, deltaWon := rw.sendSmallerThanDelta(h, fb, body, &key, store, limit)
			if sent {
				return true
			}
			if won != 0 && deltaWon {
				o.dict.wins.note(won)
			}
		}
	}
	if !ok {
		rw.m.storeWhole(rw.req, h, &key, store, body, nil)
		f.noEncoder, f.noGain = noEncoder, !noEncoder
		return false
	}
	rw.m.storeWhole(rw.req, h, &key, store, body, out)
	rw.written = int64(len(body))
	rw.sendEncodedBody(h, o.coding, out, stateSent, split)
	return true
}

// sendSmallerThanDelta sends body in fb's coding, the one the client's
// Accept-Encoding gets without the dictionary, if it comes out no longer
// than limit bytes, the delta's length less one, and reports whether it
// did, and, if not, whether the delta won (fb's encoding came out longer;
// no encoder to be had is no contest); the cache, if this response leads k's flight, then keeps it and the
// verdict that the delta lost (storeBeaten). A delta never goes out larger
// than the coding it replaces: its header alone takes 36 or 40 bytes, more
// than a dictionary that shares little with a small body saves.
func (rw *responseWriter) sendSmallerThanDelta(h http.Header, fb *offer, body []byte, k *cacheKey, store bool, limit int) (sent, deltaWon bool) {
	buf := rw.getBuffer()
	defer rw.keepBuffer(buf)
	out, split, ok, noEncoder := rw.encodeWhole(fb, body, (*buf)[:0:max(limit, 0)])
	if !ok {
		return false, !noEncoder
	}
	rw.m.storeBeaten(rw.req, h, k, store, body, limit+1, fb, out)
	rw.offer = fb
	rw.written = int64(len(body))
	rw.sendEncodedBody(h, fb.coding, out, stateSent, split)
	return true, false
}

// sendBeaten sends body in fb's coding, the one the client's
// Accept-Encoding gets without the dictionary, after the cache, looked up
// under k, said that the delta, lost bytes long, lost to that coding: from
// the cache if it holds the coding's encoding and that is smaller, or
// encoded below lost bytes and stored. It reports false, having sent
// nothing, when this client's coding is no smaller than the delta.
func (rw *responseWriter) sendBeaten(h http.Header, fb *offer, body []byte, k *cacheKey, lost int) bool {
	var kb cacheKey
	stored, store := rw.m.cachedBeaten(rw.req, fb, h, body, k, &kb)
	if stored != nil {
		if len(stored) >= lost {
			// Not served from the cache after all: the delta is encoded.
			rw.m.cache.hits.Add(-1)
			rw.m.cache.misses.Add(1)
			return false
		}
		rw.offer = fb
		rw.fromCache = true
		rw.written = int64(len(body))
		rw.sendEncodedBody(h, fb.coding, stored, stateSent, -1)
		return true
	}
	buf := rw.getBuffer()
	defer rw.keepBuffer(buf)
	out, split, ok, _ := rw.encodeWhole(fb, body, (*buf)[:0:max(lost-1, 0)])
	if !ok {
		rw.m.storeWhole(rw.req, h, &kb, store, body, nil)
		return false
	}
	rw.m.storeWhole(rw.req, h, &kb, store, body, out)
	rw.offer = fb
	rw.written = int64(len(body))
	rw.sendEncodedBody(h, fb.coding, out, stateSent, split)
	return true
}

// withoutDictionary returns the offer the client's Accept-Encoding gets
// without a dictionary, or nil.
func (rw *responseWriter) withoutDictionary() *offer {
	if i := rw.slot.negotiate(rw.req.Header["Accept-Encoding"], rw.m.offers); i >= 0 {
		return &rw.m.offers[i]
	}
	return nil
}

// encodeWhole encodes body with o into dst, whose capacity is the most the
// encoding may take. ok is false when it would take more (no gain), or
// when no encoder could be had (noEncoder). split is where a br or dcb
// body's data ends under WithLengthHiding, -1 otherwise (see
// sendEncodedBody).
func (rw *responseWriter) encodeWhole(o *offer, body, dst []byte) (out []byte, split int, ok, noEncoder bool) {
	rw.out = cappedBuffer{b: dst}
	t0 := rw.clock()
	enc, err := rw.slot.encoder(o, &rw.out)
	if err != nil {
		rw.out = cappedBuffer{}
		return nil, -1, false, true
	}
	err = rw.writeWhole(enc.Encoder, body) // secrets isolated (secret.go)
	split = -1
	if err == nil && rw.m.hiding != nil && deltaCodec(o.coding) == Brotli {
		// Length hiding pads br and dcb before the last meta-block: a
		// Flush ends the data on a byte boundary (writers.AppendPadding).
		err = enc.Flush()
		split = len(rw.out.b)
	}
	if err == nil {
		err = enc.Close()
	}
	rw.slot.keepEncoder(o, enc)
	rw.spent(t0)
	out = rw.out.b
	rw.out = cappedBuffer{}
	return out, split, err == nil, false
}

// sendEncodedBody sends a whole encoded body, freshly encoded or stored,
// with its Content-Length, and moves to state. Under WithLengthHiding the
// body is padded on its way out, by the amount the plain bytes held back
// decide (the whole body; a stream's stored encoding goes by holdHit
// instead); split is where a br or dcb body's data ends, -1 for other
// codings (lengthhiding.go).
func (rw *responseWriter) sendEncodedBody(h http.Header, coding string, out []byte, state writerState, split int) {
	rw.setEncoded(h, coding)
	var pad bodyPadding
	if l := rw.m.hiding; l != nil {
		pad = l.bodyPadding(coding, out, split, l.amount(rw.buffered()), false)
	}
	rw.setLength(h, len(out)+pad.size())
	rw.state = state
	rw.sendHeader(h)
	rw.sendBody(out, pad)
}

// sendBody writes a whole encoded body to the wire, with pad in it: the one
// way a body encoded in one piece goes out, padded or not.
func (rw *responseWriter) sendBody(out []byte, pad bodyPadding) {
	if pad.buf == nil {
		_, _ = (*wire)(rw).Write(out)
		return
	}
	defer rw.m.hiding.bufs.Put(pad.buf)
	if pad.at > 0 {
		if _, err := (*wire)(rw).Write(out[:pad.at]); err != nil {
			return
		}
	}
	if _, err := (*wire)(rw).Write(*pad.buf); err != nil {
		return
	}
	if rest := out[pad.at+pad.skip:]; len(rest) > 0 {
		_, _ = (*wire)(rw).Write(rest)
	}
}

// setEncoded sets the headers every encoded response carries, for coding,
// the offer's.
func (rw *responseWriter) setEncoded(h http.Header, coding string) {
	rw.encoded = true
	rw.values.encoding[0] = coding
	h["Content-Encoding"] = rw.values.encoding[:]
	if rw.onlyContentType {
		return
	}
	// Byte ranges would refer to the encoded bytes, which differ from one
	// response to the next; RFC 9110 §14.1.2.
	delete(h, "Accept-Ranges")
	suffixETag(h, coding)
}

// setLength sets Content-Length to n.
func (rw *responseWriter) setLength(h http.Header, n int) {
	rw.values.length[0] = rw.slot.lengthString(n)
	h["Content-Length"] = rw.values.length[:]
}

// addVary adds Accept-Encoding to Vary unless it, or "*", is there already.
func (rw *responseWriter) addVary(h http.Header) {
	var v []string
	if !rw.onlyContentType {
		v = h["Vary"]
	}
	switch {
	case headerHasToken(v, "accept-encoding") || headerHasToken(v, "*"):
	case len(v) == 0:
		rw.values.vary[0] = "Accept-Encoding"
		h["Vary"] = rw.values.vary[:]
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
func (rw *responseWriter) restoreHeader(h http.Header) {
	a := rw.after
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
func (rw *responseWriter) sendHeader(h http.Header) {
	if !rw.untouched {
		rw.w.WriteHeader(rw.status)
	}
	if rw.after != nil {
		for k, v := range rw.after.late {
			h[k] = v
		}
		rw.after.late = nil
	}
}

// compare reports whether p, the stream's next bytes, goes on the plain
// bytes of the Cache's candidate (cacheFill.cand) from written on, within
// the declared length: compared where they pass, not copied.
func (rw *responseWriter) compare(p []byte) bool {
	plain, w := rw.fill.cand.plain, rw.written
	if rw.hdr.declared >= 0 && w+int64(len(p)) > rw.hdr.declared || int64(len(p)) > int64(len(plain))-w {
		return false
	}
	return bytes.Equal(plain[w:w+int64(len(p))], p) && rw.marks() == nil
}

// endCompared ends a stream held back as the Cache's candidate's bytes
// as the handler returns: if they were all of them, and all the handler
// declared, the candidate's encoding goes out with its Content-Length and
// the handler's own header, as a body found by content within the buffer
// does; otherwise the stream goes on encoded (unhold) for finish to end,
// as it does when the handler set a trailer, which a body with a
// Content-Length cannot carry over HTTP/1.1.
func (rw *responseWriter) endCompared() {
	fill := rw.fill
	e := fill.cand
	if rw.written != int64(len(e.plain)) || rw.hdr.declared >= 0 && rw.hdr.declared != rw.written || rw.marks() != nil ||
		hasPrefixedTrailers(rw.w.Header()) {
		_ = rw.unhold()
		return
	}
	fill.cand = nil
	h := rw.w.Header()
	rw.restoreHeader(h)
	rw.fromCache = true
	rw.m.streamHit(&fill.key, e, rw.offer)
	rw.sendEncodedBody(h, rw.offer.coding, e.body, stateDiscarding, -1)
}

// unhold gives up comparing a stream with the Cache's candidate: at the
// first byte that differs, past its length, at a flush, a hijack, a
// secret, or an end short of it. It sends the header as an encoded stream
// has it and encodes the bytes found equal so far, the handler's, and the
// stream goes on as one (stateEncoding), stored in the candidate's place
// if no other response of the key stores one, or plain if no encoder can
// be had. It returns the error of writing those bytes.
func (rw *responseWriter) unhold() error {
	fill := rw.fill
	verified := fill.cand.plain[:rw.written]
	fill.cand = nil
	rw.m.cache.misses.Add(1)
	h := rw.w.Header()
	rw.restoreHeader(h)
	var dst io.Writer = (*wire)(rw)
	if rw.m.cache.lead(&fill.key) {
		fill.leading = true
		dst = fill
		for i, k := range rw.hooks[:rw.nhooks] {
			if k == responseHook(fill) {
				rw.teeing |= 1 << i // its plain bytes from now on
			}
		}
	}
	enc, err := rw.slot.encoder(rw.offer, dst)
	if err != nil {
		fill.drop()
		rw.why = rw.unheldWhy
		rw.state = statePlain
		rw.sendHeader(h)
		_, err = (*wire)(rw).Write(verified) // the hooks had them as they passed
		return err
	}
	rw.enc = enc
	rw.setEncoded(h, rw.offer.coding)
	delete(h, "Content-Length")
	rw.state = stateEncoding
	rw.sendHeader(h)
	if len(verified) == 0 {
		return nil
	}
	if fill.leading {
		_ = fill.plain(verified) // the dictionaries had them as they passed
	}
	t0 := rw.clock()
	_, err = rw.enc.Write(verified)
	rw.spent(t0)
	return err
}
