//go:build unix

// End-to-end tests with real clients: curl, the reference command-line
// codecs and headless Chromium, against the demo's router on a loopback port.
// Each program is found with testtool.Require, so under CI=true a missing one
// fails the test rather than skipping it.

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// command runs a program to completion, feeding it stdin, and returns its
// standard output. It fails the test if the program fails or runs longer
// than waitLimit.
func command(t *testing.T, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

// response is what curl received: the final status and header, and the body
// as curl wrote it.
type response struct {
	status int
	header http.Header
	body   []byte
}

// curl runs curl with args and returns the final response.
func curl(t *testing.T, args ...string) response {
	t.Helper()
	dir := t.TempDir()
	headers, body := filepath.Join(dir, "headers"), filepath.Join(dir, "body")
	command(t, nil, "curl", append([]string{"-sS", "--max-time", "20", "-D", headers, "-o", body}, args...)...)
	raw, err := os.ReadFile(headers)
	if err != nil {
		t.Fatal(err)
	}
	var res response
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(raw)))
	for res.status < 200 { // skip interim responses such as 100 Continue
		line, err := tp.ReadLine()
		if err != nil {
			t.Fatalf("curl %s: reading the status line: %v\n%s", strings.Join(args, " "), err, raw)
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			t.Fatalf("curl %s: bad status line %q", strings.Join(args, " "), line)
		}
		if res.status, err = strconv.Atoi(fields[1]); err != nil {
			t.Fatalf("curl %s: bad status line %q", strings.Join(args, " "), line)
		}
		h, err := tp.ReadMIMEHeader()
		if err != nil {
			t.Fatalf("curl %s: reading the header: %v\n%s", strings.Join(args, " "), err, raw)
		}
		res.header = http.Header(h)
	}
	if res.body, err = os.ReadFile(body); err != nil && !os.IsNotExist(err) { // no body, no file
		t.Fatal(err)
	}
	return res
}

// curlSupports reports whether this curl can decode coding itself, from the
// features `curl -V` lists.
func curlSupports(t *testing.T, coding string) bool {
	t.Helper()
	feature := map[string]string{squeeze.Zstd: "zstd", squeeze.Brotli: "brotli", squeeze.Gzip: "libz", squeeze.Deflate: "libz"}[coding]
	for line := range strings.Lines(string(command(t, nil, "curl", "-V"))) {
		if rest, ok := strings.CutPrefix(line, "Features:"); ok {
			return slices.Contains(strings.Fields(rest), feature)
		}
	}
	return false
}

// requireCurlDecoder stops the test unless curl decodes coding: it fails
// under CI=true, like testtool.Require, and skips elsewhere.
func requireCurlDecoder(t *testing.T, coding string) {
	t.Helper()
	if curlSupports(t, coding) {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("this curl cannot decode %s (see curl -V); CI needs a curl built with it", coding)
	}
	t.Skipf("this curl cannot decode %s (see curl -V)", coding)
}

// referenceEncoders are the command lines that encode standard input.
var referenceEncoders = map[string][]string{
	squeeze.Zstd:   {"zstd", "-c", "-q"},
	squeeze.Brotli: {"brotli", "-c", "-q", "6"}, // the default, 11, is slow and proves nothing more
	squeeze.Gzip:   {"gzip", "-c"},
}

