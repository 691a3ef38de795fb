package squeezeecho_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/squeezehttp/squeeze"
	squeezeecho "github.com/squeezehttp/squeeze/echo"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// The adapter allocates nothing per request beyond what squeeze's own
// handler and echo do: an echo app with the middleware costs at most an
// echo app with a middleware that only calls the next handler plus
// m.Handler serving the same response in net/http. The squeeze handler is
// built once, in Middleware; one built per request would cost its closures
// on every request (echo applies e.Use's middlewares per request).
func TestMiddlewareAllocatesNothingBeyondSqueezeAndEcho(t *testing.T) {
	testtool.SkipUnlessAllocsCount(t)
	body := []byte(strings.Repeat(`{"id": 1, "name": "squeeze", "tags": ["a", "b"]},`, 80))
	ct := []string{"application/json"}
	m := squeeze.MustNew(squeeze.WithEncodings(squeeze.Gzip))
	core := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header()["Content-Type"] = ct
		_, _ = w.Write(body)
	}))
	app := func(mw echo.MiddlewareFunc) *echo.Echo {
		e := echo.New()
		e.Use(mw)
		e.GET("/", func(c echo.Context) error {
			c.Response().Header()["Content-Type"] = ct
			_, err := c.Response().Write(body)
			return err
		})
		return e
	}
	passThrough := app(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error { return next(c) }
	})
	adapted := app(squeezeecho.Middleware(m))

	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	w := testtool.NewAllocWriter()
	serve := func(h http.Handler) func() {
		return func() { w.Reset(); h.ServeHTTP(w, req) }
	}
	for name, h := range map[string]http.Handler{"squeeze": core, "echo with squeeze": adapted} {
		serve(h)()
		if ce := w.H.Get("Content-Encoding"); ce != squeeze.Gzip || w.N >= len(body) {
			t.Fatalf("%s: Content-Encoding %q, %d bytes of %d; want gzip, smaller", name, ce, w.N, len(body))
		}
	}
	squeezeAllocs := testtool.AllocsPerRequest(1000, serve(core))
	echoAllocs := testtool.AllocsPerRequest(1000, serve(passThrough))
	adapterAllocs := testtool.AllocsPerRequest(1000, serve(adapted))
	t.Logf("per request: squeeze %.3f, echo %.3f, echo with squeeze %.3f allocations", squeezeAllocs, echoAllocs, adapterAllocs)
	// The margin, a tenth of an allocation, is below what one closure per
	// request costs; squeeze's own share (an object per few dozen
	// responses) counts one more or less in a thousand runs.
	if adapterAllocs > squeezeAllocs+echoAllocs+0.1 {
		t.Errorf("echo with squeeze allocates %.3f times per request, squeeze %.3f and echo %.3f: the adapter adds %.3f",
			adapterAllocs, squeezeAllocs, echoAllocs, adapterAllocs-squeezeAllocs-echoAllocs)
	}
}
