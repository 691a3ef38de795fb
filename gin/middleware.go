// Package squeezegin mounts a [squeeze.Middleware] in gin as a
// [gin.HandlerFunc], on the engine or on a route group. It only translates:
// what is compressed, how and when is squeeze's, through
// [squeeze.Middleware.Handler].
//
// The handlers after it write to a [gin.ResponseWriter] over squeeze's
// writer with gin's own bookkeeping (the status held until the first write,
// Size, Written), so Context.Stream, SSEvent, Flush and the renderers work
// as without it.
//
// The squeeze handler is built once, when [Middleware] is called; what a
// request needs (its gin.Context) reaches it through a pooled writer over
// gin's, so the adapter allocates nothing per request beyond what squeeze
// and gin do.
package squeezegin

import (
	"bufio"
	"net"
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/squeezehttp/squeeze"
)

// Middleware returns a [gin.HandlerFunc] that runs the handlers after it
// behind m; a nil m has the defaults (see [squeeze.Middleware.Handler]).
// Mount it first, with engine.Use or on a group (engine.Group("/api",
// mw)), before every middleware that buffers, rewrites or hashes the body.
// m stays the caller's: close it (m.Close) once the server running the
// engine has shut down; the middleware never does, since m may serve other
// routers.
func Middleware(m *squeeze.Middleware) gin.HandlerFunc {
	a := &adapter{calls: sync.Pool{New: func() any { return new(call) }}}
	a.h = m.Handler(http.HandlerFunc(serve))
	return a.run
}

// adapter is one [Middleware]: the squeeze handler, built once, and the
// calls it reuses.
type adapter struct {
	h     http.Handler
	calls sync.Pool // of *call
}

// run serves c through squeeze: the squeeze handler gets a call, a writer
// over gin's that carries c to serve.
func (a *adapter) run(c *gin.Context) {
	k := a.calls.Get().(*call)
	engine, req := c.Writer, c.Request
	k.engine, k.c = engine, c
	a.h.ServeHTTP(k, req)
	c.Request, c.Writer = req, engine
	if k.served && !k.rw.Written() {
		// Nothing was written: the status a handler set goes out when
		// gin writes the header, after the handlers, as it would
		// without squeeze.
		engine.WriteHeader(k.rw.status)
	}
	// A call whose handlers panicked is not put back: c may still hold
	// its writer.
	*k = call{}
	a.calls.Put(k)
}

// serve is the handler behind squeeze: it runs the handlers after the
// middleware with squeeze's request, writing to squeeze's writer through
// gin's bookkeeping.
func serve(w http.ResponseWriter, r *http.Request) {
	k := callOf(w)
	k.rw.reset(w, k.engine)
	k.served = true
	k.c.Request, k.c.Writer = r, &k.rw
	k.c.Next()
}

// call is one request in the adapter: the writer squeeze writes to, over
// gin's, and what serve needs to run the handlers after the middleware.
type call struct {
	engine gin.ResponseWriter
	c      *gin.Context
	rw     responseWriter // the handlers' writer, over squeeze's
	served bool           // squeeze called serve
}

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
			panic("squeezegin: the handler behind squeeze got a writer not over the adapter's")
		}
	}
}

// Header returns the header of gin's writer.
func (k *call) Header() http.Header { return k.engine.Header() }

// WriteHeader is gin's writer's.
func (k *call) WriteHeader(code int) { k.engine.WriteHeader(code) }

// Write is gin's writer's.
func (k *call) Write(b []byte) (int, error) { return k.engine.Write(b) }

// WriteString is gin's writer's.
func (k *call) WriteString(s string) (int, error) { return k.engine.WriteString(s) }

// Flush is gin's writer's.
func (k *call) Flush() { k.engine.Flush() }

// Hijack is gin's writer's.
func (k *call) Hijack() (net.Conn, *bufio.ReadWriter, error) { return k.engine.Hijack() }

// Unwrap returns gin's writer, for [http.ResponseController].
func (k *call) Unwrap() http.ResponseWriter { return k.engine }