func TestCurlCompressedDecodesEachOfferedCoding(t *testing.T) {
	testtool.Require(t, "curl")
	srv := startServer(t, time.Millisecond)
	for _, coding := range squeeze.DefaultEncodings() {
		t.Run(coding, func(t *testing.T) {
			requireCurlDecoder(t, coding)
			for _, p := range compressiblePages(t) {
				res := curl(t, "--compressed", "-H", "Accept-Encoding: "+coding, srv.URL+p.path)
				if res.status != http.StatusOK || res.header.Get("Content-Encoding") != coding {
					t.Errorf("GET %s: status %d, Content-Encoding %q; want 200 and %s", p.path, res.status, res.header.Get("Content-Encoding"), coding)
				}
				if !bytes.Equal(res.body, p.body) {
					t.Errorf("GET %s: curl decoded %d bytes that differ from the %d served", p.path, len(res.body), len(p.body))
				}
			}
		})
	}
	t.Run("curl's own Accept-Encoding", func(t *testing.T) {
		// The server prefers the first coding of its list that curl offers.
		var want string
		for _, coding := range squeeze.DefaultEncodings() {
			if curlSupports(t, coding) {
				want = coding
				break
			}
		}
		for _, p := range compressiblePages(t) {
			res := curl(t, "--compressed", srv.URL+p.path)
			if got := res.header.Get("Content-Encoding"); got != want {
				t.Errorf("GET %s: Content-Encoding %q, want %q", p.path, got, want)
			}
			if !bytes.Equal(res.body, p.body) {
				t.Errorf("GET %s: curl decoded %d bytes that differ from the %d served", p.path, len(res.body), len(p.body))
			}
		}
		records := clientCodings(t, srv, "curl/")
		t.Logf("curl sent Accept-Encoding: %s", records["/"].AcceptEncoding)
	})
}

func TestReferenceDecodersReadWhatCurlReceived(t *testing.T) {
	testtool.Require(t, "curl")
	srv := startServer(t, time.Millisecond)
	pages := append(compressiblePages(t), page{"/events?count=3", events(3)})
	for _, coding := range squeeze.DefaultEncodings() {
		t.Run(coding, func(t *testing.T) {
			// The command line that decodes coding independently of the Go
			// codecs; run here through command, bounded by waitLimit.
			name, args, ok := testtool.DecodeCommand(coding)
			if !ok {
				t.Fatalf("no reference program decodes %s", coding)
			}
			testtool.Require(t, name)
			for _, p := range pages {
				res := curl(t, "-H", "Accept-Encoding: "+coding, srv.URL+p.path)
				if got := res.header.Get("Content-Encoding"); got != coding {
					t.Errorf("GET %s: Content-Encoding %q, want %s", p.path, got, coding)
					continue
				}
				if got := command(t, res.body, name, args...); !bytes.Equal(got, p.body) {
					t.Errorf("GET %s: %s decoded %d bytes that differ from the %d served", p.path, name, len(got), len(p.body))
				}
			}
		})
	}
}

func TestCurlStreamsEachEventAsItIsFlushed(t *testing.T) {
	curlPath := testtool.Require(t, "curl")
	// With an hour between events, the first one can only arrive if the
	// flush went through the encoder to the connection.
	srv := startServer(t, time.Hour)
	for _, coding := range squeeze.DefaultEncodings() {
		t.Run(coding, func(t *testing.T) {
			requireCurlDecoder(t, coding)
			ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
			defer cancel()
			cmd := exec.CommandContext(ctx, curlPath, "-sS", "--no-buffer", "--include", "--compressed",
				"-H", "Accept-Encoding: "+coding, srv.URL+"/events")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				cancel()
				_ = cmd.Wait() // killed by cancel: the error says so
			}()
			br := bufio.NewReader(stdout)
			tp := textproto.NewReader(br)
			status, err := tp.ReadLine()
			if err != nil {
				t.Fatalf("reading the status line: %v", err)
			}
			header, err := tp.ReadMIMEHeader()
			if err != nil {
				t.Fatalf("reading the header: %v", err)
			}
			if got := header.Get("Content-Encoding"); got != coding {
				t.Errorf("%s: Content-Encoding %q, want %s", status, got, coding)
			}
			want := events(1)
			if got := readWithin(t, br, len(want), cancel); !bytes.Equal(got, want) {
				t.Errorf("first event = %q, want %q", got, want)
			}
		})
	}
}

