package squeeze_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/squeezehttp/squeeze"
)

// Eligible content

func TestContentTypeEligibility(t *testing.T) {
	custom := []squeeze.Option{squeeze.WithContentTypes("application/x-custom", "image/*", "application/*+json")}
	tests := []struct {
		name string
		opts []squeeze.Option
		ct   string
		want bool
	}{
		{"html", nil, "text/html", true},
		{"html with charset", nil, "text/html; charset=utf-8", true},
		{"type ignores case", nil, "TEXT/HTML; Charset=UTF-8", true},
		{"css", nil, "text/css", true},
		{"plain text", nil, "text/plain", true},
		{"event stream", nil, "text/event-stream", true},
		{"json", nil, "application/json", true},
		{"problem+json", nil, "application/problem+json", true},
		{"vendor +json", nil, "application/vnd.api+json", true},
		{"javascript", nil, "application/javascript", true},
		{"text/javascript", nil, "text/javascript; charset=utf-8", true},
		{"xml", nil, "application/xml", true},
		{"atom+xml", nil, "application/atom+xml", true},
		{"svg", nil, "image/svg+xml", true},
		{"wasm", nil, "application/wasm", true},
		{"ttf", nil, "font/ttf", true},
		{"otf", nil, "font/otf", true},
		{"png", nil, "image/png", false},
		{"jpeg", nil, "image/jpeg", false},
		{"webp", nil, "image/webp", false},
		{"audio", nil, "audio/mpeg", false},
		{"video", nil, "video/mp4", false},
		{"zip", nil, "application/zip", false},
		{"gzip archive", nil, "application/gzip", false},
		{"woff", nil, "font/woff", false},
		{"woff2", nil, "font/woff2", false},
		{"octet-stream", nil, "application/octet-stream", false},
		{"malformed type", nil, "text", false},
		{"custom list: exact", custom, "application/x-custom", true},
		{"custom list: type wildcard", custom, "image/png", true},
		{"custom list: suffix wildcard", custom, "application/ld+json", true},
		{"custom list replaces defaults", custom, "text/html", false},
		{"custom list: suffix needs a prefix", custom, "application/json", false},
		{"star suffix pattern", []squeeze.Option{squeeze.WithContentTypes("*/*+json")}, "text/x-thing+json", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := textBody(5, 4000)
			m := newMiddleware(t, tt.opts...)
			res, raw := record(m.Handler(writeText(tt.ct, body, 0)), request("GET", "gzip"))
			got := res.Header.Get("Content-Encoding") == squeeze.Gzip
			if got != tt.want {
				t.Errorf("Content-Type %q: compressed = %v, want %v", tt.ct, got, tt.want)
			}
			if tt.want && countFold(varyTokens(res.Header), "Accept-Encoding") != 1 {
				t.Errorf("Vary = %q, want Accept-Encoding", res.Header.Values("Vary"))
			}
			if ct := res.Header.Get("Content-Type"); ct != tt.ct {
				t.Errorf("Content-Type changed to %q", ct)
			}
			checkBody(t, res.Header, raw, body)
		})
	}
}

// Without a Content-Type the middleware sniffs the plain bytes, and the type
// must be set before compressed bytes go out (net/http does not sniff a
// response that has a Content-Encoding).
func TestSniffsMissingContentType(t *testing.T) {
	html := append([]byte("<!DOCTYPE html><html><body>"), textBody(6, 100000)...)
	png := append([]byte("\x89PNG\r\n\x1a\n"), textBody(7, 4000)...)
	tests := []struct {
		name   string
		body   []byte
		wantCT string
		wantCE string
	}{
		{"buffered html", html[:5000], "text/html; charset=utf-8", squeeze.Zstd},
		{"streamed html", html, "text/html; charset=utf-8", squeeze.Zstd},
		{"plain text", textBody(8, 5000), "text/plain; charset=utf-8", squeeze.Zstd},
		{"png is not compressed", png, "image/png", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newMiddleware(t).Handler(writeText("", tt.body, 1000))
			forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				res, raw := fetch(t, c, srv.URL, "zstd")
				if got := res.Header.Get("Content-Type"); got != tt.wantCT {
					t.Errorf("over a server: Content-Type = %q, want %q", got, tt.wantCT)
				}
				if got := res.Header.Get("Content-Encoding"); got != tt.wantCE {
					t.Errorf("over a server: Content-Encoding = %q, want %q", got, tt.wantCE)
				}
				checkBody(t, res.Header, raw, tt.body)
			})

			res, raw := record(h, request("GET", "zstd"))
			if got := res.Header.Get("Content-Type"); got != tt.wantCT {
				t.Errorf("recorder: Content-Type = %q, want %q", got, tt.wantCT)
			}
			checkBody(t, res.Header, raw, tt.body)
		})
	}
}

