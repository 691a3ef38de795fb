package squeeze_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze"
)

// A decoded body's error names the body it comes from: "request body" for
// what a Middleware decodes, "response body" for what a Transport decodes.
// Either way errors.As finds the *http.MaxBytesError past a cap, with its
// limit, and errors.Is finds ErrInvalidBody for a corrupt stream.
func TestBodyErrorsNameTheBodyTheyComeFrom(t *testing.T) {
	const limit = 1000
	big := encodeRef(t, "gzip", bytes.Repeat([]byte("a"), 10*limit))
	corrupt := append(encodeRef(t, "gzip", []byte("hello, world")), 1, 2, 3)
	corrupt[len(corrupt)-10] ^= 0xff

	request := func(t *testing.T, body []byte) error {
		var got error
		m := newMiddleware(t, squeeze.WithMaxDecompressedSize(limit))
		h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, got = io.ReadAll(r.Body)
		}))
		r := httptest.NewRequest("POST", "/", bytes.NewReader(body))
		r.Header.Set("Content-Encoding", "gzip")
		h.ServeHTTP(httptest.NewRecorder(), r)
		return got
	}
	response := func(t *testing.T, body []byte) error {
		srv := newRawServer(t, "gzip", body)
		tr := newTransport(t, &squeeze.Transport{MaxDecompressedSize: limit})
		_, err := readAll(t, get(t, tr, "GET", srv.URL))
		return err
	}
	for _, tt := range []struct {
		name    string
		read    func(*testing.T, []byte) error
		body    []byte
		words   string
		tooBig  bool
		invalid bool
	}{
		{"request too large", request, big, "request body", true, false},
		{"request corrupt", request, corrupt, "request body", false, true},
		{"response too large", response, big, "response body", true, false},
		{"response corrupt", response, corrupt, "response body", false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.read(t, tt.body)
			if err == nil {
				t.Fatal("read the whole body without an error")
			}
			other := "response body"
			if tt.words == other {
				other = "request body"
			}
			if msg := err.Error(); !strings.Contains(msg, tt.words) || strings.Contains(msg, other) {
				t.Errorf("error %q; want one that says %q", msg, tt.words)
			}
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) != tt.tooBig || tt.tooBig && mbe.Limit != limit {
				t.Errorf("error %v: errors.As finds *http.MaxBytesError %v (%+v); want %v with limit %d", err, mbe != nil, mbe, tt.tooBig, limit)
			}
			if errors.Is(err, squeeze.ErrInvalidBody) != tt.invalid {
				t.Errorf("error %v: errors.Is ErrInvalidBody is %v; want %v", err, !tt.invalid, tt.invalid)
			}
		})
	}
	if msg := squeeze.ErrInvalidBody.Error(); strings.Contains(msg, "request") || strings.Contains(msg, "response") {
		t.Errorf("ErrInvalidBody says %q, which names one side only", msg)
	}
}