func TestCurlUploadsCompressedByCLIToolsAreDecoded(t *testing.T) {
	testtool.Require(t, "curl")
	srv := startServer(t, time.Millisecond)
	sample := uploadSample()
	compress := func(t *testing.T, data []byte, coding string) []byte {
		enc := referenceEncoders[coding]
		testtool.Require(t, enc[0])
		return command(t, data, enc[0], enc[1:]...)
	}
	post := func(t *testing.T, body []byte, headers ...string) response {
		file := filepath.Join(t.TempDir(), "body")
		if err := os.WriteFile(file, body, 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"--data-binary", "@" + file, "-H", "Content-Type: application/octet-stream"}
		for _, h := range headers {
			args = append(args, "-H", h)
		}
		return curl(t, append(args, srv.URL+"/upload")...)
	}

	tests := []struct {
		name           string
		contentCoding  string
		applied        []string // codings applied to the sample, in order
		wantSampleHash bool
	}{
		{"gzip", "gzip", []string{squeeze.Gzip}, true},
		{"x-gzip is gzip", "x-gzip", []string{squeeze.Gzip}, true},
		{"zstd", "zstd", []string{squeeze.Zstd}, true},
		{"br", "br", []string{squeeze.Brotli}, true},
		{"stacked gzip then zstd", "gzip, zstd", []string{squeeze.Gzip, squeeze.Zstd}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := sample
			for _, coding := range tt.applied {
				body = compress(t, body, coding)
			}
			res := post(t, body, "Content-Encoding: "+tt.contentCoding)
			var got struct {
				Bytes  int    `json:"bytes"`
				SHA256 string `json:"sha256"`
			}
			if res.status != http.StatusOK {
				t.Fatalf("status %d, want 200: %s", res.status, res.body)
			}
			if err := json.Unmarshal(res.body, &got); err != nil {
				t.Fatalf("answer %q: %v", res.body, err)
			}
			if got.Bytes != len(sample) || got.SHA256 != sha256Hex(sample) {
				t.Errorf("server decoded %d bytes with sha256 %s, want %d bytes with %s", got.Bytes, got.SHA256, len(sample), sha256Hex(sample))
			}
		})
	}

	t.Run("decoded size over the cap is 413", func(t *testing.T) {
		bomb := compress(t, make([]byte, maxUpload+1), squeeze.Zstd)
		if res := post(t, bomb, "Content-Encoding: zstd"); res.status != http.StatusRequestEntityTooLarge {
			t.Errorf("%d zstd bytes decoding to %d: status %d, want 413: %s", len(bomb), maxUpload+1, res.status, res.body)
		}
	})
	t.Run("corrupt body is 400", func(t *testing.T) {
		gz := compress(t, sample, squeeze.Gzip)
		gz[len(gz)/2] ^= 0xff
		if res := post(t, gz, "Content-Encoding: gzip"); res.status != http.StatusBadRequest {
			t.Errorf("corrupt gzip: status %d, want 400: %s", res.status, res.body)
		}
		if res := post(t, []byte("plain text, not gzip"), "Content-Encoding: gzip"); res.status != http.StatusBadRequest {
			t.Errorf("no gzip header: status %d, want 400: %s", res.status, res.body)
		}
	})
	t.Run("unknown coding is 415 with Accept-Encoding", func(t *testing.T) {
		res := post(t, sample, "Content-Encoding: compress")
		if res.status != http.StatusUnsupportedMediaType {
			t.Errorf("status %d, want 415: %s", res.status, res.body)
		}
		accepted := res.header.Get("Accept-Encoding")
		for _, coding := range []string{squeeze.Zstd, squeeze.Brotli, squeeze.Gzip} {
			if !strings.Contains(accepted, coding) {
				t.Errorf("415 lists Accept-Encoding %q, which lacks %s", accepted, coding)
			}
		}
	})
}

