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
package squeezeecho

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/squeezehttp/squeeze"
)

// Middleware returns an [echo.MiddlewareFunc] that runs the rest of the
// chain behind m; a nil m has the defaults (see
// [squeeze.Middleware.Handler]). Mount it with e.Use, outermost or outside
// every middleware that buffers, rewrites or hashes the body, or on a
// group (e.Group("/api", mw)).
//
// A handler's error is handled by c.Error inside squeeze and then returned,
// as echo's RequestLogger with HandleError does: the middlewares outside
// still see it, and echo's DefaultHTTPErrorHandler does nothing more for a
// response that is already committed.
func Middleware(m *squeeze.Middleware) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			outer, req := c.Response(), c.Request()
			var err error
			m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// The handler writes to squeeze's writer through a Response
				// of its own, and the one outside records what squeeze
				// sends on (status, size on the wire) for the middlewares
				// outside.
				c.SetRequest(r)
				c.SetResponse(echo.NewResponse(w, c.Echo()))
				if err = next(c); err != nil {
					err = statusOf(c, err)
					c.Error(err)
				}
			})).ServeHTTP(outer, req)
			c.SetRequest(req)
			c.SetResponse(outer)
			return err
		}
	}
}

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
