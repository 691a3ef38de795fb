package squeezeecho_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/squeezehttp/squeeze"
	squeezeecho "github.com/squeezehttp/squeeze/echo"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// maxBody is the decoded request body cap of the test app.
const maxBody = 4 << 10

// items is what /json answers, and the message of /long-error: about
// 5 KiB of JSON, long enough to compress.
func items() []map[string]any { return testtool.Items("echo") }

// app is an echo app with the squeeze middleware mounted by mount.
func app(mount func(e *echo.Echo)) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	mount(e)
	e.GET("/json", func(c echo.Context) error { return c.JSON(http.StatusOK, items()) })
	e.GET("/long-error", func(echo.Context) error {
		return echo.NewHTTPError(http.StatusUnprocessableEntity, items())
	})
	e.GET("/failure", func(echo.Context) error { return errors.New("the database at 10.0.0.7 refused the query") })
	e.POST("/bind", func(c echo.Context) error {
		var v []map[string]any
		if err := c.Bind(&v); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, map[string]int{"items": len(v)})
	})
	return e
}

// squeezeApp is app with squeezeecho.Middleware mounted as the package
// documentation says.
func squeezeApp() *echo.Echo {
	return app(func(e *echo.Echo) {
		e.Use(squeezeecho.Middleware(squeeze.MustNew(squeeze.WithMaxDecompressedSize(maxBody))))
	})
}

// exchange is one request and what its answer must be.
type exchange struct {
	name         string
	method, path string
	body         []byte // sent gzip-encoded when not nil
	status       int
	coding       string // the Content-Encoding the answer must have
	want         string // in the decoded body
	wantNot      string // not in the decoded body
	wantVary     bool
}

// Over HTTP/1.1 and HTTP/2, echo's own error responses (an HTTPError's
// JSON, a route that does not exist, an error echo hides as 500) go out
// through squeeze, compressed when long enough and with Vary; a request
// body over the cap is 413 through c.Bind; no decoder's or handler's error
// text reaches the client.
func TestMiddlewareCompressesEchoErrorsAndAnswersBodyErrors(t *testing.T) {
	long, err := json.Marshal(items())
	if err != nil {
		t.Fatal(err)
	}
	exchanges := []exchange{
		{name: "JSON", method: "GET", path: "/json", status: http.StatusOK, coding: squeeze.Zstd, want: `"item 119"`, wantVary: true},
		{name: "an HTTPError", method: "GET", path: "/long-error", status: http.StatusUnprocessableEntity, coding: squeeze.Zstd, want: `"item 119"`, wantVary: true},
		{name: "no route", method: "GET", path: "/missing", status: http.StatusNotFound, want: "Not Found", wantVary: true},
		{name: "a plain error", method: "GET", path: "/failure", status: http.StatusInternalServerError, want: "Internal Server Error", wantNot: "10.0.0.7", wantVary: true},
		{name: "a body over the cap", method: "POST", path: "/bind", body: long, status: http.StatusRequestEntityTooLarge, want: "Request Entity Too Large", wantNot: "http:", wantVary: true},
		{name: "a corrupt body", method: "POST", path: "/bind", body: []byte("not gzip at all"), status: http.StatusBadRequest, want: "Bad Request", wantNot: "gzip", wantVary: true},
		{name: "a valid body", method: "POST", path: "/bind", body: []byte(`[{"id":1},{"id":2}]`), status: http.StatusOK, want: `{"items":2}`, wantVary: true},
	}
	for _, proto := range testtool.Protocols() {
		srv, client := testtool.StartServer(t, proto.Name, proto.Major, squeezeApp(), true)
		for _, x := range exchanges {
			t.Run(proto.Name+" "+x.name, func(t *testing.T) {
				var body io.Reader
				if x.body != nil {
					raw := x.body
					if x.name != "a corrupt body" {
						raw = testtool.Encode(t, squeeze.Gzip, x.body)
					}
					body = bytes.NewReader(raw)
				}
				r, err := http.NewRequestWithContext(t.Context(), x.method, srv.URL+x.path, body)
				if err != nil {
					t.Fatal(err)
				}
				r.Header.Set("Accept-Encoding", "zstd, gzip")
				if body != nil {
					r.Header.Set("Content-Encoding", squeeze.Gzip)
					r.Header.Set("Content-Type", echo.MIMEApplicationJSON)
				}
				res, raw := testtool.Do(t, client, r)
				ce := res.Header.Get("Content-Encoding")
				got := testtool.Decode(t, ce, raw)
				if res.StatusCode != x.status || ce != x.coding {
					t.Errorf("%d with Content-Encoding %q, want %d with %q; body %.200q", res.StatusCode, ce, x.status, x.coding, got)
				}
				if x.want != "" && !strings.Contains(string(got), x.want) {
					t.Errorf("the body %.200q lacks %q", got, x.want)
				}
				if x.wantNot != "" && strings.Contains(string(got), x.wantNot) {
					t.Errorf("the body %.200q tells the client %q", got, x.wantNot)
				}
				if vary := strings.Join(res.Header.Values("Vary"), ", "); x.wantVary != strings.Contains(vary, "Accept-Encoding") {
					t.Errorf("Vary %q, want Accept-Encoding in it: %v", vary, x.wantVary)
				}
			})
		}
	}
}