func TestCurlGetsSomeResponsesUncompressed(t *testing.T) {
	testtool.Require(t, "curl")
	srv := startServer(t, time.Millisecond)
	index := embedded(t, "index.html")
	tests := []struct {
		name       string
		args       []string
		wantStatus int
		wantBody   []byte
		wantVary   bool
	}{
		{"page under the minimum size", []string{srv.URL + "/small"}, http.StatusOK, embedded(t, "small.html"), true},
		{"range request", []string{"-r", "0-99", srv.URL + "/"}, http.StatusPartialContent, index[:100], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := curl(t, append([]string{"-H", "Accept-Encoding: zstd, br, gzip"}, tt.args...)...)
			if res.status != tt.wantStatus {
				t.Errorf("status %d, want %d", res.status, tt.wantStatus)
			}
			if got := res.header.Get("Content-Encoding"); got != "" {
				t.Errorf("Content-Encoding %q, want none", got)
			}
			if tt.wantVary && !slices.Contains(res.header.Values("Vary"), "Accept-Encoding") {
				t.Errorf("Vary %q, want Accept-Encoding", res.header.Values("Vary"))
			}
			if tt.wantBody != nil && !bytes.Equal(res.body, tt.wantBody) {
				t.Errorf("body differs from the content served: got %d bytes, want %d", len(res.body), len(tt.wantBody))
			}
		})
	}
}

func TestCurlRevalidatesCompressedResponseWithItsETag(t *testing.T) {
	testtool.Require(t, "curl")
	srv := startServer(t, time.Millisecond)
	url := srv.URL + "/static/app.js"
	plain := curl(t, "-H", "Accept-Encoding: identity", url).header.Get("ETag")
	for _, coding := range squeeze.DefaultEncodings() {
		t.Run(coding, func(t *testing.T) {
			first := curl(t, "-H", "Accept-Encoding: "+coding, url)
			etag := first.header.Get("ETag")
			if first.header.Get("Content-Encoding") != coding || etag == "" || etag == plain {
				t.Fatalf("Content-Encoding %q, ETag %q; want %s and a tag other than the plain %s",
					first.header.Get("Content-Encoding"), etag, coding, plain)
			}
			again := curl(t, "-H", "Accept-Encoding: "+coding, "-H", "If-None-Match: "+etag, url)
			if again.status != http.StatusNotModified || again.header.Get("ETag") != etag {
				t.Errorf("If-None-Match %s: status %d, ETag %q; want 304 with the same tag", etag, again.status, again.header.Get("ETag"))
			}
			if got := again.header.Get("Content-Encoding"); got != "" {
				t.Errorf("304 carries Content-Encoding %q", got)
			}
			// HEAD answers with the GET's fields, so a HEAD revalidates
			// with the GET's tag too (RFC 9110 §9.3.2).
			head := curl(t, "-I", "-H", "Accept-Encoding: "+coding, url)
			if head.header.Get("Content-Encoding") != coding || head.header.Get("ETag") != etag {
				t.Errorf("HEAD: Content-Encoding %q, ETag %q; want the GET's %s, %s",
					head.header.Get("Content-Encoding"), head.header.Get("ETag"), coding, etag)
			}
			headAgain := curl(t, "-I", "-H", "Accept-Encoding: "+coding, "-H", "If-None-Match: "+etag, url)
			if headAgain.status != http.StatusNotModified {
				t.Errorf("conditional HEAD with the GET's tag: status %d, want 304", headAgain.status)
			}
		})
	}
}

// dumpDOM loads url in headless Chromium and returns the DOM once the page's
// scripts have run. No browser process outlives the call.
func dumpDOM(t *testing.T, url string) string {
	t.Helper()
	chromium := testtool.Require(t, "chromium")
	ctx, cancel := context.WithTimeout(t.Context(), 2*waitLimit)
	defer cancel()
	dom, err := testtool.DumpDOM(ctx, chromium, t.TempDir(), url)
	if err != nil {
		t.Fatal(err)
	}
	return dom
}

// element returns the start tag of the element with the given id in dom.
func element(t *testing.T, dom, id string) string {
	t.Helper()
	tag := regexp.MustCompile(`<[a-z]+ id="` + regexp.QuoteMeta(id) + `"[^>]*>`).FindString(dom)
	if tag == "" {
		t.Fatalf("no element with id %q in the DOM:\n%s", id, dom)
	}
	return tag
}

