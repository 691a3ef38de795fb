package squeezeecho_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/squeezehttp/squeeze"
	squeezeecho "github.com/squeezehttp/squeeze/echo"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// The echo rows of docs/migration.md hold: each row's squeeze code, run as
// written, sends what the row says, against echo's own middleware.Gzip run
// beside it: gzip where echo gzips, for the types and sizes squeeze
// compresses (DefaultContentTypes, from 1024 bytes by default), and zstd or
// br where the client prefers them; plain where echo gzips a type or a size
// squeeze leaves alone.
func TestMigrationRowsFromEchoGzip(t *testing.T) {
	Level, MinLength := 5, 1400
	for _, row := range []struct {
		code     string
		mount    func(e *echo.Echo)
		peer     echo.MiddlewareFunc
		peerMin  int // echo's MinLength
		squeezes func(c testtool.MigrationCase) bool
	}{{
		code:     "e.Use(squeezeecho.Middleware(nil))",
		mount:    func(e *echo.Echo) { e.Use(squeezeecho.Middleware(nil)) },
		peer:     middleware.Gzip(),
		squeezes: func(c testtool.MigrationCase) bool { return c.Size >= 1024 },
	}, {
		code: "e.Use(squeezeecho.Middleware(squeeze.MustNew(squeeze.WithLevel(squeeze.Gzip, Level), squeeze.WithMinSize(MinLength))))",
		mount: func(e *echo.Echo) {
			e.Use(squeezeecho.Middleware(squeeze.MustNew(squeeze.WithLevel(squeeze.Gzip, Level), squeeze.WithMinSize(MinLength))))
		},
		peer:     middleware.GzipWithConfig(middleware.GzipConfig{Level: Level, MinLength: MinLength}),
		peerMin:  MinLength,
		squeezes: func(c testtool.MigrationCase) bool { return c.Size >= MinLength },
	}} {
		t.Run(row.code, func(t *testing.T) {
			testtool.CheckMigrationRow(t, "../docs/migration.md", "migration_test.go", row.code)
			same := 0
			for _, c := range testtool.MigrationCases() {
				body := strings.Repeat("squeeze echo migration ", c.Size/23+1)[:c.Size]
				handler := func(ctx echo.Context) error { return ctx.Blob(http.StatusOK, c.ContentType, []byte(body)) }
				peer, ours := echo.New(), echo.New()
				peer.Use(row.peer)
				row.mount(ours)
				peer.GET("/", handler)
				ours.GET("/", handler)
				coding := func(e *echo.Echo) string {
					r := httptest.NewRequest(http.MethodGet, "/", nil)
					r.Header.Set("Accept-Encoding", c.AE)
					rec := httptest.NewRecorder()
					e.ServeHTTP(rec, r)
					return rec.Header().Get("Content-Encoding")
				}
				wantPeer := ""
				if c.Size >= row.peerMin {
					wantPeer = testtool.FirstAccepted(c.AE, squeeze.Gzip)
				}
				want := ""
				if row.squeezes(c) && squeeze.MustNew().Compresses(c.ContentType) {
					want = testtool.FirstAccepted(c.AE, squeeze.Zstd, squeeze.Brotli, squeeze.Gzip)
				}
				if got := coding(peer); got != wantPeer {
					t.Errorf("%+v: echo's own middleware sent %q, the test expects %q of it", c, got, wantPeer)
				}
				if got := coding(ours); got != want {
					t.Errorf("%+v: squeeze sent %q, want %q", c, got, want)
				}
				if want == wantPeer {
					same++
				}
			}
			if same == 0 {
				t.Error("no case where squeeze does what echo does")
			}
		})
	}
}
