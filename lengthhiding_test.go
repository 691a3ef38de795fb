package squeeze_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// hidingMax is the WithLengthHiding of these tests.
const hidingMax = 32

// paddingRange is how many bytes WithLengthHiding(hidingMax) may add to a
// body in coding: 1 to hidingMax, plus a skippable frame's header for zstd
// and dcz, and for br and dcb the Flush that ends the data on a byte
// boundary; a gzip stream's, at its end, takes 8 bytes more and the Flush
// before it (an empty stored block, 5 bytes).
func paddingRange(coding string, stream bool) (lo, hi int) {
	switch {
	case coding == squeeze.Zstd || coding == squeeze.DCZ:
		return 8, hidingMax + 7
	case coding == squeeze.Brotli || coding == squeeze.DCB:
		return 1, hidingMax + 4
	case stream:
		return 9, hidingMax + 8 + 5
	}
	return 1, hidingMax
}

// pageOf returns a handler that writes body, whole or, when flush is set,
// with a Flush in the middle, which makes it a stream.
func pageOf(body []byte, flush bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if !flush {
			_, _ = w.Write(body)
			return
		}
		_, _ = w.Write(body[:len(body)/2])
		http.NewResponseController(w).Flush()
		_, _ = w.Write(body[len(body)/2:])
	}
}

func TestLengthHidingPadsEachCodingAndKeepsContentLength(t *testing.T) {
	t.Parallel()
	body := textBody(3, 8<<10)
	for _, coding := range []string{squeeze.Gzip, squeeze.Zstd, squeeze.Brotli} {
		for _, stream := range []bool{false, true} {
			name := coding + map[bool]string{false: " whole", true: " stream"}[stream]
			t.Run(name, func(t *testing.T) {
				plain := newMiddleware(t, squeeze.WithEncodings(coding)).Handler(pageOf(body, stream))
				unpadded := serve(plain, http.MethodGet, coding).Body.Bytes()
				h := newMiddleware(t, squeeze.WithEncodings(coding), squeeze.WithLengthHiding(hidingMax)).Handler(pageOf(body, stream))
				forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
					res, raw := fetch(t, c, srv.URL+"/", coding)
					if ce := res.Header.Get("Content-Encoding"); ce != coding {
						t.Fatalf("Content-Encoding = %q, want %s", ce, coding)
					}
					cl := res.Header.Get("Content-Length")
					if !stream && cl != strconv.Itoa(len(raw)) {
						t.Errorf("Content-Length = %q for %d bytes", cl, len(raw))
					}
					if stream && cl != "" {
						t.Errorf("a stream has Content-Length %q", cl)
					}
					lo, hi := paddingRange(coding, stream)
					if extra := len(raw) - len(unpadded); extra < lo || extra > hi {
						t.Errorf("padded body is %d bytes, unpadded %d: %d more, want %d to %d", len(raw), len(unpadded), extra, lo, hi)
					}
					if got := testtool.Decode(t, coding, raw); !bytes.Equal(got, body) {
						t.Errorf("Go's decoder read %d bytes, want %d", len(got), len(body))
					}
					if got := testtool.DecodeCLI(t, coding, raw); !bytes.Equal(got, body) {
						t.Errorf("the reference program read %d bytes, want %d", len(got), len(body))
					}
				})
			})
		}
	}
}

func TestLengthHidingVariesWithContentNotWithRepetition(t *testing.T) {
	t.Parallel()
	for _, coding := range []string{squeeze.Gzip, squeeze.Zstd, squeeze.Brotli} {
		t.Run(coding, func(t *testing.T) {
			t.Parallel()
			m := newMiddleware(t, squeeze.WithEncodings(coding), squeeze.WithLengthHiding(hidingMax))
			plain := newMiddleware(t, squeeze.WithEncodings(coding))
			extras := map[int]bool{}
			for seed := range 16 {
				body := textBody(seed, 4<<10)
				h := m.Handler(pageOf(body, false))
				first := serve(h, http.MethodGet, coding).Body.Bytes()
				if again := serve(h, http.MethodGet, coding).Body.Bytes(); !bytes.Equal(again, first) {
					t.Fatalf("body %d: the same content was padded to %d bytes, then %d", seed, len(first), len(again))
				}
				extras[len(first)-serve(plain.Handler(pageOf(body, false)), http.MethodGet, coding).Body.Len()] = true
			}
			if len(extras) < 4 {
				t.Errorf("16 bodies got %d amounts of padding: %v", len(extras), extras)
			}
		})
	}
}

