package squeeze_test

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/squeezehttp/squeeze"
)

// csrfPage is a page that reflects a search query next to a CSRF token,
// what BREACH attacks. The template is parsed once; TemplateSecret gets
// the response writer with the data of each request.
var csrfPage = template.Must(template.New("page").
	Funcs(template.FuncMap{"secret": squeeze.TemplateSecret}).
	Parse(`<!doctype html><title>Transfer</title>
<form method="post"><input type="hidden" name="csrf" value="{{secret .W .CSRF}}">
<input name="amount"><button>Send</button></form>
<p>You searched for {{.Query}}</p>
{{.Footer}}`))

// A CSRF token marked with TemplateSecret goes out in a compression
// context of its own: stored as it is between independently compressed
// segments, so the length of the response says nothing of how well the
// reflected query matched it. A client that accepts br, which cannot
// isolate it, gets the page in a coding that can.
func ExampleTemplateSecret() {
	h := squeeze.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw := make([]byte, 24)
		_, _ = rand.Read(raw)
		token := base64.RawURLEncoding.EncodeToString(raw) // letters, digits, - and _
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		err := csrfPage.Execute(w, struct {
			W           http.ResponseWriter
			CSRF, Query string
			Footer      string
		}{w, token, r.URL.Query().Get("q"), strings.Repeat("All rights reserved. ", 80)})
		if err != nil {
			log.Print(err)
		}
	}))

	req := httptest.NewRequest("GET", "/transfer?q=token", nil)
	req.Header.Set("Accept-Encoding", "br, gzip")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	zr, err := gzip.NewReader(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		log.Fatal(err)
	}
	page, _ := io.ReadAll(zr)
	i := bytes.Index(page, []byte(`value="`)) + len(`value="`)
	token := page[i : i+32]
	fmt.Println("Content-Encoding:", rec.Header().Get("Content-Encoding"))
	fmt.Println("the token is stored as it is:", bytes.Contains(rec.Body.Bytes(), token))
	// Output:
	// Content-Encoding: gzip
	// the token is stored as it is: true
}

// WriteSecret writes a secret from a handler; without squeeze in the
// chain it writes it plainly.
func ExampleWriteSecret() {
	h := squeeze.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<p>You searched for %s</p>%s", r.URL.Query().Get("q"), strings.Repeat("<p>Results.</p>", 100))
		io.WriteString(w, `<meta name="csrf-token" content="`)
		if _, err := squeeze.WriteSecret(w, []byte("8f1c2a9e7b3d4c5f")); err != nil {
			log.Print(err) // ErrSecretNotIsolated: the response went out in br already
		}
		io.WriteString(w, `">`)
	}))
	req := httptest.NewRequest("GET", "/?q=8f1c", nil)
	req.Header.Set("Accept-Encoding", "zstd")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	fmt.Println("Content-Encoding:", rec.Header().Get("Content-Encoding"))
	fmt.Println("the token is stored as it is:", bytes.Contains(rec.Body.Bytes(), []byte("8f1c2a9e7b3d4c5f")))
	// Output:
	// Content-Encoding: zstd
	// the token is stored as it is: true
}
