// Package bench measures squeeze against the pooled-encoder floor and against
// the incumbent Go compression middlewares (gzhttp, httpcompression, chi,
// gziphandler) on the same machine, in the same run, at the same codec
// settings. It is a separate module so that the peers never become
// dependencies of squeeze itself.
//
// The package holds the pieces the benchmarks share: the corpus of real text,
// a minimal http.ResponseWriter, the implementations under test, and the
// round-trip checks that keep a broken path from producing a figure. The
// benchmarks are in bench_test.go; run.sh runs them and prints the tables.
package bench

import (
	"errors"
	"fmt"
)

// Body is one response body of the corpus.
type Body struct {
	// Name identifies the body in sub-benchmark names, as kind-size
	// ("html-16K").
	Name string
	// ContentType is the media type the handler declares.
	ContentType string
	// Data is the body. It must not be modified.
	Data []byte
}

// Corpus is the real text every benchmark serves: slices of the Go
// specification (HTML), of wasm_exec.js (JavaScript) and of Twitter's status
// JSON from encoding/json's test data, all shipped with every Go toolchain.
type Corpus struct {
	// HTML holds the 2, 16 and 64 KiB prefixes of the Go specification and
	// the whole document (about 290 KiB), smallest first.
	HTML []Body
	// JS and JSON are 16 KiB prefixes of wasm_exec.js and of Twitter's
	// status JSON from encoding/json's test data.
	JS, JSON Body
	// SmallJSON is the 2 KiB prefix of the same JSON: a typical API answer,
	// where a middleware's fixed cost per response shows most.
	SmallJSON Body
}

// All returns every body of the corpus: the HTML sizes, then JS, JSON and
// the small JSON.
func (c *Corpus) All() []Body {
	return append(append([]Body(nil), c.HTML...), c.JS, c.JSON, c.SmallJSON)
}

// Get returns the body called name.
func (c *Corpus) Get(name string) (Body, bool) {
	for _, b := range c.All() {
		if b.Name == name {
			return b, true
		}
	}
	return Body{}, false
}

// NewCorpus slices the corpus out of the whole documents: html is the Go
// specification, js wasm_exec.js and json a JSON document of at least
// 16 KiB (internal/corpus loads all three from the Go toolchain).
func NewCorpus(html, js, json []byte) (*Corpus, error) {
	const htmlType = "text/html; charset=utf-8"
	c := &Corpus{}
	for _, n := range []int{2 << 10, 16 << 10, 64 << 10} {
		if len(html) < 2*n {
			return nil, fmt.Errorf("bench: corpus: the HTML document is only %d bytes", len(html))
		}
		c.HTML = append(c.HTML, Body{Name: fmt.Sprintf("html-%dK", n>>10), ContentType: htmlType, Data: html[:n:n]})
	}
	c.HTML = append(c.HTML, Body{Name: fmt.Sprintf("html-%dK", len(html)>>10), ContentType: htmlType, Data: html})
	if len(js) < 16<<10 || len(json) < 16<<10 {
		return nil, errors.New("bench: corpus: the JS or JSON document is under 16 KiB")
	}
	c.JS = Body{Name: "js-16K", ContentType: "text/javascript; charset=utf-8", Data: js[: 16<<10 : 16<<10]}
	c.JSON = Body{Name: "json-16K", ContentType: "application/json", Data: json[: 16<<10 : 16<<10]}
	c.SmallJSON = Body{Name: "json-2K", ContentType: "application/json", Data: json[: 2<<10 : 2<<10]}
	return c, nil
}
