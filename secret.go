package squeeze

// This file holds secrets: bytes a handler marks so that they are compressed
// in a context of their own, which nothing an attacker sends can share
// (BREACH). A marked secret goes out as a segment of its own (writers'
// WriteIsolated: zstd frames, independent deflate segments in one gzip
// member or zlib stream), so the compressed length of the rest of the
// response does not depend on it and its own length is its plain length.
// A response that marks a secret is offered only the codings that can
// isolate it (zstd, gzip, deflate: never br, dcz or dcb), and is never a
// dictionary, a delta, a stored encoding or a sample to learn from.
//
// The writer keeps the state of a response's secrets in a secrets, made
// when the first is marked: the spans WriteSecret wrote into the bytes held
// back, and the secrets TemplateSecret marked, every occurrence of which
// in the body is isolated wherever it is written (scanned as the body goes
// to the encoder, with the few bytes that may begin one held back across
// writes).

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/squeezehttp/squeeze/writers"
)

// ErrSecretNotIsolated is returned by [WriteSecret] and [TemplateSecret]
// when the response already committed to a coding or a way that cannot
// isolate a secret (see WriteSecret); nothing of the secret was written.
var ErrSecretNotIsolated = errors.New("squeeze: the response is already going out in a coding or a way that cannot isolate a secret (br, a delta, a dictionary or a stored encoding): mark the secret before the response's first flush or its first buffer-full of body")

// ErrInvalidSecret is matched by the error [TemplateSecret] returns for a
// secret it cannot mark: shorter than 8 bytes, longer than 1 KiB, or with
// a character that html/template could escape (it must print unchanged in
// any context to be found in the body), and by [WriteSecret]'s for one
// over [MaxSecretSize].
var ErrInvalidSecret = errors.New("squeeze: invalid secret")

// MaxSecretSize is the longest secret [WriteSecret] takes in one call.
const MaxSecretSize = 16 << 10

// The bounds of a secret TemplateSecret marks, and how many one response
// may mark: each is scanned for in the body that follows, and the state
// of a response is bounded.
const (
	minMarkedSecret = 8
	maxMarkedSecret = 1 << 10
	maxMarked       = 16
)

// SecretWriter is implemented by response writers that can write a secret
// in a compression context of its own: squeeze's. A wrapper that holds
// bytes back, or counts them, implements it by passing the call on to the
// writer it wraps after what it holds; [WriteSecret] finds the others
// through their Unwrap method.
type SecretWriter interface {
	WriteSecret(secret []byte) (int, error)
}

// secretMarker is squeeze's writer, for TemplateSecret.
type secretMarker interface {
	markSecret(secret string) error
}

// WriteSecret writes secret to w as Write would, but compressed in a
// context of its own: nothing else in the response is matched against it,
// nor it against anything, so reflected bytes (BREACH) learn nothing of it
// from lengths. Without squeeze behind w ([SecretWriter] or Unwrap), it is
// w.Write. The response then goes out only in zstd, gzip or deflate, never
// as br, a delta, a dictionary or a stored encoding; marked after the
// response committed to another coding, it returns [ErrSecretNotIsolated]
// and writes nothing. See docs/reference.md, "Secrets compressed alone".
func WriteSecret(w http.ResponseWriter, secret []byte) (int, error) {
	for u := w; u != nil; {
		switch t := u.(type) {
		case SecretWriter:
			return t.WriteSecret(secret)
		case interface{ Unwrap() http.ResponseWriter }:
			u = t.Unwrap()
		default:
			u = nil
		}
	}
	return w.Write(secret)
}

// TemplateSecret marks secret as a secret of the response w and returns
// it: every occurrence of it in the body written from then on is isolated
// as [WriteSecret] isolates one. It is an html/template function taking the
// writer from the data (`{{secret .W .CSRF}}`), safe for a template shared
// by concurrent requests. The secret must be 8 to 1024 bytes of letters,
// digits and '-', '_', '.', '~' (hex or base64.RawURLEncoding), else the
// error matches [ErrInvalidSecret]; see WriteSecret for
// [ErrSecretNotIsolated]. Without squeeze in the chain, it returns secret.
func TemplateSecret(w http.ResponseWriter, secret string) (string, error) {
	if err := validMarkedSecret(secret); err != nil {
		return "", err
	}
	for u := w; u != nil; {
		switch t := u.(type) {
		case secretMarker:
			if err := t.markSecret(secret); err != nil {
				return "", err
			}
			return secret, nil
		case interface{ Unwrap() http.ResponseWriter }:
			u = t.Unwrap()
		default:
			u = nil
		}
	}
	return secret, nil
}

