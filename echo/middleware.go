// Package squeezeecho mounts a [squeeze.Middleware] in echo v4 as an
// [echo.MiddlewareFunc]. It only translates: what is compressed, how and
// when is squeeze's, through [squeeze.Middleware.Handler].
//
// Unlike echo.WrapMiddleware(squeeze.Handler), the middleware hands a
// handler's error to echo's HTTPErrorHandler (c.Error) while squeeze still
// holds the response, so echo's error pages are compressed and carry Vary
// like any other response; and it gives the errors squeeze's request-body
// decoding ends with the statuses they call for, without their text: a body
// over [squeeze.WithMaxDecompressedSize] is 413 (also when it reaches the
// handler through c.Bind, which calls every read error 400), a body that is
// not valid for its Content-Encoding 400, and a decoder memory budget that
// stays spent 503 with Retry-After.
//
// The squeeze handler is built once, when [Middleware] is called: echo
// applies the middlewares of e.Use on every request, and a handler built
// there would cost its allocations on every request too. What a request
// needs (its echo.Context, the rest of the chain) reaches that handler
// through a pooled writer over echo's, so the adapter allocates nothing per
// request beyond what squeeze and echo do.
package squeezeecho

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/squeezehttp/squeeze"
)

// Middleware returns an [echo.MiddlewareFunc] that runs the rest of the
// chain behind m; a nil m has the defaults (see
// [squeeze.Middleware.Handler]). Mount it with e.Use, outermost or outside
// every middleware that buffers, rewrites or hashes the body, or on a
// group (e.Group("/api", mw)).
//
// m stays the caller's: close it (m.Close) once echo has shut down
// (e.Shutdown); the middleware never does, since m may serve other routers.
//
// A handler's error is handled by c.Error inside squeeze and then returned,
// as echo's RequestLogger with HandleError does: the middlewares outside
// still see it, and echo's DefaultHTTPErrorHandler does nothing more for a
// response that is already committed.
func Middleware(m *squeeze.Middleware) echo.MiddlewareFunc {
	a := &adapter{calls: sync.Pool{New: func() any { return new(call) }}}
	a.h = m.Handler(http.HandlerFunc(serve))
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error { return a.run(c, next) }
	}
}

// adapter is one [Middleware]: the squeeze handler, built once, and the
// calls it reuses.
type adapter struct {
	h     http.Handler
	calls sync.Pool // of *call
}

// run serves c through squeeze: the squeeze handler gets a call, a writer
// over c's Response that carries c and next to serve.
func (a *adapter) run(c echo.Context, next echo.HandlerFunc) error {
	k := a.calls.Get().(*call)
	outer, req := c.Response(), c.Request()
	k.outer, k.c, k.next = outer, c, next
	a.h.ServeHTTP(k, req)
	err := k.err
	c.SetRequest(req)
	c.SetResponse(outer)
	// A call whose chain panicked is not put back: c may still hold its
	// Response.
	*k = call{}
	a.calls.Put(k)
	return err
}

// serve is the handler behind squeeze: it runs the rest of the echo chain
// with squeeze's request and writer, and hands an error to c.Error while
// squeeze still holds the response.
func serve(w http.ResponseWriter, r *http.Request) {
	k := callOf(w)
	c := k.c
	// The handler writes to squeeze's writer through a Response of its
	// own, and the one outside records what squeeze sends on (status,
	// size on the wire) for the middlewares outside.
	k.sw = secretWriter{ResponseWriter: w, r: &k.inner}
	k.inner = *echo.NewResponse(&k.sw, c.Echo())
	c.SetRequest(r)
	c.SetResponse(&k.inner)
	if err := k.next(c); err != nil {
		err = statusOf(c, err)
		c.Error(err)
		k.err = err
	}
}

// call is one request in the adapter: the writer squeeze writes to, over
// echo's Response, and what serve needs to run the rest of the chain.
type call struct {
	outer *echo.Response
	c     echo.Context
	next  echo.HandlerFunc
	err   error         // what the chain returned, as c.Error got it
	inner echo.Response // the Response the chain writes to, over sw
	sw    secretWriter  // squeeze's writer, for inner
}

// secretWriter is squeeze's writer under the Response the chain writes to,
// so that a secret written with [squeeze.WriteSecret], which finds it
// through that Response's Unwrap, goes through the Response as a Write
// does: committing it first, counted in its Size.
type secretWriter struct {
	http.ResponseWriter
	r *echo.Response
}

// WriteSecret commits the Response, as its Write would, then writes
// secret with squeeze.WriteSecret, counting it in the Response's Size.
func (s *secretWriter) WriteSecret(secret []byte) (int, error) {
	if !s.r.Committed {
		if s.r.Status == 0 {
			s.r.Status = http.StatusOK
		}
		s.r.WriteHeader(s.r.Status)
	}
	n, err := squeeze.WriteSecret(s.ResponseWriter, secret)
	s.r.Size += int64(n)
	return n, err
}

// Flush is squeeze's writer's, for code asserting http.Flusher.
func (s *secretWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
		return
	}
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

// Hijack is squeeze's writer's, for code asserting http.Hijacker.
func (s *secretWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(s.ResponseWriter).Hijack()
}

// Unwrap returns squeeze's writer, for [http.ResponseController].
func (s *secretWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// callOf finds the call under squeeze's writer w (or w itself, which
// squeeze hands on as it is for a protocol upgrade), following Unwrap.
func callOf(w http.ResponseWriter) *call {
	for {
		switch t := w.(type) {
		case *call:
			return t
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			// Only the adapter's squeeze handler calls serve, with the
			// writer run gave it.
			panic("squeezeecho: the handler behind squeeze got a writer not over the adapter's")
		}
	}
}

// Header returns the header of echo's Response.
func (k *call) Header() http.Header { return k.outer.Header() }

// WriteHeader is echo's Response's.
func (k *call) WriteHeader(code int) { k.outer.WriteHeader(code) }

// Write is echo's Response's.
func (k *call) Write(b []byte) (int, error) { return k.outer.Write(b) }

// Flush is echo's Response's.
func (k *call) Flush() { k.outer.Flush() }

// Hijack is echo's Response's.
func (k *call) Hijack() (net.Conn, *bufio.ReadWriter, error) { return k.outer.Hijack() }

// Unwrap returns echo's Response, for [http.ResponseController].
func (k *call) Unwrap() http.ResponseWriter { return k.outer }

// statusOf returns err as the [echo.HTTPError] its status calls for when
// it comes from squeeze's decoding of the request body, wrapped or not
// (c.Bind wraps it in a 400); other errors as they are. The message is the
// status's text; what the decoder found is the Internal error, for logs
// (not an HTTPError, whose status echo's error handler would take). A 503
// gets its Retry-After on c's response.
func statusOf(c echo.Context, err error) error {
	status := 0
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		status = http.StatusRequestEntityTooLarge
	case errors.Is(err, squeeze.ErrInvalidBody):
		status = http.StatusBadRequest
	case errors.Is(err, squeeze.ErrDecoderBusy):
		status = http.StatusServiceUnavailable
		c.Response().Header().Set("Retry-After", "1")
	default:
		return err
	}
	for he, ok := err.(*echo.HTTPError); ok && he.Internal != nil; he, ok = err.(*echo.HTTPError) {
		err = he.Internal
	}
	return echo.NewHTTPError(status, http.StatusText(status)).SetInternal(err)
}
