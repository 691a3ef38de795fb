package bench

import (
	"bytes"
	"io"
	"net/http"
)

// ResponseWriter is the one http.ResponseWriter every implementation writes
// to: a reused header map and a body that is counted and, for round-trip
// checks, kept. It implements http.Flusher, as net/http's writers do, so
// that streaming paths are exercised; it implements nothing else, so no
// middleware takes a path the others cannot.
type ResponseWriter struct {
	header  http.Header
	status  int
	written int64
	flushes int
	body    *bytes.Buffer
}

// NewResponseWriter returns a ResponseWriter that keeps the body when keep
// is true and only counts it otherwise.
func NewResponseWriter(keep bool) *ResponseWriter {
	w := &ResponseWriter{header: make(http.Header, 8)}
	if keep {
		w.body = new(bytes.Buffer)
	}
	return w
}

// Header returns the header map, which Reset empties but keeps.
func (w *ResponseWriter) Header() http.Header { return w.header }

// WriteHeader records the first status code.
func (w *ResponseWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

// Write counts p and keeps it if the writer keeps bodies.
func (w *ResponseWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.written += int64(len(p))
	if w.body != nil {
		return w.body.Write(p)
	}
	return len(p), nil
}

// Flush counts the flush.
func (w *ResponseWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.flushes++
}

// Reset readies the writer for the next response without allocating: the
// header map is cleared in place, so headers do not pile up across
// iterations.
func (w *ResponseWriter) Reset() {
	clear(w.header)
	w.status = 0
	w.written = 0
	w.flushes = 0
	if w.body != nil {
		w.body.Reset()
	}
}

// Status returns the status code written, or 0.
func (w *ResponseWriter) Status() int { return w.status }

// Written returns the number of body bytes written since the last Reset.
func (w *ResponseWriter) Written() int64 { return w.written }

// Flushes returns the number of Flush calls since the last Reset.
func (w *ResponseWriter) Flushes() int { return w.flushes }

// Body returns the kept body; it is nil for a counting writer.
func (w *ResponseWriter) Body() []byte {
	if w.body == nil {
		return nil
	}
	return w.body.Bytes()
}

// NewRequest returns a GET request whose Accept-Encoding names coding alone.
// An empty coding sends no Accept-Encoding.
func NewRequest(coding string) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
	r.RequestURI = "/" // as net/http's server sets it
	if coding != "" {
		r.Header.Set("Accept-Encoding", coding)
	}
	return r
}

// Upload is a reusable request carrying a compressed body, for benchmarks of
// request decoding. Reset restores the body and the headers a middleware may
// have rewritten, without allocating.
type Upload struct {
	Req     *http.Request
	coding  string
	payload []byte
	reader  bytes.Reader
	body    readCloser
	ce      []string
}

type readCloser struct{ io.Reader }

func (readCloser) Close() error { return nil }

// NewUpload returns an Upload of payload, which is already encoded with
// coding.
func NewUpload(coding string, payload []byte) *Upload {
	u := &Upload{coding: coding, payload: payload, ce: []string{coding}}
	u.Req, _ = http.NewRequest(http.MethodPost, "http://127.0.0.1/upload", nil)
	u.Reset()
	return u
}

// Reset makes the request new again.
func (u *Upload) Reset() {
	u.reader.Reset(u.payload)
	u.body.Reader = &u.reader
	u.Req.Body = &u.body
	u.Req.ContentLength = int64(len(u.payload))
	h := u.Req.Header
	clear(h)
	h["Content-Encoding"] = u.ce
	h["Content-Type"] = contentTypeOctet
}

var contentTypeOctet = []string{"application/octet-stream"}
