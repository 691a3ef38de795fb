package squeeze_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// FuzzResponseWriter decodes its input as a request (method and
// Accept-Encoding) and a sequence of handler operations on the
// ResponseWriter (see fuzzOps), runs the same sequence on a plain
// httptest.ResponseRecorder and through the middleware, without a Cache and
// with one (twice, so that the second may be a hit), and checks that the
// middleware changes only the encoding: the same status; for a status that
// allows a body and a GET, the decoded body equals the plain one whenever the
// handler kept to the Content-Length it declared; a Content-Encoding the
// handler did not set only when the request accepted that coding; a
// Content-Length that is the handler's own on a body left alone and counts
// the bytes on the wire on one the middleware rewrote; and no panic.
func FuzzResponseWriter(f *testing.F) {
	const (
		opWriteHeader = iota
		opWrite
		opFlush
		opReadFrom
		opHeader
	)
	// Seeds: the request byte (see fuzzRequest), then each op's byte and
	// its arguments (see fuzzOps).
	f.Add([]byte{0, opHeader, 0, 0, 0, opWrite, 0, 0x40, 0})                                       // text/plain, 16 KiB of text
	f.Add([]byte{1, opHeader, 0, 0, 1, opWrite, 0, 0xa0, 0, opWrite, 1, 0x10, 0})                  // HEAD, html, 40 KiB text, then random
	f.Add([]byte{2, opWriteHeader, 4, opHeader, 0, 0, 0, opWrite, 0, 0x08, 0})                     // 204 with a body
	f.Add([]byte{3, opHeader, 3, 0, 0, opWriteHeader, 5, opWrite, 0, 0x20, 0})                     // ETag, 304
	f.Add([]byte{4, opHeader, 0, 0, 0, opWriteHeader, 1, opReadFrom, 0, 0x90, 0, opFlush})         // 103, then ReadFrom 36 KiB
	f.Add([]byte{5, opHeader, 0, 1, 3, opHeader, 1, 0, 2, opWrite, 0, 0x01, 0x80})                 // content-type lower case, declared length
	f.Add([]byte{6, opHeader, 2, 0, 0, opHeader, 0, 0, 0, opWrite, 0, 0x30, 0})                    // handler's own Content-Encoding
	f.Add([]byte{7, opHeader, 0, 0, 0, opWrite, 0, 0x02, 0, opFlush, opWrite, 0, 0x50, 0})         // flush after a small write
	f.Add([]byte{0, opHeader, 4, 0, 1, opHeader, 5, 0, 0, opHeader, 6, 0, 0, opWrite, 0, 0x30, 0}) // Vary *, no-transform, a range
	f.Add([]byte{0, opReadFrom, 0, 0, 0, opWriteHeader, 1, opWriteHeader, 3})                      // an empty ReadFrom, then 103 and 201

	plain := newMiddleware(f)
	c := newCache(f, 8<<20)
	cached := newMiddleware(f, squeeze.WithCache(c), squeeze.WithMinSize(0))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		method, ae := fuzzRequest(in[0])
		ops := in[1:]
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fuzzOps(w, ops) })

		want := httptest.NewRecorder()
		handler.ServeHTTP(&informational{ResponseRecorder: want}, httptest.NewRequest(method, "/f", nil))
		wantRes := want.Result()

		for _, run := range []struct {
			name string
			h    http.Handler
		}{
			{"no cache", plain.Handler(handler)},
			{"cache", cached.Handler(handler)},
			{"cache again", cached.Handler(handler)},
		} {
			got := httptest.NewRecorder()
			r := httptest.NewRequest(method, "/f", nil)
			if ae != "" {
				r.Header.Set("Accept-Encoding", ae)
			}
			run.h.ServeHTTP(&informational{ResponseRecorder: got}, r)
			res := got.Result()
			if res.StatusCode != wantRes.StatusCode {
				t.Fatalf("%s: status %d, plain %d", run.name, res.StatusCode, wantRes.StatusCode)
			}
			gotCE, wantCE := res.Header.Values("Content-Encoding"), wantRes.Header.Values("Content-Encoding")
			encoded := !slices.Equal(gotCE, wantCE)
			if encoded {
				if len(gotCE) != 1 || !acceptsCoding(ae, gotCE[0]) {
					t.Fatalf("%s: Content-Encoding %q (the handler's %q) for Accept-Encoding %q", run.name, gotCE, wantCE, ae)
				}
				for _, v := range valuesFold(wantRes.Header, "Content-Encoding") {
					if !strings.EqualFold(v, "identity") {
						t.Fatalf("%s: Content-Encoding %q where the handler's body was %q already", run.name, gotCE, v)
					}
				}
			}
			ce := res.Header.Get("Content-Encoding")
			bodyAllowed := method != http.MethodHead && res.StatusCode != http.StatusNoContent &&
				res.StatusCode != http.StatusNotModified && res.StatusCode >= 200
			if !bodyAllowed || !keptDeclaredLength(wantRes.Header, want.Body.Len()) {
				continue
			}
			// A body left as the handler wrote it keeps the handler's own
			// Content-Length, duplicates and all, as net/http sends it; one
			// the middleware rewrote counts the bytes on the wire once.
			cl := res.Header.Values("Content-Length")
			handlers := !encoded && slices.Equal(cl, wantRes.Header.Values("Content-Length"))
			if len(cl) > 0 && !handlers && (len(cl) != 1 || cl[0] != strconv.Itoa(got.Body.Len())) {
				t.Fatalf("%s: Content-Length %q (the handler's %q) for a %d-byte body on the wire",
					run.name, cl, wantRes.Header.Values("Content-Length"), got.Body.Len())
			}
			body := got.Body.Bytes()
			if encoded {
				var err error
				if body, err = testtool.TryDecode(ce, body); err != nil {
					t.Fatalf("%s: decoding the %s body: %v", run.name, ce, err)
				}
			}
			if !bytes.Equal(body, want.Body.Bytes()) {
				t.Fatalf("%s: body (Content-Encoding %q) decodes to %d bytes, plain %d (prefix %q vs %q)",
					run.name, ce, len(body), want.Body.Len(), prefix(body), prefix(want.Body.Bytes()))
			}
		}
	})
}

