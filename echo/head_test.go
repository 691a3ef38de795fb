package squeezeecho_test

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/squeezehttp/squeeze/internal/testtool"
)

// bundle returns a script of about n bytes.
func bundle(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "export function f%d(x) { return x * %d + %d; }\n", i, i%97, i*i%1009)
	}
	return b.Bytes()
}

// Over HTTP/1.1 and HTTP/2, a HEAD through the echo middleware carries the
// GET's Content-Encoding, a Content-Length only if it is the GET's, and no
// body bytes, for a file echo serves with http.ServeContent (c.File's way)
// and for a handler that writes its body to a HEAD too, each a stream of
// 88 KiB and a body within the buffer.
func TestMiddlewareAnswersHeadWithTheGetsHeaderAndNoBody(t *testing.T) {
	modTime := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, size := range []int{88 << 10, 20000} {
		body := bundle(size)
		e := squeezeApp()
		both := []string{http.MethodGet, http.MethodHead}
		e.Match(both, "/file.js", func(c echo.Context) error {
			http.ServeContent(c.Response(), c.Request(), "file.js", modTime, bytes.NewReader(body))
			return nil
		})
		e.Match(both, "/blob.js", func(c echo.Context) error {
			return c.Blob(http.StatusOK, "text/javascript", body)
		})
		for _, proto := range testtool.Protocols() {
			t.Run(fmt.Sprintf("%s %d bytes", proto.Name, size), func(t *testing.T) {
				counted, written := testtool.CountBodyBytes(e)
				srv, client := testtool.StartServer(t, proto.Name, proto.Major, counted, true)
				for _, path := range []string{"/file.js", "/blob.js"} {
					for _, coding := range []string{"zstd", "br", "gzip"} {
						testtool.CheckHead(t, client, srv.URL+path, coding, body, written)
					}
				}
			})
		}
	}
}
