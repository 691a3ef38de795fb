// Package squeezegin mounts a [squeeze.Middleware] in gin as a
// [gin.HandlerFunc], on the engine or on a route group. It only translates:
// what is compressed, how and when is squeeze's, through
// [squeeze.Middleware.Handler].
//
// The handlers after it write to a [gin.ResponseWriter] over squeeze's
// writer with gin's own bookkeeping (the status held until the first write,
// Size, Written), so Context.Stream, SSEvent, Flush and the renderers work
// as without it.
package squeezegin

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/squeezehttp/squeeze"
)

// Middleware returns a [gin.HandlerFunc] that runs the handlers after it
// behind m; a nil m has the defaults (see [squeeze.Middleware.Handler]).
// Mount it first, with engine.Use or on a group (engine.Group("/api",
// mw)), before every middleware that buffers, rewrites or hashes the body.
func Middleware(m *squeeze.Middleware) gin.HandlerFunc {
	return func(c *gin.Context) {
		engine, req := c.Writer, c.Request
		var rw *responseWriter
		m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rw = newResponseWriter(w, engine)
			c.Request, c.Writer = r, rw
			c.Next()
		})).ServeHTTP(engine, req)
		c.Request, c.Writer = req, engine
		if rw != nil && !rw.Written() {
			// Nothing was written: the status a handler set goes out when
			// gin writes the header, after the handlers, as it would
			// without squeeze.
			engine.WriteHeader(rw.status)
		}
	}
}