// validMarkedSecret checks what TemplateSecret takes.
func validMarkedSecret(s string) error {
	if len(s) < minMarkedSecret || len(s) > maxMarkedSecret {
		return fmt.Errorf("%w: a secret to mark is %d to %d bytes, this one %d", ErrInvalidSecret, minMarkedSecret, maxMarkedSecret, len(s))
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
		default:
			return fmt.Errorf("%w: byte %d of the secret is %q: a secret to mark holds only letters, digits, '-', '_', '.' and '~' (hex or base64.RawURLEncoding), which html/template prints unchanged", ErrInvalidSecret, i, c)
		}
	}
	return nil
}

// secrets is the state of a response that marked a secret.
type secrets struct {
	// spans are where WriteSecret wrote secrets into the bytes held back.
	spans []span
	// marked are the secrets TemplateSecret marked; longest is the
	// longest's length.
	marked  [][]byte
	longest int
	// carry is the end of the stream written so far, held back from the
	// encoder in case it begins a marked secret (feed); its first sent
	// bytes went out already, isolated, at a flush. head is where feed
	// looks for a secret across the carry's end.
	carry, head []byte
	sent        int
}

// marks returns the state of the response's secrets, nil when it
// marked none.
func (rw *responseWriter) marks() *secrets {
	if rw.after == nil {
		return nil
	}
	return rw.after.sec
}

// span is [start, end) of a secret in a body.
type span struct{ start, end int }

// WriteSecret is the [SecretWriter] method of the writer a handler gets:
// see [WriteSecret].
func (hw *handlerWriter) WriteSecret(p []byte) (int, error) {
	rw := hw.lock()
	if rw == nil {
		return 0, errFinished
	}
	defer hw.unlock()
	return rw.writeSecret(p)
}

func (hw *handlerWriter) markSecret(s string) error {
	rw := hw.lock()
	if rw == nil {
		return errFinished
	}
	defer hw.unlock()
	return rw.markSecret(s)
}

// secretState returns the response's secrets, made on the first call,
// after checking that the response can still take one. A response taking
// its first secret stops teeing its body to the hooks: none may keep it.
func (rw *responseWriter) secretState() (*secrets, error) {
	if sec := rw.marks(); sec != nil {
		return sec, nil
	}
	if rw.state == stateComparing {
		if err := rw.unhold(); err != nil { // no stored encoding isolates it
			return nil, err
		}
	}
	switch rw.state {
	case stateWaiting, stateHandedBack, stateFinished, stateHijacked, stateSent:
	case stateDiscarding:
		return nil, ErrSecretNotIsolated
	case stateEncoding:
		if rw.offer.dict != nil || !writers.CanIsolate(rw.offer.coding) {
			return nil, ErrSecretNotIsolated
		}
	}
	if rw.state != stateWaiting && len(rw.w.Header()["Use-As-Dictionary"]) > 0 {
		return nil, ErrSecretNotIsolated
	}
	if rw.after == nil {
		rw.after = &afterStatus{}
	}
	rw.after.sec = &secrets{}
	rw.teeing = 0
	return rw.after.sec, nil
}

// writeSecret writes p in a context of its own: held back with its span
// while the verdict waits, isolated in the encoder after, plain in a plain
// response.
func (rw *responseWriter) writeSecret(p []byte) (int, error) {
	if len(p) > MaxSecretSize {
		return 0, fmt.Errorf("%w: %d bytes, over MaxSecretSize (%d)", ErrInvalidSecret, len(p), MaxSecretSize)
	}
	switch rw.state {
	case stateHandedBack:
		return rw.w.Write(p)
	case stateFinished, stateSent:
		return 0, errFinished
	case stateHijacked:
		return 0, http.ErrHijacked
	}
	sec, err := rw.secretState()
	if err != nil {
		return 0, err
	}
	if rw.state == stateWaiting {
		rw.held = nil
		// p's span goes with the bytes held back only when p is held
		// back with them: a p that overflows the buffer commits the
		// response, the held bytes go out without it, and p goes below.
		start := len(rw.buffered())
		fits := start+len(p) <= rw.m.buffers.Size()
		if fits {
			sec.spans = append(sec.spans, span{start, start + len(p)})
		}
		held, err := rw.hold(p)
		if held {
			return len(p), err
		}
		if fits && len(sec.spans) > 0 && sec.spans[len(sec.spans)-1].start == start {
			sec.spans = sec.spans[:len(sec.spans)-1]
		}
		if err != nil {
			return 0, err
		}
		if rw.state == stateEncoding && (rw.offer.dict != nil || !writers.CanIsolate(rw.offer.coding)) {
			return 0, ErrSecretNotIsolated // unreachable: advance chose an isolating offer
		}
	}
	if rw.state != stateEncoding {
		return rw.pass(p)
	}
	if rw.hdr.declared >= 0 && rw.written+int64(len(p)) > rw.hdr.declared && !rw.head {
		return 0, http.ErrContentLength
	}
	t0 := rw.clock()
	defer rw.spent(t0)
	if err := rw.sendCarry(true); err != nil {
		return 0, err
	}
	if rw.hashed != nil {
		_, _ = rw.hashed.h.Write(p) // length hiding: a stream's padding depends on every byte
	}
	n, err := writers.WriteIsolated(rw.enc.Encoder, p)
	rw.written += int64(n)
	return n, err
}

