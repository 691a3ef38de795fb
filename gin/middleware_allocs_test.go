package squeezegin_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/squeezehttp/squeeze"
	squeezegin "github.com/squeezehttp/squeeze/gin"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// The adapter allocates nothing per request beyond what squeeze's own
// handler and gin do: a gin engine with the middleware costs at most a gin
// engine with a middleware that only calls c.Next plus m.Handler serving
// the same response in net/http. The squeeze handler is built once, in
// Middleware; one built per request would cost its closures and the
// handlers' writer on every request.
func TestMiddlewareAllocatesNothingBeyondSqueezeAndGin(t *testing.T) {
	testtool.SkipUnlessAllocsCount(t)
	body := []byte(strings.Repeat(`{"id": 1, "name": "squeeze", "tags": ["a", "b"]},`, 80))
	ct := []string{"application/json"}
	m := squeeze.MustNew(squeeze.WithEncodings(squeeze.Gzip))
	core := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header()["Content-Type"] = ct
		_, _ = w.Write(body)
	}))
	gin.SetMode(gin.TestMode)
	app := func(mw gin.HandlerFunc) *gin.Engine {
		r := gin.New()
		r.Use(mw)
		r.GET("/", func(c *gin.Context) {
			c.Writer.Header()["Content-Type"] = ct
			_, _ = c.Writer.Write(body)
		})
		return r
	}
	passThrough := app(func(c *gin.Context) { c.Next() })
	adapted := app(squeezegin.Middleware(m))

	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	w := testtool.NewAllocWriter()
	serve := func(h http.Handler) func() {
		return func() { w.Reset(); h.ServeHTTP(w, req) }
	}
	for name, h := range map[string]http.Handler{"squeeze": core, "gin with squeeze": adapted} {
		serve(h)()
		if ce := w.H.Get("Content-Encoding"); ce != squeeze.Gzip || w.N >= len(body) {
			t.Fatalf("%s: Content-Encoding %q, %d bytes of %d; want gzip, smaller", name, ce, w.N, len(body))
		}
	}
	squeezeAllocs := testtool.AllocsPerRequest(1000, serve(core))
	ginAllocs := testtool.AllocsPerRequest(1000, serve(passThrough))
	adapterAllocs := testtool.AllocsPerRequest(1000, serve(adapted))
	t.Logf("per request: squeeze %.3f, gin %.3f, gin with squeeze %.3f allocations", squeezeAllocs, ginAllocs, adapterAllocs)
	// The margin, a tenth of an allocation, is below what one closure per
	// request costs; squeeze's own share (an object per few dozen
	// responses) counts one more or less in a thousand runs.
	if adapterAllocs > squeezeAllocs+ginAllocs+0.1 {
		t.Errorf("gin with squeeze allocates %.3f times per request, squeeze %.3f and gin %.3f: the adapter adds %.3f",
			adapterAllocs, squeezeAllocs, ginAllocs, adapterAllocs-squeezeAllocs-ginAllocs)
	}
}