// attr returns the value of the attribute name in a start tag.
func attr(tag, name string) string {
	m := regexp.MustCompile(`\s` + regexp.QuoteMeta(name) + `="([^"]*)"`).FindStringSubmatch(tag)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

func TestChromiumDecodesPageScriptStylesheetAPIAndEvents(t *testing.T) {
	srv := startServer(t, 20*time.Millisecond)
	const nEvents = 3
	dom := dumpDOM(t, srv.URL+"/?events="+strconv.Itoa(nEvents))

	if tag := regexp.MustCompile(`<body[^>]*>`).FindString(dom); attr(tag, "data-done") != "true" || attr(tag, "data-stylesheet") != "loaded" {
		t.Fatalf("the page's script did not finish or the stylesheet did not apply: %s\nDOM:\n%s", tag, dom)
	}

	products, err := json.Marshal(catalog())
	if err != nil {
		t.Fatal(err)
	}
	api := element(t, dom, "api-result")
	if attr(api, "data-status") != "200" || attr(api, "data-bytes") != strconv.Itoa(len(products)) || attr(api, "data-sha256") != sha256Hex(products) {
		t.Errorf("the browser decoded /api/products as %s, want %d bytes with sha256 %s", api, len(products), sha256Hex(products))
	}

	list := regexp.MustCompile(`(?s)<ol id="events"[^>]*>(.*?)</ol>`).FindStringSubmatch(dom)
	var got []string
	if list != nil {
		for _, m := range regexp.MustCompile(`<li>(.*?)</li>`).FindAllStringSubmatch(list[1], -1) {
			got = append(got, html.UnescapeString(m[1]))
		}
	}
	var want []string
	for seq := 1; seq <= nEvents; seq++ {
		data, _ := strings.CutPrefix(strings.Split(event(seq), "\n")[1], "data: ")
		want = append(want, data)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the browser received events %q, want %q", got, want)
	}

	sample := uploadSample()
	up := element(t, dom, "upload-result")
	if attr(up, "data-status") != "200" || attr(up, "data-bytes") != strconv.Itoa(len(sample)) || attr(up, "data-sha256") != sha256Hex(sample) {
		t.Errorf("the server decoded the browser's gzip upload as %s, want %d bytes with sha256 %s", up, len(sample), sha256Hex(sample))
	}

	assets := map[string][]byte{"/small": embedded(t, "small.html")}
	for _, p := range compressiblePages(t) {
		assets[p.path] = p.body
	}
	delete(assets, "/api/products") // checked above
	for _, m := range regexp.MustCompile(`<li data-path="[^"]*"[^>]*>`).FindAllString(dom, -1) {
		path := attr(m, "data-path")
		want, ok := assets[path]
		if !ok {
			t.Errorf("unexpected asset %s", m)
			continue
		}
		delete(assets, path)
		if attr(m, "data-bytes") != strconv.Itoa(len(want)) || attr(m, "data-sha256") != sha256Hex(want) {
			t.Errorf("the browser decoded %s as %s, want %d bytes with sha256 %s", path, m, len(want), sha256Hex(want))
		}
	}
	for path := range assets {
		t.Errorf("the page did not report fetching %s", path)
	}

	records := clientCodings(t, srv, "Chrome")
	t.Logf("Chromium sent Accept-Encoding: %q", records["/"].AcceptEncoding)
	for _, path := range []string{"/", "/static/app.js", "/static/app.css", "/api/products", "/events"} {
		rec := records[path]
		if rec.ContentEncoding != squeeze.Zstd && rec.ContentEncoding != squeeze.Brotli {
			t.Errorf("%s went to Chromium with Content-Encoding %q, want zstd or br (record %+v)", path, rec.ContentEncoding, rec)
		}
		if !strings.Contains(rec.AcceptEncoding, rec.ContentEncoding) {
			t.Errorf("%s used %q, which Chromium did not offer in %q", path, rec.ContentEncoding, rec.AcceptEncoding)
		}
	}
	if rec := records["/small"]; rec.ContentEncoding != "" {
		t.Errorf("/small went to Chromium with Content-Encoding %q, want none", rec.ContentEncoding)
	}
}

// chartRows returns the rows of the SVG chart with the given id, each row's
// start tag keyed by its data-key, failing unless the chart was drawn.
func chartRows(t *testing.T, dom, id string) map[string]string {
	t.Helper()
	if state := attr(element(t, dom, id), "data-state"); state != "done" {
		t.Fatalf("chart %s is in state %q, want done", id, state)
	}
	svg := regexp.MustCompile(`(?s)<svg id="` + regexp.QuoteMeta(id) + `"[^>]*>(.*?)</svg>`).FindStringSubmatch(dom)
	rows := map[string]string{}
	if svg != nil {
		for _, tag := range regexp.MustCompile(`<g class="row"[^>]*>`).FindAllString(svg[1], -1) {
			rows[attr(tag, "data-key")] = tag
		}
	}
	return rows
}

// intAttr returns an attribute of tag as an integer, or -1.
func intAttr(tag, name string) int {
	n, err := strconv.Atoi(attr(tag, name))
	if err != nil {
		return -1
	}
	return n
}

func TestChromiumChartsPlainAgainstWireBytes(t *testing.T) {
	srv := startServer(t, 20*time.Millisecond)
	dom := dumpDOM(t, srv.URL+"/?events=2")

	// What the browser measured: each compressible resource came encoded,
	// smaller on the wire than decoded; the small page came plain.
	resources := chartRows(t, dom, "resource-chart")
	for _, p := range compressiblePages(t) {
		row, ok := resources[p.path]
		if !ok {
			t.Errorf("the resource chart has no row for %s; rows: %v", p.path, resources)
			continue
		}
		plain, wire, coding := intAttr(row, "data-plain"), intAttr(row, "data-wire"), attr(row, "data-coding")
		if plain != len(p.body) || wire <= 0 || wire >= plain || (coding != squeeze.Zstd && coding != squeeze.Brotli) {
			t.Errorf("%s charted as %s; want %d plain bytes, fewer on the wire, zstd or br", p.path, row, len(p.body))
		}
	}
	small := len(embedded(t, "small.html"))
	if row := resources["/small"]; intAttr(row, "data-plain") != small || intAttr(row, "data-wire") != small || attr(row, "data-coding") != "" {
		t.Errorf("/small charted as %q; want %d bytes both ways and no coding", row, small)
	}

	// The same, summed per coding.
	codings := chartRows(t, dom, "coding-chart")
	if len(codings) == 0 {
		t.Errorf("the per-coding chart has no rows")
	}
	for key, row := range codings {
		if plain, wire := intAttr(row, "data-plain"), intAttr(row, "data-wire"); plain <= 0 || wire <= 0 || (key != "plain") != (wire < plain) {
			t.Errorf("coding %s charted as %s; want encoded codings smaller on the wire, plain equal", key, row)
		}
	}

	// What the server counted: at least the compressible resources, encoded,
	// the small page plain for being too small, and the browser's upload.
	summary := element(t, dom, "server-summary")
	if n := intAttr(summary, "data-compressed"); n < len(compressiblePages(t)) ||
		intAttr(summary, "data-compressed-bytes") >= intAttr(summary, "data-uncompressed-bytes") {
		t.Errorf("the server summary is %s; want at least %d responses compressed, to fewer bytes", summary, len(compressiblePages(t)))
	}
	server := chartRows(t, dom, "server-chart")
	encoded := 0
	for key, row := range server {
		if strings.HasPrefix(key, "compressed:") {
			encoded += intAttr(row, "data-wire")
		}
	}
	if encoded <= 0 || server["plain:too_small"] == "" || server["decoded:gzip"] == "" {
		t.Errorf("the server chart lacks compressed, too-small or decoded rows: %v", server)
	}
	if up := server["decoded:gzip"]; intAttr(up, "data-plain") != len(uploadSample()) {
		t.Errorf("the server charted the upload as %s, want %d decoded bytes", up, len(uploadSample()))
	}
}
