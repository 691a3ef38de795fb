//go:build unix

// squeeze behind the routers and frameworks people mount it in: gin, echo
// v4, chi, gorilla/mux and the standard ServeMux, each mounted as its
// documentation says, on a real listener (HTTP/1.1, and HTTP/2 over TLS),
// read by Go's client and by curl. Each response must be the one the same
// app sends without squeeze (status and decoded body), compressed where it
// is long enough; a compressed upload reaches the handler decoded.

package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/go-chi/chi/v5"
	"github.com/gorilla/mux"
	"github.com/labstack/echo/v4"

	"github.com/squeezehttp/squeeze"
	squeezeecho "github.com/squeezehttp/squeeze/echo"
	squeezegin "github.com/squeezehttp/squeeze/gin"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// frameworkItems is the JSON every app answers /json with: about 5 KiB,
// enough to be compressed.
func frameworkItems() []map[string]any { return testtool.Items("framework") }

// uploadAnswer is what every app answers a POST to /upload with: the
// length and SHA-256 of the body its handler read.
func uploadAnswer(body []byte) string {
	return fmt.Sprintf("%d %x", len(body), sha256.Sum256(body))
}

// streamEvents is how many server-sent events /stream sends.
const streamEvents = 3

// frameworkRequest is a request every app of a framework is sent, and what
// its answer must be besides matching the app without squeeze.
type frameworkRequest struct {
	method, path string
	// compressed: the response must come encoded.
	compressed bool
	// status is the status the app sends without squeeze (checked there
	// too, so that the test knows what it compares).
	status int
}

// framework is one router or framework with squeeze mounted in it, and
// the same app without squeeze.
type framework struct {
	name string
	// app returns the app; with squeeze mounted as the framework's users
	// mount it when compress is true.
	app      func(compress bool) http.Handler
	requests []frameworkRequest
}

// The requests every app answers: JSON, a stream of server-sent events,
// a route no one registered and an upload.
var commonRequests = []frameworkRequest{
	{"GET", "/json", true, http.StatusOK},
	{"GET", "/stream", false, http.StatusOK},
	{"GET", "/missing", false, http.StatusNotFound},
	{"POST", "/upload", false, http.StatusOK},
}