func TestLengthHidingPadsDeltas(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		size   int
		coding string
	}{
		{"dcz whole", 16 << 10, squeeze.DCZ},
		{"dcz streamed", 200 << 10, squeeze.DCZ},
		{"dcb whole", 16 << 10, squeeze.DCB},
		{"dcb streamed", 200 << 10, squeeze.DCB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v1, v2 := versions(tc.size)
			files := scripts(map[string][]byte{"/js/app.v1.js": v1, "/js/app.v2.js": v2})
			opts := []squeeze.Option{squeeze.WithDictionaryMatch("/js/app.*.js"), squeeze.WithEncodings(tc.coding, squeeze.Zstd)}
			plain := newMiddleware(t, opts...).Handler(files)
			serveAt(plain, "/js/app.v1.js", chromeAE)
			unpadded := serveAt(plain, "/js/app.v2.js", chromeAE, "Available-Dictionary", availableFor(v1)).Body.Len()
			h := newMiddleware(t, append(opts, squeeze.WithLengthHiding(hidingMax))...).Handler(files)
			forEachProtocol(t, h, func(t *testing.T, srv *httptest.Server, c *http.Client) {
				fetch(t, c, srv.URL+"/js/app.v1.js", chromeAE)
				res, raw := fetch(t, c, srv.URL+"/js/app.v2.js", chromeAE, "Available-Dictionary", availableFor(v1))
				if ce := res.Header.Get("Content-Encoding"); ce != tc.coding {
					t.Fatalf("Content-Encoding = %q, want %s", ce, tc.coding)
				}
				decodeDelta(t, res.Header, raw, v1, v2)
				lo, hi := paddingRange(tc.coding, true)
				if extra := len(raw) - unpadded; extra < lo || extra > hi {
					t.Errorf("padded delta is %d bytes, unpadded %d: want %d to %d more", len(raw), unpadded, lo, hi)
				}
				if cl := res.Header.Get("Content-Length"); tc.size < 32<<10 && cl != strconv.Itoa(len(raw)) {
					t.Errorf("Content-Length = %q for %d bytes", cl, len(raw))
				}
			})
		})
	}
}

func TestLengthHidingPadsCacheHitsAsFreshAndStoresUnpadded(t *testing.T) {
	t.Parallel()
	body := textBody(5, 8<<10)
	for _, coding := range []string{squeeze.Gzip, squeeze.Zstd, squeeze.Brotli} {
		t.Run(coding, func(t *testing.T) {
			t.Parallel()
			c, err := squeeze.NewCache(1 << 20)
			if err != nil {
				t.Fatal(err)
			}
			var hits, misses int
			observe := squeeze.WithObserver(squeeze.Observer{Response: func(e squeeze.ResponseInfo) {
				if e.Cached {
					hits++
				} else {
					misses++
				}
			}})
			hiding := newMiddleware(t, squeeze.WithEncodings(coding), squeeze.WithCache(c), squeeze.WithLengthHiding(hidingMax), observe).Handler(pageOf(body, false))
			plain := newMiddleware(t, squeeze.WithEncodings(coding), squeeze.WithCache(c)).Handler(pageOf(body, false))
			fresh := serve(hiding, http.MethodGet, coding).Body.Bytes()
			for range 3 {
				if hit := serve(hiding, http.MethodGet, coding).Body.Bytes(); !bytes.Equal(hit, fresh) {
					t.Fatalf("a later response is %d bytes, the first %d: a hit must be padded as the fresh encoding was", len(hit), len(fresh))
				}
			}
			// A Middleware without length hiding, sharing the Cache, is
			// served what is stored: the encoding without padding.
			stored := serve(plain, http.MethodGet, coding).Body.Bytes()
			uncached := serve(newMiddleware(t, squeeze.WithEncodings(coding)).Handler(pageOf(body, false)), http.MethodGet, coding).Body.Bytes()
			if coding == squeeze.Brotli {
				// br bypasses the Cache under length hiding.
				if hits != 0 {
					t.Errorf("%d br responses came from the Cache under length hiding", hits)
				}
				return
			}
			if hits != 3 {
				t.Errorf("%d of 4 responses came from the Cache, want 3", hits)
			}
			if !bytes.Equal(stored, uncached) {
				t.Errorf("the Cache holds %d bytes, the unpadded encoding is %d", len(stored), len(uncached))
			}
		})
	}
}

func TestWithLengthHidingChecksItsArgument(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts []squeeze.Option
		want string
	}{
		{[]squeeze.Option{squeeze.WithLengthHiding(0)}, "WithLengthHiding(0): the most padding must be 1 to 4096 bytes"},
		{[]squeeze.Option{squeeze.WithLengthHiding(4097)}, "WithLengthHiding(4097)"},
		{[]squeeze.Option{squeeze.WithLengthHiding(16), squeeze.WithEncodings(squeeze.Gzip, squeeze.Deflate)}, "deflate cannot be padded"},
	} {
		if _, err := squeeze.New(tc.opts...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New: %v, want an error with %q", err, tc.want)
		}
	}
}