// informational gives an httptest.ResponseRecorder net/http's handling of
// informational statuses: a 1xx other than 101 goes out ahead of the
// response and is not its status.
type informational struct{ *httptest.ResponseRecorder }

func (w *informational) WriteHeader(code int) {
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		return
	}
	w.ResponseRecorder.WriteHeader(code)
}

// fuzzRequest picks the method and Accept-Encoding from b.
func fuzzRequest(b byte) (method, ae string) {
	method = http.MethodGet
	if b&1 == 1 {
		method = http.MethodHead
	}
	aes := []string{"gzip", "zstd, br, gzip", "br", "", "zstd", "deflate, gzip;q=0.5", "identity", "*"}
	return method, aes[(b>>1)%byte(len(aes))]
}

var (
	fuzzStatuses = []int{200, 103, 100, 201, 204, 304, 206, 301, 404, 500, 599, 299, 102, 410}
	fuzzFields   = []string{"Content-Type", "Content-Length", "Content-Encoding", "ETag", "Vary", "Cache-Control", "Content-Range"}
	fuzzValues   = map[string][]string{
		"Content-Type":     {"text/plain", "text/html; charset=utf-8", "image/png", "application/json", "", "TEXT/CSS"},
		"Content-Encoding": {"gzip", "br", "identity", "GZIP", "zstd, gzip"},
		"ETag":             {`"v1"`, `W/"v1"`, `"v1-gzip"`, `"a\"`, "bad"},
		"Vary":             {"Accept-Encoding", "*", "Cookie", "accept-encoding, User-Agent"},
		"Cache-Control":    {"no-transform", "no-store", "public, max-age=60", "private", "NO-TRANSFORM"},
		"Content-Range":    {"bytes 0-9/100", "bytes */100"},
	}
)

