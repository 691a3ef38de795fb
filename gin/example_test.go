package squeezegin_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/squeezehttp/squeeze"
	squeezegin "github.com/squeezehttp/squeeze/gin"
)

// Middleware mounts squeeze on a route group: the group's responses are
// compressed, the routes outside it are not.
func ExampleMiddleware() {
	m, err := squeeze.New(squeeze.WithMinSize(512))
	if err != nil {
		log.Fatal(err)
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	list := strings.Split(strings.Repeat("squeeze,", 300), ",")
	api := r.Group("/api", squeezegin.Middleware(m))
	api.GET("/items", func(c *gin.Context) { c.JSON(http.StatusOK, list) })
	r.GET("/items", func(c *gin.Context) { c.JSON(http.StatusOK, list) })

	for _, path := range []string{"/api/items", "/items"} {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		fmt.Printf("%s: %d, Content-Encoding %q\n", path, rec.Code, rec.Header().Get("Content-Encoding"))
	}
	// In a program, after the http.Server running r has shut down: m's
	// background work (its cache's upgrades, its calls to a shared store)
	// is the caller's to end.
	if err := m.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// /api/items: 200, Content-Encoding "gzip"
	// /items: 200, Content-Encoding ""
}
