package squeezegin_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/squeezehttp/squeeze"
	squeezegin "github.com/squeezehttp/squeeze/gin"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// A gin handler that sets its status and writes a secret first, through
// gin's writer: the status it set goes out, the secret is in the body as
// it is (isolated) and counts in the writer's Size, over HTTP/1.1 and
// HTTP/2.
func TestWriteSecretThroughGinKeepsTheStatusAndTheSize(t *testing.T) {
	const token = "Zk3q9XbT0wPzLm4sYc7eRv2nHa8uJd1g"
	page := strings.Repeat("<p>Your account.</p>", 300)
	gin.SetMode(gin.TestMode)
	r := gin.New()
	r.Use(squeezegin.Middleware(nil))
	size := make(chan int, 4)
	r.GET("/account", func(c *gin.Context) {
		c.Header("Content-Type", "text/html")
		c.Status(http.StatusAccepted)
		if _, err := squeeze.WriteSecret(c.Writer, []byte(token)); err != nil {
			t.Error(err)
		}
		_, _ = c.Writer.WriteString(page)
		size <- c.Writer.Size()
	})
	for _, proto := range testtool.Protocols() {
		srv, client := testtool.StartServer(t, proto.Name, proto.Major, r, true)
		res, raw := testtool.Fetch(t, client, srv.URL+"/account", "gzip")
		got := testtool.Decode(t, res.Header.Get("Content-Encoding"), raw)
		if res.StatusCode != http.StatusAccepted || string(got) != token+page || res.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("%s: %d, %q, %d bytes; want 202, gzip, the token and the page", proto.Name, res.StatusCode, res.Header.Get("Content-Encoding"), len(got))
		}
		if !bytes.Contains(raw, []byte(token)) {
			t.Errorf("%s: the token is not in a segment of its own", proto.Name)
		}
		if n := <-size; n != len(token)+len(page) {
			t.Errorf("%s: gin's Size %d, want %d", proto.Name, n, len(token)+len(page))
		}
	}
}