func frameworks() []framework {
	m := squeeze.MustNew() // the Middleware the echo and gin adapters mount
	items := frameworkItems()
	upload := func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, uploadAnswer(b))
	}
	stream := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range streamEvents {
			fmt.Fprintf(w, "event: tick\ndata: %d\n\n", i)
			_ = http.NewResponseController(w).Flush()
		}
	}
	writeJSON := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(items)
	}
	badRequest := func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "bad request", http.StatusBadRequest) }
	stdlibRequests := append(commonRequests[:len(commonRequests):len(commonRequests)], frameworkRequest{"GET", "/error", false, http.StatusBadRequest})

	return []framework{
		{
			name: "gin",
			app: func(compress bool) http.Handler {
				gin.SetMode(gin.TestMode)
				engine := gin.New()
				if compress {
					engine.Use(squeezegin.Middleware(m))
				}
				engine.GET("/json", func(c *gin.Context) { c.JSON(http.StatusOK, items) })
				engine.GET("/stream", func(c *gin.Context) {
					i := 0
					c.Stream(func(io.Writer) bool { // asserts http.CloseNotifier
						c.SSEvent("tick", i)
						i++
						return i < streamEvents
					})
				})
				engine.GET("/error", func(c *gin.Context) {
					c.AbortWithStatusJSON(http.StatusBadRequest, gin.H{"error": "bad request"})
				})
				engine.POST("/upload", func(c *gin.Context) {
					b, err := io.ReadAll(c.Request.Body)
					if err != nil {
						_ = c.AbortWithError(http.StatusBadRequest, err)
						return
					}
					c.String(http.StatusOK, uploadAnswer(b))
				})
				return engine
			},
			requests: append(commonRequests[:len(commonRequests):len(commonRequests)],
				frameworkRequest{"GET", "/error", false, http.StatusBadRequest}),
		},
		{
			name: "echo",
			app: func(compress bool) http.Handler {
				e := echo.New()
				e.HideBanner, e.HidePort = true, true
				if compress {
					e.Use(squeezeecho.Middleware(m))
				}
				e.GET("/json", func(c echo.Context) error { return c.JSON(http.StatusOK, items) })
				e.GET("/stream", func(c echo.Context) error {
					stream(c.Response(), c.Request())
					return nil
				})
				e.GET("/error", func(echo.Context) error { return echo.NewHTTPError(http.StatusBadRequest, "bad request") })
				e.GET("/not-found", func(echo.Context) error { return echo.ErrNotFound })
				e.GET("/failure", func(echo.Context) error { return errors.New("handler failed") })
				e.GET("/long-error", func(echo.Context) error {
					return echo.NewHTTPError(http.StatusUnprocessableEntity, items) // long enough to compress
				})
				e.POST("/upload", func(c echo.Context) error {
					b, err := io.ReadAll(c.Request().Body)
					if err != nil {
						return echo.NewHTTPError(http.StatusBadRequest, err.Error())
					}
					return c.String(http.StatusOK, uploadAnswer(b))
				})
				return e
			},
			requests: append(commonRequests[:len(commonRequests):len(commonRequests)],
				frameworkRequest{"GET", "/error", false, http.StatusBadRequest},
				frameworkRequest{"GET", "/not-found", false, http.StatusNotFound},
				frameworkRequest{"GET", "/failure", false, http.StatusInternalServerError},
				frameworkRequest{"GET", "/long-error", true, http.StatusUnprocessableEntity},
				frameworkRequest{"POST", "/json", false, http.StatusMethodNotAllowed}),
		},
		{
			name: "chi",
			app: func(compress bool) http.Handler {
				r := chi.NewRouter()
				if compress {
					r.Use(squeeze.Handler)
				}
				r.Get("/json", writeJSON)
				r.Get("/stream", stream)
				r.Get("/error", badRequest)
				r.Post("/upload", upload)
				return r
			},
			requests: append(stdlibRequests[:len(stdlibRequests):len(stdlibRequests)],
				frameworkRequest{"POST", "/json", false, http.StatusMethodNotAllowed}),
		},
		{
			name: "gorilla/mux",
			app: func(compress bool) http.Handler {
				r := mux.NewRouter()
				if compress {
					r.Use(squeeze.Handler)
				}
				r.HandleFunc("/json", writeJSON).Methods(http.MethodGet)
				r.HandleFunc("/stream", stream).Methods(http.MethodGet)
				r.HandleFunc("/error", badRequest).Methods(http.MethodGet)
				r.HandleFunc("/upload", upload).Methods(http.MethodPost)
				return r
			},
			requests: stdlibRequests,
		},
		{
			name: "ServeMux",
			app: func(compress bool) http.Handler {
				mux := http.NewServeMux()
				mux.HandleFunc("GET /json", writeJSON)
				mux.HandleFunc("GET /stream", stream)
				mux.HandleFunc("GET /error", badRequest)
				mux.HandleFunc("POST /upload", upload)
				if compress {
					return squeeze.Handler(mux)
				}
				return mux
			},
			requests: append(stdlibRequests[:len(stdlibRequests):len(stdlibRequests)],
				frameworkRequest{"POST", "/json", false, http.StatusMethodNotAllowed}),
		},
	}
}

// uploadBody is what the tests upload: compressible text, sent gzipped to
// the app with squeeze and plain to the app without.
var uploadBody = bytes.Repeat([]byte("an upload squeeze decodes before the handler reads it. "), 200)

// reference returns the status and body the app without squeeze answers
// req with.
func reference(t *testing.T, srv *httptest.Server, req frameworkRequest) (int, []byte) {
	t.Helper()
	var body io.Reader
	if req.method == http.MethodPost {
		body = bytes.NewReader(uploadBody)
	}
	r, err := http.NewRequestWithContext(t.Context(), req.method, srv.URL+req.path, body)
	if err != nil {
		t.Fatal(err)
	}
	res, err := srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != req.status {
		t.Fatalf("without squeeze, %s %s answers %d %q, not the %d the test expects", req.method, req.path, res.StatusCode, raw, req.status)
	}
	return res.StatusCode, raw
}