// hidingSite serves a page in gzip that loads two scripts, one in zstd
// and one in br, and three streams (a script flushed in the middle) in
// gzip, zstd and br, each through a Middleware of its own with length
// hiding; each part marks the page when it ran whole.
func hidingSite(t *testing.T) (http.Handler, []byte) {
	filler := strings.Repeat("/* padding hides the length of what compresses */\n", 60)
	page := []byte(`<!doctype html><html><body><p id="gzip">` + strings.Repeat("gzip page text ", 100) + `</p>
<script src="/zstd.js"></script><script src="/br.js"></script>
<script src="/gzip-stream.js"></script><script src="/zstd-stream.js"></script><script src="/br-stream.js"></script>
<script>document.body.setAttribute("data-gzip", document.getElementById("gzip").textContent.length)</script></body></html>`)
	script := func(name string) []byte {
		return []byte(filler + `document.body.setAttribute("data-` + name + `", "ran");` + "\n" + filler)
	}
	serve := func(coding, ct string, body []byte) http.Handler {
		m := newMiddleware(t, squeeze.WithEncodings(coding), squeeze.WithLengthHiding(hidingMax))
		return m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			_, _ = w.Write(body)
		}))
	}
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", serve(squeeze.Gzip, "text/html", page))
	mux.Handle("GET /zstd.js", serve(squeeze.Zstd, "application/javascript", script("zstd")))
	mux.Handle("GET /br.js", serve(squeeze.Brotli, "application/javascript", script("br")))
	for _, coding := range []string{squeeze.Gzip, squeeze.Zstd, squeeze.Brotli} {
		m := newMiddleware(t, squeeze.WithEncodings(coding), squeeze.WithLengthHiding(hidingMax))
		body := script(coding + "-stream")
		mux.Handle("GET /"+coding+"-stream.js", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/javascript")
			_, _ = w.Write(body[:len(body)/2])
			http.NewResponseController(w).Flush()
			_, _ = w.Write(body[len(body)/2:])
		})))
	}
	return mux, page
}

func TestLengthHidingDecodesInCurl(t *testing.T) {
	t.Parallel()
	curl := testtool.Require(t, "curl")
	body := textBody(9, 8<<10)
	for _, coding := range []string{squeeze.Gzip, squeeze.Zstd, squeeze.Brotli} {
		for _, stream := range []bool{false, true} {
			h := newMiddleware(t, squeeze.WithEncodings(coding), squeeze.WithLengthHiding(hidingMax)).Handler(pageOf(body, stream))
			srv := httptest.NewServer(h)
			out, err := exec.Command(curl, "-sS", "--fail", "--compressed", "-H", "Accept-Encoding: "+coding, srv.URL).Output()
			srv.Close()
			if err != nil || !bytes.Equal(out, body) {
				t.Errorf("%s (stream %v): curl --compressed: %d bytes, %v; want %d", coding, stream, len(out), err, len(body))
			}
		}
	}
}

func TestLengthHidingDecodesInChromium(t *testing.T) {
	t.Parallel()
	chromium := testtool.Require(t, "chromium")
	h, _ := hidingSite(t)
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	dom, err := testtool.DumpDOM(ctx, chromium, t.TempDir(), srv.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`data-gzip="1500"`, `data-zstd="ran"`, `data-br="ran"`, `data-gzip-stream="ran"`, `data-zstd-stream="ran"`, `data-br-stream="ran"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page has no %s: Chromium did not read every padded body\n%.600s", want, dom)
		}
	}
}

// A stream the Cache knows by its strong ETag (CacheTrustedETags) is padded
// on a hit as the fresh stream was, by all of its bytes: as long as it, and
// a stream too (no Content-Length), as its padding is known only at the
// end; zstd's the same bytes, gzip's padding in its header where the fresh
// stream's went at its end.
func TestLengthHidingPadsStreamHitsAsFresh(t *testing.T) {
	t.Parallel()
	body := textBody(6, 64<<10) // past the buffer: a stream
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("ETag", `"v1"`)
		_, _ = w.Write(body)
	})
	for _, coding := range []string{squeeze.Gzip, squeeze.Zstd} {
		t.Run(coding, func(t *testing.T) {
			t.Parallel()
			c, err := squeeze.NewCache(1 << 20)
			if err != nil {
				t.Fatal(err)
			}
			hits := 0
			h := newMiddleware(t, squeeze.WithEncodings(coding), squeeze.WithCache(c, squeeze.CacheTrustedETags()),
				squeeze.WithLengthHiding(hidingMax), squeeze.WithObserver(squeeze.Observer{Response: func(e squeeze.ResponseInfo) {
					if e.Cached {
						hits++
					}
				}})).Handler(handler)
			fresh := serve(h, http.MethodGet, coding).Body.Bytes()
			hit := serve(h, http.MethodGet, coding)
			if hits != 1 {
				t.Fatalf("%d hits, want the second response from the Cache", hits)
			}
			if hit.Body.Len() != len(fresh) || coding == squeeze.Zstd && !bytes.Equal(hit.Body.Bytes(), fresh) {
				t.Errorf("the hit is %d bytes, the fresh stream %d", hit.Body.Len(), len(fresh))
			}
			if cl := hit.Header().Get("Content-Length"); cl != "" {
				t.Errorf("the hit's Content-Length is %q: its padding is known at its end", cl)
			}
			if got := testtool.Decode(t, coding, hit.Body.Bytes()); !bytes.Equal(got, body) {
				t.Errorf("the hit decodes to %d bytes, want %d", len(got), len(body))
			}
		})
	}
}