// WithoutContentTypes excludes types from the list to compress, whichever
// the order of the options, and leaves the others compressed.
func TestWithoutContentTypesExcludes(t *testing.T) {
	body := textBody(3, 4096)
	for _, opts := range [][]squeeze.Option{
		{squeeze.WithContentTypes("*/*"), squeeze.WithoutContentTypes("image/*", "application/zip", "*/*+json")},
		{squeeze.WithoutContentTypes("image/*", "application/zip", "*/*+json"), squeeze.WithContentTypes("*/*")},
	} {
		m := newMiddleware(t, opts...)
		for ct, want := range map[string]string{
			"application/octet-stream":           "gzip",
			"text/html; charset=utf-8":           "gzip",
			"video/mp4":                          "gzip",
			"image/png":                          "",
			"IMAGE/BMP":                          "",
			"application/zip":                    "",
			"application/ld+json; charset=utf-8": "",
		} {
			rec := serve(m.Handler(writeText(ct, body, 0)), http.MethodGet, "gzip")
			if got := rec.Header().Get("Content-Encoding"); got != want {
				t.Errorf("%s: Content-Encoding %q, want %q", ct, got, want)
			}
			if got := m.Compresses(ct); got != (want != "") {
				t.Errorf("Compresses(%q) = %v", ct, got)
			}
		}
	}
}

// The default list names the formats that compress, binary ones among
// them, which gzhttp's exclusion list compresses too; it leaves out
// application/octet-stream, which names no format (downloads), and formats
// compressed inside.
func TestDefaultContentTypesCoverCompressibleFormats(t *testing.T) {
	body := textBody(4, 4096)
	h := squeeze.Handler
	for ct, want := range map[string]string{
		"application/x-protobuf":   "gzip",
		"application/protobuf":     "gzip",
		"application/msgpack":      "gzip",
		"application/x-msgpack":    "gzip",
		"application/vnd.msgpack":  "gzip",
		"text/csv":                 "gzip",
		"application/csv":          "gzip",
		"application/sql":          "gzip",
		"application/graphql":      "gzip",
		"image/bmp":                "gzip",
		"image/x-icon":             "gzip",
		"image/vnd.microsoft.icon": "gzip",
		"application/octet-stream": "",
		"image/png":                "",
		"font/woff2":               "",
		"application/zip":          "",
	} {
		rec := serve(h(writeText(ct, body, 0)), http.MethodGet, "gzip")
		if got := rec.Header().Get("Content-Encoding"); got != want {
			t.Errorf("%s: Content-Encoding %q, want %q", ct, got, want)
		}
	}
}

// A missing Content-Type is sniffed from the first 512 bytes whatever the
// pattern of writes, as net/http does (its 2 KiB bufio.Writer fills before
// the chunkWriter sniffs): a page written as "<!DOCTYPE html" and then the
// rest is text/html, whether the second write overflows the buffer or a
// declared Content-Length beyond the buffer has the first write decide.
// Sniffed from fewer bytes it would be text/plain, and the browser would show
// the markup as text.
func TestSniffedContentTypeMatchesNetHTTP(t *testing.T) {
	head := []byte("<!DOCTYPE html")
	rest := append([]byte("><html><body><pre>\n"), textBody(5, 40000)...)
	full := append(append([]byte{}, head...), rest...)
	for _, declare := range []bool{false, true} {
		name := "undeclared length, second write overflows the buffer"
		if declare {
			name = "declared length beyond the buffer, sniffed on the first write"
		}
		t.Run(name, func(t *testing.T) {
			inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if declare {
					w.Header().Set("Content-Length", strconv.Itoa(len(full)))
				}
				_, _ = w.Write(head)
				_, _ = w.Write(rest)
			})
			// What net/http itself says for this handler.
			plainSrv := httptest.NewServer(inner)
			defer plainSrv.Close()
			want, _ := fetch(t, plainSrv.Client(), plainSrv.URL, "")
			if ct := want.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Fatalf("net/http alone sniffed %q", ct)
			}
			forEachProtocol(t, newMiddleware(t).Handler(inner), func(t *testing.T, srv *httptest.Server, c *http.Client) {
				res, raw := fetch(t, c, srv.URL, "gzip")
				if got := res.Header.Get("Content-Type"); got != want.Header.Get("Content-Type") {
					t.Errorf("Content-Type %q, net/http alone sends %q", got, want.Header.Get("Content-Type"))
				}
				checkBody(t, res.Header, raw, full)
			})
		})
	}
}
