package squeeze_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze"
)

// stringCounter is an underlying writer that counts what reaches its Write
// and its WriteString apart.
type stringCounter struct {
	h             http.Header
	bytes, string int
	body          strings.Builder
}

func (w *stringCounter) Header() http.Header { return w.h }
func (w *stringCounter) WriteHeader(int)     {}
func (w *stringCounter) Write(p []byte) (int, error) {
	w.bytes += len(p)
	w.body.Write(p)
	return len(p), nil
}
func (w *stringCounter) WriteString(s string) (int, error) {
	w.string += len(s)
	w.body.WriteString(s)
	return len(s), nil
}

// A body squeeze passes through unencoded reaches the underlying writer's
// WriteString when the handler wrote it with WriteString, as without
// squeeze: a short body held back whole while the verdict waited, and a
// body of a type not to compress, decided before its first byte.
func TestWriteStringReachesTheUnderlyingWriteString(t *testing.T) {
	long := strings.Repeat("aaabbbccc", 512)
	tests := []struct {
		name, ct, ae string
		writes       []string
	}{
		{"short body, no Accept-Encoding", "", "", []string{"hello string world!"}},
		{"short body, gzip accepted", "text/plain", squeeze.Gzip, []string{"hello string world!"}},
		{"type not to compress, gzip accepted", "application/octet-stream", squeeze.Gzip, []string{long, long}},
		{"long body of a sniffed type not to compress", "", squeeze.Gzip, []string{"\x89PNG\r\n\x1a\n" + long}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.ct != "" {
					w.Header().Set("Content-Type", tt.ct)
				}
				for _, s := range tt.writes {
					if _, err := io.WriteString(w, s); err != nil {
						t.Error(err)
					}
				}
			}))
			w := &stringCounter{h: http.Header{}}
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			if tt.ae != "" {
				r.Header.Set("Accept-Encoding", tt.ae)
			}
			h.ServeHTTP(w, r)
			want := strings.Join(tt.writes, "")
			if ce := w.h.Get("Content-Encoding"); ce != "" || w.body.String() != want {
				t.Fatalf("Content-Encoding %q, %d bytes; want the %d plain bytes", ce, w.body.Len(), len(want))
			}
			if w.string != len(want) || w.bytes != 0 {
				t.Errorf("WriteString got %d bytes and Write %d; want all %d through WriteString", w.string, w.bytes, len(want))
			}
		})
	}
}
