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

// The gin-contrib/gzip rows of docs/migration.md hold: each row's squeeze
// code, run as written in a gin engine, sends what gin-contrib/gzip sends by
// its documented defaults (gzip for every type and size, the request's path
// not ending in .png, .gif, .jpeg or .jpg; WithMinLength(n) from n bytes),
// except where squeeze differs as the row says: zstd or br where the client
// prefers them, plain for a type or a size squeeze leaves alone. The peer
// is not imported: its defaults are written down here from its source
// (v1.2).
func TestMigrationRowsFromGinContribGzip(t *testing.T) {
	level, n := 5, 1400
	for _, row := range []struct {
		code    string
		mount   func(r *gin.Engine)
		peerMin int
		minSize int
	}{{
		code:    "r.Use(squeezegin.Middleware(nil))",
		mount:   func(r *gin.Engine) { r.Use(squeezegin.Middleware(nil)) },
		minSize: 1024,
	}, {
		code: "r.Use(squeezegin.Middleware(squeeze.MustNew(squeeze.WithLevel(squeeze.Gzip, level), squeeze.WithMinSize(n))))",
		mount: func(r *gin.Engine) {
			r.Use(squeezegin.Middleware(squeeze.MustNew(squeeze.WithLevel(squeeze.Gzip, level), squeeze.WithMinSize(n))))
		},
		peerMin: n,
		minSize: n,
	}} {
		t.Run(row.code, func(t *testing.T) {
			testtool.CheckMigrationRow(t, "../docs/migration.md", "migration_test.go", row.code)
			gin.SetMode(gin.TestMode)
			same := 0
			for _, c := range testtool.MigrationCases() {
				body := strings.Repeat("squeeze gin migration ", c.Size/22+1)[:c.Size]
				r := gin.New()
				row.mount(r)
				r.GET("/", func(ctx *gin.Context) { ctx.Data(http.StatusOK, c.ContentType, []byte(body)) })
				req := httptest.NewRequest(http.MethodGet, "/", nil)
				req.Header.Set("Accept-Encoding", c.AE)
				rec := httptest.NewRecorder()
				r.ServeHTTP(rec, req)
				peer := ""
				if c.Size >= row.peerMin {
					peer = testtool.FirstAccepted(c.AE, squeeze.Gzip)
				}
				want := ""
				if c.Size >= row.minSize && squeeze.MustNew().Compresses(c.ContentType) {
					want = testtool.FirstAccepted(c.AE, squeeze.Zstd, squeeze.Brotli, squeeze.Gzip)
				}
				if got := rec.Header().Get("Content-Encoding"); got != want {
					t.Errorf("%+v: squeeze sent %q, want %q", c, got, want)
				}
				if want == peer {
					same++
				}
			}
			if same == 0 {
				t.Error("no case where squeeze does what gin-contrib/gzip does")
			}
		})
	}
}