// fuzzOps runs the operations ops encodes on w. Each op is a byte, op%5:
//
//	0 WriteHeader(code): one byte picks the code in fuzzStatuses.
//	1 Write(n): one byte, text (even) or random (odd), two bytes n.
//	2 Flush.
//	3 ReadFrom(n) (io.Copy of a reader with Read only): as Write.
//	4 a header edit: one byte the field in fuzzFields, one the case (the
//	  canonical key, lower or upper case, assigned to the map) and the verb
//	  (set, add, del), one the value; Content-Length's values are 0, 7 and
//	  the number of bytes the whole sequence writes.
//
// The bytes written stop at 256 KiB.
func fuzzOps(w http.ResponseWriter, ops []byte) {
	arg := func(i int) int {
		if i < len(ops) {
			return int(ops[i])
		}
		return 0
	}
	body := func(i int) []byte {
		n := (arg(i+1)<<8 | arg(i+2)) % (80 << 10)
		if arg(i)%2 == 0 {
			return textBody(arg(i)+i, n)
		}
		return randomBody(arg(i)+i, n)
	}
	total, budget := 0, 256<<10
	for i := 0; i < len(ops); {
		switch ops[i] % 5 {
		case 1, 3:
			total += len(body(i + 1))
			i += 4
		case 0:
			i += 2
		case 2:
			i++
		case 4:
			i += 4
		}
	}
	written := 0
	for i := 0; i < len(ops); {
		switch op := ops[i] % 5; op {
		case 0:
			w.WriteHeader(fuzzStatuses[arg(i+1)%len(fuzzStatuses)])
			i += 2
		case 1, 3:
			b := body(i + 1)
			i += 4
			if written += len(b); written > budget {
				return
			}
			if op == 1 {
				_, _ = w.Write(b)
			} else {
				_, _ = io.Copy(w, onlyReader{bytes.NewReader(b)})
			}
		case 2:
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			i++
		case 4:
			name := fuzzFields[arg(i+1)%len(fuzzFields)]
			key := []string{name, strings.ToLower(name), strings.ToUpper(name)}[arg(i+2)%3]
			var value string
			if name == "Content-Length" {
				value = []string{"0", "7", strconv.Itoa(total)}[arg(i+3)%3]
			} else {
				vs := fuzzValues[name]
				value = vs[arg(i+3)%len(vs)]
			}
			h := w.Header()
			switch arg(i+2) / 3 % 3 {
			case 0:
				h[key] = []string{value}
			case 1:
				h[key] = append(h[key], value)
			case 2:
				delete(h, key)
			}
			i += 4
		}
	}
}

// keptDeclaredLength reports whether every Content-Length h declares, under
// any case, is n: a handler that declares another length than it writes gets
// an error from net/http, and what goes out is not the plain body.
func keptDeclaredLength(h http.Header, n int) bool {
	for _, v := range valuesFold(h, "Content-Length") {
		if v != strconv.Itoa(n) {
			return false
		}
	}
	return true
}

// acceptsCoding reports whether the Accept-Encoding value ae names coding, or *.
func acceptsCoding(ae, coding string) bool {
	for tok := range strings.SplitSeq(ae, ",") {
		name, _, _ := strings.Cut(tok, ";")
		if name = strings.TrimSpace(name); strings.EqualFold(name, coding) || name == "*" {
			return true
		}
	}
	return false
}

// valuesFold returns the values of the field name under any case of its key.
func valuesFold(h http.Header, name string) []string {
	var vs []string
	for k, v := range h {
		if strings.EqualFold(k, name) {
			vs = append(vs, v...)
		}
	}
	return vs
}
