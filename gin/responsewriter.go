package squeezegin

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/squeezehttp/squeeze"
)

// responseWriter is the [gin.ResponseWriter] of the handlers behind the
// middleware: gin's bookkeeping over squeeze's writer. As gin's own, it
// holds the status until the header must go out (the first write, Flush or
// WriteHeaderNow), so a handler may change it until then.
type responseWriter struct {
	w http.ResponseWriter // squeeze's
	// engine is gin's writer, under squeeze: CloseNotify and Pusher are
	// the connection's, whatever squeeze does with the body.
	engine gin.ResponseWriter
	status int
	size   int // -1 until the header is written
}

// errHijackAfterBody is Hijack's error once the body has begun, as gin's.
var errHijackAfterBody = errors.New("squeezegin: Hijack after the response body was written")

// reset makes rw the writer over squeeze's w, starting from the status
// gin's engine writer holds (gin presets 404 and 405 there).
func (rw *responseWriter) reset(w http.ResponseWriter, engine gin.ResponseWriter) {
	*rw = responseWriter{w: w, engine: engine, status: engine.Status(), size: -1}
}

// Header returns squeeze's header map, the response's.
func (rw *responseWriter) Header() http.Header { return rw.w.Header() }

// WriteHeader sets the status to send, until the header has gone out.
func (rw *responseWriter) WriteHeader(code int) {
	if code > 0 && !rw.Written() {
		rw.status = code
	}
}

// WriteHeaderNow sends the header, once.
func (rw *responseWriter) WriteHeaderNow() {
	if !rw.Written() {
		rw.size = 0
		rw.w.WriteHeader(rw.status)
	}
}

// Write sends the header if it has not gone out, then b.
func (rw *responseWriter) Write(b []byte) (int, error) {
	rw.WriteHeaderNow()
	n, err := rw.w.Write(b)
	rw.size += n
	return n, err
}

// WriteSecret is Write for a secret, which squeeze compresses in a context
// of its own ([squeeze.WriteSecret]): the status gin holds goes out first,
// and the secret counts in Size.
func (rw *responseWriter) WriteSecret(secret []byte) (int, error) {
	rw.WriteHeaderNow()
	n, err := squeeze.WriteSecret(rw.w, secret)
	rw.size += n
	return n, err
}

// WriteString is Write for a string.
func (rw *responseWriter) WriteString(s string) (int, error) {
	rw.WriteHeaderNow()
	n, err := io.WriteString(rw.w, s)
	rw.size += n
	return n, err
}

// Status returns the status set or sent.
func (rw *responseWriter) Status() int { return rw.status }

// Size returns the body bytes the handlers wrote (before compression), -1
// before the header.
func (rw *responseWriter) Size() int { return rw.size }

// Written reports whether the header has gone out.
func (rw *responseWriter) Written() bool { return rw.size != -1 }

// Flush sends the header if it has not gone out, and what squeeze holds.
func (rw *responseWriter) Flush() {
	rw.WriteHeaderNow()
	_ = http.NewResponseController(rw.w).Flush()
}

// Hijack takes the connection through squeeze, before any body was written.
func (rw *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if rw.size > 0 {
		return nil, nil, errHijackAfterBody
	}
	return http.NewResponseController(rw.w).Hijack()
}

// CloseNotify is the connection's (deprecated in net/http, used by
// gin's Context.Stream).
func (rw *responseWriter) CloseNotify() <-chan bool { return rw.engine.CloseNotify() }

// Pusher is the connection's HTTP/2 pusher, or nil.
func (rw *responseWriter) Pusher() http.Pusher { return rw.engine.Pusher() }

// Unwrap returns squeeze's writer, for [http.ResponseController].
func (rw *responseWriter) Unwrap() http.ResponseWriter { return rw.w }
