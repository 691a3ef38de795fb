package squeezegin_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/squeezehttp/squeeze"
	squeezegin "github.com/squeezehttp/squeeze/gin"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// items is what the JSON routes answer: about 5 KiB, long enough to
// compress.
func items() []map[string]any { return testtool.Items("gin") }

// groupApp mounts the middleware on the /api group only; /plain is outside.
func groupApp() *gin.Engine {
	gin.SetMode(gin.TestMode)
	r := gin.New()
	r.GET("/plain", func(c *gin.Context) { c.JSON(http.StatusOK, items()) })
	api := r.Group("/api", squeezegin.Middleware(nil))
	api.GET("/items", func(c *gin.Context) { c.JSON(http.StatusOK, items()) })
	api.GET("/invalid", func(c *gin.Context) { c.AbortWithStatusJSON(http.StatusUnprocessableEntity, items()) })
	api.GET("/created", func(c *gin.Context) { c.Status(http.StatusCreated) })
	api.GET("/short", func(c *gin.Context) { c.String(http.StatusTeapot, "short") })
	return r
}

// engineApp mounts the middleware on the engine, where gin's own 404 runs
// it too.
func engineApp() *gin.Engine {
	gin.SetMode(gin.TestMode)
	r := gin.New()
	r.Use(squeezegin.Middleware(nil))
	r.GET("/items", func(c *gin.Context) { c.JSON(http.StatusOK, items()) })
	return r
}

// Over HTTP/1.1 and HTTP/2, on a group the middleware compresses the
// group's responses, its errors too, keeps every status a handler sets,
// and leaves the routes outside the group alone; on the engine, gin's own
// 404 keeps its body.
func TestMiddlewareOnAGroupKeepsStatusesAndBodies(t *testing.T) {
	for _, tc := range []struct {
		app          string
		path         string
		status       int
		coding, body string
		vary         bool
	}{
		{"group", "/api/items", http.StatusOK, squeeze.Zstd, `"item 119"`, true},
		{"group", "/api/invalid", http.StatusUnprocessableEntity, squeeze.Zstd, `"item 119"`, true},
		{"group", "/api/created", http.StatusCreated, "", "", false},
		{"group", "/api/short", http.StatusTeapot, "", "short", true},
		{"group", "/plain", http.StatusOK, "", `"item 119"`, false},
		{"engine", "/items", http.StatusOK, squeeze.Zstd, `"item 119"`, true},
		{"engine", "/missing", http.StatusNotFound, "", "404 page not found", false},
	} {
		app := groupApp()
		if tc.app == "engine" {
			app = engineApp()
		}
		for _, proto := range testtool.Protocols() {
			t.Run(tc.app+" "+tc.path+" over "+proto.Name, func(t *testing.T) {
				srv, client := testtool.StartServer(t, proto.Name, proto.Major, app, true)
				res, raw := testtool.Fetch(t, client, srv.URL+tc.path, "zstd, gzip")
				ce := res.Header.Get("Content-Encoding")
				got := testtool.Decode(t, ce, raw)
				if res.StatusCode != tc.status || ce != tc.coding || !strings.Contains(string(got), tc.body) {
					t.Errorf("%d, Content-Encoding %q, body %.100q; want %d, %q, a body with %q", res.StatusCode, ce, got, tc.status, tc.coding, tc.body)
				}
				if vary := res.Header.Get("Vary"); strings.Contains(vary, "Accept-Encoding") != tc.vary {
					t.Errorf("Vary %q, want Accept-Encoding in it: %v", vary, tc.vary)
				}
			})
		}
	}
}

// Over HTTP/1.1 and HTTP/2, each event Context.Stream sends reaches the
// client, compressed, before the handler sends the next one.
func TestMiddlewareStreamsEachEvent(t *testing.T) {
	for _, proto := range testtool.Protocols() {
		t.Run(proto.Name, func(t *testing.T) {
			read := make(chan struct{})
			gin.SetMode(gin.TestMode)
			r := gin.New()
			r.Group("/events", squeezegin.Middleware(nil)).GET("", func(c *gin.Context) {
				i := 0
				c.Stream(func(io.Writer) bool {
					if i > 0 {
						select {
						case <-read: // the client has decoded the last event
						case <-c.Request.Context().Done():
							return false
						}
					}
					c.SSEvent("tick", i)
					i++
					return i < 3
				})
			})
			srv, client := testtool.StartServer(t, proto.Name, proto.Major, r, true)
			lines := testtool.OpenStream(t, client, srv.URL+"/events", squeeze.Gzip)
			for i := range 3 {
				want := fmt.Sprintf("event:tick\ndata:%d\n\n", i)
				if got, err := testtool.ReadEvent(lines); got != want {
					t.Fatalf("event %d: read %q (%v), want %q", i, got, err, want)
				}
				if i < 2 {
					read <- struct{}{}
				}
			}
		})
	}
}

// A request to switch protocols, which squeeze hands on with the writer it
// got, reaches the handlers and their answer, as do the requests squeeze
// encodes, through the same Middleware.
func TestMiddlewareServesUpgradeRequests(t *testing.T) {
	gin.SetMode(gin.TestMode)
	r := gin.New()
	r.Use(squeezegin.Middleware(nil))
	r.GET("/ws", func(c *gin.Context) {
		c.String(http.StatusTeapot, strings.Repeat("not a websocket; ", 200))
	})
	for _, upgrade := range []bool{true, false} {
		req := httptest.NewRequest(http.MethodGet, "/ws", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		if upgrade {
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "websocket")
		}
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		want := map[bool]string{true: "", false: squeeze.Gzip}[upgrade]
		if rec.Code != http.StatusTeapot || rec.Header().Get("Content-Encoding") != want {
			t.Errorf("upgrade %v: %d with Content-Encoding %q, want 418 with %q", upgrade, rec.Code, rec.Header().Get("Content-Encoding"), want)
		}
	}
}
