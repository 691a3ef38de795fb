package squeeze_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// fuzzSecret is the secret FuzzSecretWriter's handlers mark and write.
const fuzzSecret = "q8ZxW2v-Lm_0.Tc~"

// FuzzSecretWriter runs a sequence of writes, secrets written with
// WriteSecret, secrets marked with TemplateSecret and then written in two
// pieces, and flushes (see fuzzSecretOps), on a plain recorder and through
// the middleware, with every Accept-Encoding of fuzzRequest, and checks:
// the body decodes to the plain one; a secret is refused only in a br
// stream; and an encoded response that took a secret holds it as it is
// (stored, isolated), never in br.
func FuzzSecretWriter(f *testing.F) {
	f.Add(byte(0), []byte{0, 0x10, 1, 0, 0x90, 2, 3, 5, 1})
	f.Add(byte(4), []byte{1, 3, 9, 0, 0xa0, 1, 2})
	f.Add(byte(2), []byte{0, 0x90, 1, 3, 16, 0, 0x01})
	f.Add(byte(8), []byte{3, 1, 2, 0, 0x50, 3, 15})
	m := newMiddleware(f, squeeze.WithEncodings(squeeze.Zstd, squeeze.Brotli, squeeze.Gzip, squeeze.Deflate))
	f.Fuzz(func(t *testing.T, req byte, ops []byte) {
		method, ae := fuzzRequest(req)
		want := httptest.NewRecorder()
		fuzzSecretOps(want, ops, nil)

		var refused, took bool
		h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fuzzSecretOps(w, ops, func(err error) {
				if !errors.Is(err, squeeze.ErrSecretNotIsolated) {
					t.Errorf("a secret refused with %v", err)
				}
				refused = true
			})
			took = true
		}))
		rec := serveMethod(h, method, "/f", ae)
		if !took || method == http.MethodHead {
			return
		}
		ce := rec.Header().Get("Content-Encoding")
		body, err := testtool.TryDecode(ce, rec.Body.Bytes())
		if err != nil {
			t.Fatalf("decoding the %s body: %v", ce, err)
		}
		if !bytes.Equal(body, want.Body.Bytes()) {
			t.Fatalf("%s body decodes to %d bytes, plain %d", ce, len(body), want.Body.Len())
		}
		secrets := bytes.Count(want.Body.Bytes(), []byte(fuzzSecret))
		switch {
		case refused && ce != squeeze.Brotli:
			t.Fatalf("a secret was refused in a %q response", ce)
		case ce == squeeze.Brotli && secrets > 0 && !refused:
			t.Fatalf("a br response took a secret")
		case ce != "" && ce != squeeze.Brotli && bytes.Count(rec.Body.Bytes(), []byte(fuzzSecret)) < secrets:
			t.Fatalf("a %s response holds %d of its %d secrets as they are", ce, bytes.Count(rec.Body.Bytes(), []byte(fuzzSecret)), secrets)
		}
	})
}

// fuzzSecretOps runs the operations ops encodes on w, after setting a
// Content-Type. Each op is a byte, op%4:
//
//	0 Write(n) of text: two bytes n (under 80 KiB).
//	1 WriteSecret(fuzzSecret).
//	2 Flush.
//	3 TemplateSecret(fuzzSecret), then the secret written in two Writes,
//	  cut where one byte says.
//
// A secret refused is written plainly after refused is told, as a handler
// that prefers the page whole would.
func fuzzSecretOps(w http.ResponseWriter, ops []byte, refused func(error)) {
	w.Header().Set("Content-Type", "text/html")
	arg := func(i int) int {
		if i < len(ops) {
			return int(ops[i])
		}
		return 0
	}
	for i := 0; i < len(ops); {
		switch ops[i] % 4 {
		case 0:
			_, _ = w.Write(textBody(i, (arg(i+1)<<8|arg(i+2))%(80<<10)))
			i += 3
		case 1:
			if _, err := squeeze.WriteSecret(w, []byte(fuzzSecret)); err != nil {
				refused(err)
				_, _ = w.Write([]byte(fuzzSecret))
			}
			i++
		case 2:
			w.(http.Flusher).Flush()
			i++
		case 3:
			if _, err := squeeze.TemplateSecret(w, fuzzSecret); err != nil {
				refused(err)
			}
			cut := arg(i+1) % len(fuzzSecret)
			_, _ = w.Write([]byte(fuzzSecret[:cut]))
			_, _ = w.Write([]byte(fuzzSecret[cut:]))
			i += 2
		}
	}
}
