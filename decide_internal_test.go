package squeeze

import (
	"net/http"
	"testing"
)

// TestDecideNamesEveryReason drives decide with the facts of each case and
// checks the verdict and the reason: every reason a response is not encoded
// is reachable, and each comes from the fact that names it.
func TestDecideNamesEveryReason(t *testing.T) {
	m := MustNew(WithBufferSize(4096), WithMinSize(100))
	// Without a minimum size, a body of one byte is judged by what it
	// could gain.
	noMin := MustNew(WithBufferSize(4096), WithMinSize(0))
	html := responseFields{contentType: "text/html", typed: true, eligible: true, declared: -1}
	png := responseFields{contentType: "image/png", typed: true, declared: -1}
	with := func(f responseFields, edit func(*responseFields)) responseFields { edit(&f); return f }
	tests := []struct {
		name string
		f    facts
		m    *Middleware // m if nil
		want verdict
		why  Reason
		need need
	}{
		{"204 has no body", facts{responseFields: html, status: 204, offered: true}, nil, sendPlain, ReasonStatus, 0},
		{"304 has no body", facts{responseFields: html, status: 304, offered: true}, nil, sendPlain, ReasonStatus, 0},
		{"206 is partial", facts{responseFields: html, status: 206, offered: true}, nil, sendPlain, ReasonPartial, 0},
		{"Content-Range is partial", facts{responseFields: with(html, func(f *responseFields) { f.partial = true }), status: 200, offered: true}, nil, sendPlain, ReasonPartial, 0},
		{"already encoded", facts{responseFields: with(html, func(f *responseFields) { f.encoded = true }), status: 200, offered: true}, nil, sendPlain, ReasonAlreadyEncoded, 0},
		{"no-transform", facts{responseFields: with(html, func(f *responseFields) { f.noTransform = true }), status: 200, offered: true}, nil, sendPlain, ReasonNoTransform, 0},
		{"ineligible type at the header", facts{responseFields: png, status: 200, offered: true}, nil, sendPlain, ReasonContentType, 0},
		{"untyped waits for the end", facts{responseFields: responseFields{declared: -1}, status: 200, offered: true}, nil, wait, reasonNone, needEnd},
		{"untyped and declared long waits for bytes", facts{responseFields: responseFields{declared: 5000}, status: 200, offered: true}, nil, wait, reasonNone, needBytes},
		{"untyped and empty at the end", facts{responseFields: responseFields{declared: -1}, status: 200, event: atEnd, offered: true}, nil, sendPlain, ReasonContentType, 0},
		{"range request", facts{responseFields: html, status: 200, ranged: true}, nil, sendPlain, ReasonRange, 0},
		{"client accepts no offer", facts{responseFields: html, status: 200}, nil, sendPlain, ReasonNotAccepted, 0},
		{"declared too small", facts{responseFields: with(html, func(f *responseFields) { f.declared = 50 }), status: 200, offered: true}, nil, sendPlain, ReasonTooSmall, 0},
		{"ended too small", facts{responseFields: html, status: 200, buffered: 50, event: atEnd, offered: true}, nil, sendPlain, ReasonTooSmall, 0},
		{"ended short of its declared length", facts{responseFields: with(html, func(f *responseFields) { f.declared = 500 }), status: 200, buffered: 200, event: atEnd, offered: true}, nil, sendPlain, ReasonLength, 0},
		{"HEAD judged by its declared length", facts{responseFields: with(html, func(f *responseFields) { f.declared = 500 }), status: 200, event: atEnd, head: true, offered: true}, nil, sendEncoded, reasonNone, 0},
		{"HEAD without length or body", facts{responseFields: html, status: 200, event: atEnd, head: true, offered: true}, nil, sendPlain, ReasonTooSmall, 0},
		{"declared within the buffer waits", facts{responseFields: with(html, func(f *responseFields) { f.declared = 500 }), status: 200, offered: true}, nil, wait, reasonNone, needEnd},
		{"declared beyond the buffer streams", facts{responseFields: with(html, func(f *responseFields) { f.declared = 5000 }), status: 200, offered: true}, nil, sendEncoded, reasonNone, 0},
		{"unknown length waits", facts{responseFields: html, status: 200, buffered: 50, event: atWrite, offered: true}, nil, wait, reasonNone, needEnd},
		{"overflow streams", facts{responseFields: html, status: 200, buffered: 4000, event: atOverflow, offered: true}, nil, sendEncoded, reasonNone, 0},
		{"flush streams whatever the size", facts{responseFields: html, status: 200, buffered: 10, event: atFlush, offered: true}, nil, sendEncoded, reasonNone, 0},
		{"ended with one byte", facts{responseFields: html, status: 200, buffered: 1, event: atEnd, offered: true}, noMin, sendPlain, ReasonNoGain, 0},
		{"HEAD declaring one byte", facts{responseFields: with(html, func(f *responseFields) { f.declared = 1 }), status: 200, event: atEnd, head: true, offered: true}, noMin, sendPlain, ReasonNoGain, 0},
		{"one byte with trailers streams", facts{responseFields: with(html, func(f *responseFields) { f.trailers = true }), status: 200, buffered: 1, event: atEnd, offered: true}, noMin, sendEncoded, reasonNone, 0},
		{"no encoder to be had", facts{responseFields: html, status: 200, buffered: 500, event: atEnd, offered: true, noEncoder: true}, nil, sendPlain, ReasonNoEncoder, 0},
		{"encoding no smaller", facts{responseFields: html, status: 200, buffered: 500, event: atEnd, offered: true, noGain: true}, nil, sendPlain, ReasonNoGain, 0},
		{"ended within the buffer", facts{responseFields: html, status: 200, buffered: 500, event: atEnd, offered: true}, nil, sendEncoded, reasonNone, 0},
	}
	reached := map[Reason]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dm := m
			if tt.m != nil {
				dm = tt.m
			}
			v, why, need := dm.decide(&tt.f)
			if v != tt.want || why != tt.why || (v == wait && need != tt.need) {
				t.Errorf("decide = %d, %q, %d; want %d, %q, %d", v, why, need, tt.want, tt.why, tt.need)
			}
			reached[why] = true
		})
	}
	// ReasonTooLarge is the FileServer's.
	for r := reasonNone; r < ReasonTooLarge; r++ {
		if !reached[r] {
			t.Errorf("no case reaches reason %q", r)
		}
	}
	_ = http.StatusOK
}