func TestFrameworksKeepStatusesAndBodies(t *testing.T) {
	curlPath := testtool.Require(t, "curl")
	upload := testtool.Encode(t, "gzip", uploadBody)
	uploadFile := filepath.Join(t.TempDir(), "upload.gz")
	if err := os.WriteFile(uploadFile, upload, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, fw := range frameworks() {
		t.Run(fw.name, func(t *testing.T) {
			plain := httptest.NewServer(fw.app(false))
			t.Cleanup(plain.Close)
			h1 := httptest.NewServer(fw.app(true))
			t.Cleanup(h1.Close)
			h2 := httptest.NewUnstartedServer(fw.app(true))
			h2.EnableHTTP2 = true
			h2.StartTLS()
			t.Cleanup(h2.Close)

			for _, req := range fw.requests {
				wantStatus, want := reference(t, plain, req)
				if req.method == http.MethodPost && wantStatus == http.StatusOK {
					want = []byte(uploadAnswer(uploadBody))
				}
				for _, srv := range []*httptest.Server{h1, h2} {
					proto := "HTTP/1.1"
					if srv.EnableHTTP2 {
						proto = "HTTP/2"
					}
					name := req.method + " " + req.path + " over " + proto
					t.Run(name+", Go's client", func(t *testing.T) {
						var body io.Reader
						if req.method == http.MethodPost {
							body = bytes.NewReader(upload)
						}
						r, err := http.NewRequestWithContext(t.Context(), req.method, srv.URL+req.path, body)
						if err != nil {
							t.Fatal(err)
						}
						if body != nil {
							r.Header.Set("Content-Encoding", squeeze.Gzip)
						}
						// Go's Transport asks for gzip and decodes it.
						res, err := srv.Client().Do(r)
						if err != nil {
							t.Fatal(err)
						}
						defer res.Body.Close()
						got, err := io.ReadAll(res.Body)
						if err != nil {
							t.Fatalf("reading the body: %v", err)
						}
						if res.ProtoMajor != 1+btoi(srv.EnableHTTP2) {
							t.Errorf("the response came over %s", res.Proto)
						}
						if res.StatusCode != wantStatus || !bytes.Equal(got, want) {
							t.Errorf("%d %q, want %d %q as without squeeze", res.StatusCode, clip(got), wantStatus, clip(want))
						}
						if req.compressed && !res.Uncompressed {
							t.Error("the response did not come gzipped")
						}
					})
					t.Run(name+", curl", func(t *testing.T) {
						args := []string{"--compressed", "-k", "-X", req.method}
						if srv.EnableHTTP2 {
							args = append(args, "--http2")
						}
						// curl sends the upload only where the app reads it: a
						// handler that answers without reading (chi's 405) has
						// Go's HTTP/2 server reset the stream, and curl then
						// fails with "Stream error in the HTTP/2 framing layer"
						// about one time in four, with or without squeeze.
						if req.method == http.MethodPost && wantStatus == http.StatusOK {
							args = append(args, "-H", "Content-Encoding: gzip", "-H", "Content-Type: application/octet-stream", "--data-binary", "@"+uploadFile)
						}
						res := curl(t, append(args, srv.URL+req.path)...)
						if res.status != wantStatus || !bytes.Equal(res.body, want) {
							t.Errorf("%d %q, want %d %q as without squeeze", res.status, clip(res.body), wantStatus, clip(want))
						}
						if ce := res.header.Get("Content-Encoding"); req.compressed && ce == "" {
							t.Errorf("the response came plain to curl (%s)", curlPath)
						}
					})
				}
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// clip shortens b for a message.
func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// gin's Context.Stream, behind squeeze, sends every event as it is flushed
// (compressed), and stops when the client goes away.
func TestGinStreamsServerSentEvents(t *testing.T) {
	var app http.Handler
	for _, fw := range frameworks() {
		if fw.name == "gin" {
			app = fw.app(true)
		}
	}
	srv := httptest.NewServer(app)
	t.Cleanup(srv.Close)
	r, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Accept-Encoding", squeeze.Zstd)
	res, err := srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ce := res.Header.Get("Content-Encoding"); ce != squeeze.Zstd {
		t.Errorf("Content-Encoding %q, want zstd", ce)
	}
	dec, err := testtool.NewReader(res.Header.Get("Content-Encoding"), res.Body)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(dec)
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := range streamEvents {
		fmt.Fprintf(&want, "event:tick\ndata:%d\n\n", i)
	}
	if string(got) != want.String() {
		t.Errorf("decoded %q, want %q", got, want.String())
	}
}

// The README's lines that mount squeeze in gin, echo and gorilla/mux are
// the ones these tests run.
func TestReadmeFrameworkRecipesAreTested(t *testing.T) {
	src, err := os.ReadFile("frameworks_test.go")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, block := range fences(t, "go") {
		if !strings.Contains(block, "squeezeecho.Middleware") {
			continue
		}
		found = true
		for line := range strings.Lines(block) {
			code, _, _ := strings.Cut(line, "//")
			if code = strings.TrimSpace(code); code != "" && !bytes.Contains(src, []byte(code)) {
				t.Errorf("README.md mounts squeeze with %q, which example/frameworks_test.go does not run", code)
			}
		}
	}
	if !found {
		t.Error("README.md has no framework recipe (a ```go block with squeezeecho.Middleware)")
	}
}