// markSecret marks s: every occurrence of it in the body from now on is
// isolated.
func (rw *responseWriter) markSecret(s string) error {
	switch rw.state {
	case stateHandedBack:
		return nil
	case stateFinished, stateSent:
		return errFinished
	case stateHijacked:
		return http.ErrHijacked
	}
	sec, err := rw.secretState()
	if err != nil {
		return err
	}
	for _, m := range sec.marked {
		if string(m) == s {
			return nil
		}
	}
	if len(sec.marked) == maxMarked {
		return fmt.Errorf("%w: a response marks at most %d secrets", ErrInvalidSecret, maxMarked)
	}
	sec.marked = append(sec.marked, []byte(s))
	sec.longest = max(sec.longest, len(s))
	return nil
}

// secretOffer returns the offer of a response that marks a secret: the
// one it has when that coding can isolate it, otherwise the one the
// client's Accept-Encoding gets among the codings that can (nil for
// identity). No dictionary: a delta would match the secret against one.
func (rw *responseWriter) secretOffer() *offer {
	o := rw.offer
	if o == nil || o.dict == nil && writers.CanIsolate(o.coding) {
		return o
	}
	if i := negotiate(rw.req.Header["Accept-Encoding"], rw.m.isolating); i >= 0 {
		return &rw.m.isolating[i]
	}
	return nil
}

// isolatingOffers returns the offers whose codings can isolate a secret.
func isolatingOffers(offers []offer) []offer {
	return slices.DeleteFunc(slices.Clone(offers), func(o offer) bool { return !writers.CanIsolate(o.coding) })
}

// encodeWhole writes a whole body, held back, to enc: the spans
// WriteSecret wrote and every occurrence of a marked secret isolated.
func (sec *secrets) encodeWhole(enc writers.Encoder, body []byte) error {
	pos := 0
	for _, s := range sec.find(body, sec.spans) {
		if pos < s.start {
			if _, err := enc.Write(body[pos:s.start]); err != nil {
				return err
			}
		}
		if _, err := writers.WriteIsolated(enc, body[s.start:s.end]); err != nil {
			return err
		}
		pos = s.end
	}
	if pos < len(body) {
		_, err := enc.Write(body[pos:])
		return err
	}
	return nil
}

// writeWhole writes a whole body to enc, isolating the response's secrets.
func (rw *responseWriter) writeWhole(enc writers.Encoder, body []byte) error {
	if sec := rw.marks(); sec != nil {
		return sec.encodeWhole(enc, body)
	}
	_, err := enc.Write(body)
	return err
}

// passHeld passes on the bytes held back once the verdict is known: in an
// encoded stream that marks secrets, with the spans WriteSecret wrote into
// them and the marked secrets isolated.
func (rw *responseWriter) passHeld(b []byte) (int, error) {
	sec := rw.marks()
	if sec == nil || rw.state != stateEncoding {
		return rw.pass(b)
	}
	spans := sec.spans
	sec.spans = nil
	return rw.feedStream(b, spans)
}

// feedStream is pass for an encoded stream that marks secrets.
func (rw *responseWriter) feedStream(p []byte, given []span) (int, error) {
	if rw.hdr.declared >= 0 && rw.written+int64(len(p)) > rw.hdr.declared && !rw.head {
		return 0, http.ErrContentLength
	}
	t0 := rw.clock()
	err := rw.feed(p, given)
	rw.spent(t0)
	if err != nil {
		return 0, err
	}
	rw.written += int64(len(p))
	return len(p), nil
}

// find returns the spans of secrets in b, sorted and merged: given, and
// every occurrence of a marked secret.
func (sec *secrets) find(b []byte, given []span) []span {
	spans := slices.Clone(given)
	for _, m := range sec.marked {
		for i := 0; ; {
			j := bytes.Index(b[i:], m)
			if j < 0 {
				break
			}
			spans = append(spans, span{i + j, i + j + len(m)})
			i += j + 1
		}
	}
	return mergeSpans(spans)
}

