package squeeze_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// served is a handler that writes the body at the request's path in
// chunks of 8 KiB, with its Content-Length and the caching headers under
// which a browser keeps a dictionary, as a file server does, and with
// validator (a header field and its value) if it is not empty.
func served(files map[string][]byte, validator ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body := files[r.URL.Path]
		h := w.Header()
		if len(validator) == 2 {
			h.Set(validator[0], validator[1])
		}
		h.Set("Content-Type", "text/javascript")
		h.Set("Cache-Control", "max-age=3600")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		for p := body; len(p) > 0; {
			n := min(len(p), 8<<10)
			if _, err := w.Write(p[:n]); err != nil {
				return
			}
			p = p[n:]
		}
	}
}

// A response on a dictionary path whose body is the one the path sent
// before, a stream past the buffer, allocates nothing near its length: it
// is compared with the dictionary it became, not collected again to be
// remembered. Before, each such response allocated and copied its whole
// body (and hashed it) only to find it held already.
func TestDictionaryPathServedAgainCollectsNoCopy(t *testing.T) {
	skipUnlessAllocsCount(t)
	body := textBody(3, 256<<10)
	h := newMiddleware(t, squeeze.WithDictionaryMatch("/js/*")).Handler(served(map[string][]byte{"/js/app.js": body}))
	req := httptest.NewRequest(http.MethodGet, "/js/app.js", nil)
	req.Header.Set("Accept-Encoding", "zstd")
	w, serve := reusedWriter(h, req)
	serve() // remembered
	if ce, ua := w.h.Get("Content-Encoding"), w.h.Get("Use-As-Dictionary"); ce != "zstd" || ua == "" {
		t.Fatalf("Content-Encoding %q, Use-As-Dictionary %q: want a zstd stream marked as a dictionary", ce, ua)
	}
	_, bytesPer := allocsPerResponse(50, serve)
	t.Logf("%.0f bytes allocated per response of a %d-byte body", bytesPer, len(body))
	if bytesPer > float64(len(body))/8 {
		t.Errorf("a response that sends the body its path sent before allocates %.0f bytes, want under %d (an eighth of the body)", bytesPer, len(body)/8)
	}
	// It is still the dictionary a client holding it names.
	rec := serveAt(h, "/js/app.js", chromeAE, "Available-Dictionary", availableFor(body))
	if ce := rec.Header().Get("Content-Encoding"); ce != squeeze.DCZ {
		t.Fatalf("naming the body served: Content-Encoding %q, want dcz", ce)
	}
	decodeDelta(t, rec.Header(), rec.Body.Bytes(), body, body)
}

// Over HTTP/1.1 and HTTP/2, a body that parts from the one its path sent
// before, at its first byte, in its middle or at its last, or that is of
// another length, is remembered as it is: a client holding it gets the
// next response as a delta against it, and one holding the first still
// does against the first. So does a body within the buffer. A body sent
// under a new ETag or Last-Modified is remembered at once; one sent under
// the same validators as the body before, or none, within
// expectCheckEvery of the last comparison (a second).
func TestDictionaryPathRemembersABodyThatPartsFromTheLast(t *testing.T) {
	for _, size := range []int{20 << 10, 200 << 10} {
		first := textBody(5, size)
		changed := func(at int) []byte {
			b := bytes.Clone(first)
			b[at] ^= 0x20
			return b
		}
		cases := []struct {
			name string
			next []byte
		}{
			{"first byte", changed(0)},
			{"middle", changed(size / 2)},
			{"last byte", changed(size - 1)},
			{"longer", append(bytes.Clone(first), "// one more line\n"...)},
			{"shorter", first[:size-100]},
		}
		validators := []struct {
			name        string
			first, next []string
		}{
			{"ETag", []string{"ETag", `"1"`}, []string{"ETag", `"2"`}},
			{"Last-Modified", []string{"Last-Modified", "Mon, 07 Dec 2026 04:00:00 GMT"}, []string{"Last-Modified", "Mon, 07 Dec 2026 05:00:00 GMT"}},
			{"none", nil, nil},
		}
		for _, p := range testtool.Protocols() {
			for _, v := range validators {
				for _, tc := range cases {
					t.Run(fmt.Sprintf("%s/%d bytes/%s/%s", p.Name, size, v.name, tc.name), func(t *testing.T) {
						// Each case has its own Middleware and server, and
						// the cases without validators wait out a second.
						t.Parallel()
						type version struct {
							body      []byte
							validator []string
						}
						var current atomic.Pointer[version]
						current.Store(&version{first, v.first})
						h := newMiddleware(t, squeeze.WithDictionaryMatch("/js/*")).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
							cur := current.Load()
							served(map[string][]byte{"/js/app.js": cur.body}, cur.validator...)(w, r)
						}))
						srv, c := testtool.StartServer(t, p.Name, p.Major, h, false)
						url := srv.URL + "/js/app.js"
						for range 2 { // remembered, then expected
							if res, _ := fetch(t, c, url, "zstd"); res.Header.Get("Use-As-Dictionary") == "" {
								t.Fatal("the first body is not marked as a dictionary")
							}
						}
						current.Store(&version{tc.next, v.next})
						deadline := time.Now().Add(10 * time.Second)
						for {
							res, raw := fetch(t, c, url, "zstd")
							if res.Header.Get("Use-As-Dictionary") == "" {
								t.Fatal("the next body is not marked as a dictionary")
							}
							checkBody(t, res.Header, raw, tc.next)
							res, raw = fetch(t, c, url, chromeAE, "Available-Dictionary", availableFor(tc.next))
							if ce := res.Header.Get("Content-Encoding"); ce == squeeze.DCZ {
								decodeDelta(t, res.Header, raw, tc.next, tc.next)
								break
							} else if v.first != nil || time.Now().After(deadline) {
								t.Fatalf("naming the next body: Content-Encoding %q, want dcz", ce)
							}
							time.Sleep(50 * time.Millisecond) // within a second, unchanged validators
						}
						res, raw := fetch(t, c, url, chromeAE, "Available-Dictionary", availableFor(first))
						if ce := res.Header.Get("Content-Encoding"); ce != squeeze.DCZ {
							t.Fatalf("naming the first body: Content-Encoding %q, want dcz", ce)
						}
						decodeDelta(t, res.Header, raw, first, tc.next)
					})
				}
			}
		}
	}
}
