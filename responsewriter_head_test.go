package squeeze_test

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"testing/fstest"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// headBody is a page longer than the default buffer, as the bundles a
// file server sends are: the GET is a stream.
var headBody = textBody(35, 88*1024)

// headHandlers are the ways a handler answers HEAD behind squeeze:
// net/http's FileServer and ServeContent declare the length and write
// nothing; squeeze's FileServer serves the file itself; some handlers write
// their body to a HEAD too, or declare its length and write nothing.
func headHandlers(t *testing.T, m *squeeze.Middleware, body []byte) map[string]http.Handler {
	files := fstest.MapFS{"app.js": &fstest.MapFile{Data: body, ModTime: fsModTime}}
	fsrv, _ := fileServer(t, m, files)
	js := func(w http.ResponseWriter) { w.Header().Set("Content-Type", "text/javascript") }
	return map[string]http.Handler{
		"http.FileServer": m.Handler(http.FileServerFS(files)),
		"http.ServeContent": m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.ServeContent(w, r, "app.js", fsModTime, bytes.NewReader(body))
		})),
		"squeeze FileServer": fsrv,
		"a body written to HEAD too": m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			js(w)
			_, _ = w.Write(body)
		})),
		"a length declared, no body": m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			js(w)
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			if r.Method != http.MethodHead {
				_, _ = w.Write(body)
			}
		})),
	}
}

// Over HTTP/1.1 and HTTP/2, a HEAD behind squeeze carries the GET's
// Content-Encoding, a Content-Length only if it is the GET's, and no body
// bytes, for a stream (88 KiB, over the buffer) and a body within the
// buffer, with and without length hiding.
func TestHeadCarriesTheGetsLengthOrNoneAndNoBody(t *testing.T) {
	for _, p := range testtool.Protocols() {
		t.Run(p.Name, func(t *testing.T) {
			for _, hiding := range []int{0, 32} {
				var opts []squeeze.Option
				if hiding > 0 {
					opts = append(opts, squeeze.WithLengthHiding(hiding))
				}
				m := newMiddleware(t, opts...)
				for _, body := range [][]byte{headBody, headBody[:20000]} {
					for name, h := range headHandlers(t, m, body) {
						t.Run(fmt.Sprintf("%s, %d bytes, padding %d", name, len(body), hiding), func(t *testing.T) {
							counted, written := testtool.CountBodyBytes(h)
							srv, c := testtool.StartServer(t, p.Name, p.Major, counted, false)
							for _, coding := range []string{"zstd", "br", "gzip"} {
								testtool.CheckHead(t, c, srv.URL+"/app.js", coding, body, written)
							}
						})
					}
				}
			}
		})
	}
}