// mergeSpans sorts spans and merges those that overlap or touch.
func mergeSpans(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	merged := spans[:0]
	for _, s := range spans {
		if n := len(merged); n > 0 && s.start <= merged[n-1].end {
			merged[n-1].end = max(merged[n-1].end, s.end)
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

// feed writes p to the encoder of a stream that marks secrets: given (the
// spans WriteSecret wrote, for the bytes held back) and the occurrences of
// the marked secrets isolated, the rest compressed. The stream is the
// carry, then p. Its last bytes, as many as the longest marked secret
// less one (fewer after a secret), are held back as the next carry,
// whatever they are: they may begin a secret the next write completes,
// and what a flush or a WriteSecret then isolates of them must not depend
// on whether they do, or input reflected just before it would tell, by
// the response's length, whether it begins the secret.
func (rw *responseWriter) feed(p []byte, given []span) error {
	sec := rw.marks()
	if cap(sec.carry) < sec.longest {
		// One buffer for both: the carry is at most the longest less
		// one, the head the carry and the longest.
		buf := make([]byte, 0, 3*sec.longest)
		sec.carry = append(buf[:0:sec.longest], sec.carry...)
		sec.head = buf[sec.longest:sec.longest]
	}
	c, sent := sec.carry, sec.sent
	nc := len(c)
	spans := sec.find(p, given)
	for i := range spans {
		spans[i].start += nc
		spans[i].end += nc
	}
	if nc > 0 {
		// A secret that begins in the carry ends within the longest's
		// length of it.
		sec.head = append(append(sec.head[:0], c...), p[:min(len(p), sec.longest)]...)
		for _, s := range sec.find(sec.head, nil) {
			if s.start < nc {
				spans = append(spans, s)
			}
		}
		spans = mergeSpans(spans)
	}
	total, last := nc+len(p), 0
	if n := len(spans); n > 0 {
		last = spans[n-1].end
	}
	end := total - min(max(sec.longest-1, 0), total-last)
	pos := 0
	for _, s := range spans {
		if from := max(pos, sent); from < s.start {
			if err := rw.writeRange(c, p, from, s.start, false); err != nil {
				return err
			}
		}
		if from := max(s.start, sent); from < s.end {
			if err := rw.writeRange(c, p, from, s.end, true); err != nil {
				return err
			}
		}
		pos = s.end
	}
	if from := max(pos, sent); from < end {
		if err := rw.writeRange(c, p, from, end, false); err != nil {
			return err
		}
	}
	if end < nc {
		c = append(c[:copy(c, c[end:])], p...)
	} else {
		c = append(c[:0], p[end-nc:]...)
	}
	sec.carry, sec.sent = c, max(0, sent-end)
	return nil
}

// writeRange writes [from, to) of the stream c then p to the encoder,
// isolated or not.
func (rw *responseWriter) writeRange(c, p []byte, from, to int, isolated bool) error {
	var b []byte
	switch nc := len(c); {
	case to <= nc:
		b = c[from:to]
	case from >= nc:
		b = p[from-nc : to-nc]
	case !isolated:
		if _, err := rw.enc.Write(c[from:]); err != nil {
			return err
		}
		b = p[:to-nc]
	default: // a secret across the carry's end: one segment
		b = append(slices.Clone(c[from:]), p[:to-nc]...)
	}
	if isolated {
		_, err := writers.WriteIsolated(rw.enc.Encoder, b)
		return err
	}
	_, err := rw.enc.Write(b)
	return err
}

// sendCarry sends, isolated, the bytes held back that have not gone out
// (feed): at a flush, which must let the client decode everything written
// so far, and before a secret WriteSecret writes. At a flush they stay the
// start of the next write's scan, in case a secret goes on there; before
// an explicit secret they are done with.
func (rw *responseWriter) sendCarry(done bool) error {
	sec := rw.marks()
	if sec == nil || rw.enc == nil {
		return nil
	}
	if sec.sent < len(sec.carry) {
		if _, err := writers.WriteIsolated(rw.enc.Encoder, sec.carry[sec.sent:]); err != nil {
			return err
		}
		sec.sent = len(sec.carry)
	}
	if done {
		sec.carry, sec.sent = sec.carry[:0], 0
	}
	return nil
}

// endCarry sends, compressed, the bytes held back that have not gone out,
// at the stream's end: no secret goes on after them, and they hold no
// whole one (feed isolated it), so they are compressed as in a whole body.
func (rw *responseWriter) endCarry() error {
	sec := rw.marks()
	if sec == nil || rw.enc == nil || sec.sent >= len(sec.carry) {
		return nil
	}
	_, err := rw.enc.Write(sec.carry[sec.sent:])
	sec.carry, sec.sent = sec.carry[:0], 0
	return err
}