// Over HTTP/1.1 and HTTP/2, an event the handler flushes reaches the client,
// compressed, before the handler sends the next one; the middlewares
// outside see the status squeeze sent.
func TestMiddlewareFlushesEachEvent(t *testing.T) {
	for _, proto := range testtool.Protocols() {
		t.Run(proto.Name, func(t *testing.T) {
			read := make(chan struct{})
			status := make(chan int, 1)
			e := echo.New()
			e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
				return func(c echo.Context) error {
					err := next(c)
					status <- c.Response().Status
					return err
				}
			})
			e.Use(squeezeecho.Middleware(nil))
			e.GET("/events", func(c echo.Context) error {
				c.Response().Header().Set(echo.HeaderContentType, "text/event-stream")
				for i := range 3 {
					fmt.Fprintf(c.Response(), "data: %d\n\n", i)
					c.Response().Flush()
					select {
					case <-read: // the client has decoded the event
					case <-c.Request().Context().Done():
						return nil
					}
				}
				return nil
			})
			srv, client := testtool.StartServer(t, proto.Name, proto.Major, e, true)
			lines := testtool.OpenStream(t, client, srv.URL+"/events", squeeze.Gzip)
			for i := range 3 {
				want := fmt.Sprintf("data: %d\n\n", i)
				if got, err := testtool.ReadEvent(lines); got != want {
					t.Fatalf("event %d: read %q (%v), want %q", i, got, err, want)
				}
				read <- struct{}{}
			}
			if got := <-status; got != http.StatusOK {
				t.Errorf("the middleware outside saw status %d, want 200", got)
			}
		})
	}
}

// A request to switch protocols, which squeeze hands on with the writer it
// got, reaches the chain and its answer, as do the requests squeeze
// encodes, through the same Middleware.
func TestMiddlewareServesUpgradeRequests(t *testing.T) {
	e := echo.New()
	e.Use(squeezeecho.Middleware(nil))
	e.GET("/ws", func(c echo.Context) error {
		return c.String(http.StatusTeapot, strings.Repeat("not a websocket; ", 200))
	})
	for _, upgrade := range []bool{true, false} {
		req := httptest.NewRequest(http.MethodGet, "/ws", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		if upgrade {
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "websocket")
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		want := map[bool]string{true: "", false: squeeze.Gzip}[upgrade]
		if rec.Code != http.StatusTeapot || rec.Header().Get("Content-Encoding") != want {
			t.Errorf("upgrade %v: %d with Content-Encoding %q, want 418 with %q", upgrade, rec.Code, rec.Header().Get("Content-Encoding"), want)
		}
	}
}

// A secret an echo handler writes with squeeze.WriteSecret goes through
// echo's Response as a Write would: it commits the Response (its before
// hooks run, the status goes out), counts in its Size for the loggers
// outside, and is in the body as it is (isolated).
func TestWriteSecretThroughEchoCountsInTheResponse(t *testing.T) {
	const token = "Zk3q9XbT0wPzLm4sYc7eRv2nHa8uJd1g"
	page := strings.Repeat("<p>Your account.</p>", 300)
	e := echo.New()
	e.Use(squeezeecho.Middleware(nil))
	type seen struct {
		committed, hooked bool
		size              int64
	}
	got := make(chan seen, 1)
	e.GET("/account", func(c echo.Context) error {
		c.Response().Header().Set("Content-Type", "text/html")
		var s seen
		c.Response().Before(func() { s.hooked = true })
		if _, err := squeeze.WriteSecret(c.Response(), []byte(token)); err != nil {
			return err
		}
		s.committed = c.Response().Committed
		_, err := c.Response().Write([]byte(page))
		s.size = c.Response().Size
		got <- s
		return err
	})
	req := httptest.NewRequest(http.MethodGet, "/account", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	s := <-got
	if !s.committed || !s.hooked || s.size != int64(len(token)+len(page)) {
		t.Errorf("after the secret, echo's Response committed %v, its before hooks run %v; Size %d, want %d", s.committed, s.hooked, s.size, len(token)+len(page))
	}
	if body := testtool.Decode(t, rec.Header().Get("Content-Encoding"), rec.Body.Bytes()); string(body) != token+page || rec.Header().Get("Content-Encoding") != "gzip" {
		t.Errorf("%q, %d bytes; want gzip, the token and the page", rec.Header().Get("Content-Encoding"), len(body))
	}
	if !bytes.Contains(rec.Body.Bytes(), []byte(token)) {
		t.Error("the token is not in a segment of its own")
	}
}
