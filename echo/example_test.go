package squeezeecho_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/squeezehttp/squeeze"
	squeezeecho "github.com/squeezehttp/squeeze/echo"
)

// Middleware mounts squeeze with e.Use. echo's error responses go through it
// too: here a 422 whose JSON is long enough to compress.
func ExampleMiddleware() {
	m, err := squeeze.New(squeeze.WithMaxDecompressedSize(1 << 20))
	if err != nil {
		log.Fatal(err)
	}
	e := echo.New()
	e.Use(squeezeecho.Middleware(m))
	e.GET("/items", func(c echo.Context) error {
		return c.JSON(http.StatusOK, strings.Split(strings.Repeat("squeeze,", 300), ","))
	})
	e.GET("/invalid", func(c echo.Context) error {
		return echo.NewHTTPError(http.StatusUnprocessableEntity, strings.Repeat("this field is invalid; ", 100))
	})

	for _, path := range []string{"/items", "/invalid", "/missing"} {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		fmt.Printf("%s: %d, Content-Encoding %q, Vary %q\n", path, rec.Code, rec.Header().Get("Content-Encoding"), rec.Header().Get("Vary"))
	}
	// In a program, after e.Shutdown(ctx): m's background work (its cache's
	// upgrades, its calls to a shared store) is the caller's to end.
	if err := m.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// /items: 200, Content-Encoding "gzip", Vary "Accept-Encoding"
	// /invalid: 422, Content-Encoding "gzip", Vary "Accept-Encoding"
	// /missing: 404, Content-Encoding "", Vary "Accept-Encoding"
}
