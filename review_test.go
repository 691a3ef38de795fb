package squeeze_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// Adversarial review of the response-writer core. Every test here failed
// against the code it was written for; each comment says what the bug is
// and what net/http (or the RFC) does instead.

// stutterReader hands out its data one byte at a time and answers every
// other Read with (0, nil), which io.Reader allows ("discouraged", not
// forbidden): a pipe or a decoder that has nothing ready yet.
type stutterReader struct {
	data  []byte
	empty bool
}

func (s *stutterReader) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	if s.empty = !s.empty; s.empty {
		return 0, nil
	}
	p[0] = s.data[0]
	s.data = s.data[1:]
	return 1, nil
}

// Bug: fill (middleware.go, the `for empty := 0; ...` loop) counts every
// (0, nil) Read of the whole copy and never resets the count when a Read
// makes progress, so after 100 scattered empty reads it gives up with
// io.ErrNoProgress and the response goes out cut short. io.Copy, and
// net/http's own response.ReadFrom (io.CopyBuffer through a LimitReader),
// simply read again: a reader that keeps making progress copies in full.
// bufio's ErrNoProgress rule counts consecutive empty reads only.
func TestReviewReadFromToleratesScatteredEmptyReads(t *testing.T) {
	body := textBody(3, 600)
	var copyErr error
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, copyErr = io.Copy(w, &stutterReader{data: body})
	}))
	res, raw := record(h, request("GET", "zstd"))
	if copyErr != nil {
		t.Errorf("io.Copy onto the writer: %v, want nil (the reader made progress on every other Read)", copyErr)
	}
	checkBody(t, res.Header, raw, body)
}

// Bug: Hijack (middleware.go:586-591) commits a response whose status was
// chosen to statePlain and sends the header before it knows whether the
// hijack works. When it does not (HTTP/2, or any writer without Hijacker:
// the wrapper always has the method, so `w.(http.Hijacker)` is true even
// there), the bytes held back in the buffer are never written: later
// writes go straight to the underlying writer in the plain state and
// finish just returns the buffer to the pool. Without the middleware, a
// failed Hijack changes nothing and every written byte is sent.
func TestReviewFailedHijackLosesNoBufferedBytes(t *testing.T) {
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "hello ")
		if _, _, err := http.NewResponseController(w).Hijack(); err == nil {
			t.Error("Hijack on a ResponseRecorder succeeded")
			return
		}
		_, _ = io.WriteString(w, "world")
	}))
	res, raw := record(h, request("GET", "zstd"))
	checkBody(t, res.Header, raw, []byte("hello world"))
}

// The same over HTTP/2, where Hijack is not supported: a handler that tries
// it (a WebSocket library probing) and falls back to streaming loses what
// it wrote before.
func TestReviewFailedHijackOverHTTP2LosesNoBufferedBytes(t *testing.T) {
	body := textBody(4, 3000)
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(body[:1000])
		if r.ProtoMajor == 2 {
			if _, _, err := http.NewResponseController(w).Hijack(); err == nil {
				t.Error("Hijack over HTTP/2 succeeded")
				return
			}
		}
		_, _ = w.Write(body[1000:])
	}))
	srv, c := startServer(t, protocol{"HTTP/2", 2}, h, false)
	res, raw := fetch(t, c, srv.URL, "zstd")
	checkBody(t, res.Header, raw, body)
}

// Bug: advance (middleware.go:357-367) sniffs a missing Content-Type from
// whatever is at hand at the moment of deciding: the bytes buffered so far
// (however few) when a write overflows the buffer, or the first write alone
// when a declared Content-Length is longer than the buffer (need ==
// needBytes). net/http sniffs the first 512 bytes whatever the pattern of
// writes (its 2 KiB bufio.Writer fills before the chunkWriter sniffs), so a
// page written as "<!DOCTYPE html" and then the rest is text/html there but
// text/plain through squeeze: the browser shows the markup as text.
func TestReviewSniffedContentTypeMatchesNetHTTP(t *testing.T) {
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

// Bug: readFields (decide.go) looks only at the canonical key
// "Content-Encoding", so a handler that assigns h["content-encoding"]
// (as it may assign h["ETag"], which etag.go deliberately honours) gets its
// already-encoded body compressed a second time, and the response carries
// two Content-Encoding lines in an order no client decodes. net/http sends
// the field as written (names are case-insensitive, RFC 9110 §5.1) and the
// body unchanged. FIELD-NOTES: "Double compression" is an incumbent bug
// squeeze must not have.
func TestReviewNonCanonicalContentEncodingIsNotEncodedAgain(t *testing.T) {
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.NoCompression) // stored blocks: zstd would shrink them
	_, _ = zw.Write(textBody(6, 8000))
	_ = zw.Close()
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header()["content-encoding"] = []string{"gzip"} //nolint:staticcheck // the point
		_, _ = w.Write(gz.Bytes())
	}))
	rec := serve(h, "GET", "zstd, gzip")
	if ce := rec.Header()["Content-Encoding"]; len(ce) > 0 {
		t.Errorf("added Content-Encoding %q next to the handler's content-encoding: gzip", ce)
	}
	if !bytes.Equal(rec.Body.Bytes(), gz.Bytes()) {
		t.Errorf("the handler's gzip body was changed: %d bytes, want its %d", rec.Body.Len(), gz.Len())
	}
}

// Bug: ReadFrom's fill (middleware.go) reports the buffer "full" as soon as
// len == cap, without finding out whether the source has ended, and
// ReadFrom then commits at atOverflow: the body streams (chunked, its
// declared Content-Length dropped) although it ended within the buffer.
// The same handler using Write is sent whole with its encoded length, and
// the README promises that for "a handler's declared Content-Length that
// fits in the buffer (http.ServeContent, http.FileServer)". ServeContent
// copies with io.CopyN, which reaches ReadFrom, so a static file of exactly
// the buffer size loses its Content-Length.
func TestReviewServeContentOfExactlyTheBufferSizeHasContentLength(t *testing.T) {
	body := textBody(7, squeeze.DefaultBufferSize)
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "app.js", time.Time{}, bytes.NewReader(body))
	}))
	rec := serve(h, "GET", "zstd")
	if rec.Header().Get("Content-Encoding") != "zstd" {
		t.Fatalf("Content-Encoding %q, want zstd", rec.Header().Get("Content-Encoding"))
	}
	if got, want := rec.Header().Get("Content-Length"), strconv.Itoa(rec.Body.Len()); got != want {
		t.Errorf("Content-Length %q, want %s: a declared length that fits the buffer is sent whole", got, want)
	}
	checkBody(t, rec.Header(), rec.Body.Bytes(), body)
}

// Bug: nextElement (fields.go:21) reads a backslash as the start of a
// quoted-pair. That is right for quoted-strings (Cache-Control) but entity
// tags have no quoted-pair: etagc is %x21 / %x23-7E / obs-text, so `\` is
// an ordinary character (RFC 9110 §8.8.3). A tag ending in a backslash
// swallows the rest of the If-None-Match line in withPlainTags and
// listHasTag, the suffixed tag after it gets no plain form, and the client
// gets a 200 instead of its 304. http.ServeContent's own parser (scanETag)
// reads the same list correctly.
func TestReviewIfNoneMatchListWithBackslashTagStillMatches(t *testing.T) {
	body := textBody(8, 8000)
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"abc"`)
		http.ServeContent(w, r, "a.txt", time.Time{}, bytes.NewReader(body))
	}))
	// The suffixed tag this client holds, after an unrelated tag that ends
	// in a backslash.
	rec := serve(h, "GET", "zstd", "If-None-Match", `"old\", "abc-zstd"`)
	if rec.Code != http.StatusNotModified {
		t.Errorf("status %d, want 304: the list names %q, the tag of the zstd response", rec.Code, `"abc-zstd"`)
	}
	if got := rec.Header().Get("Etag"); rec.Code == http.StatusNotModified && got != `"abc-zstd"` {
		t.Errorf("304 ETag %q, want the one the client named", got)
	}
}

// Bug: with WithMinSize(0) (or 1), a HEAD whose handler declares a length
// below 2 (or writes nothing and declares nothing) is answered with
// Content-Encoding (decide: `cw.head && f.buffered == 0` takes the declared
// length; sendWhole's HEAD branch runs before its `len(body) < 2` no-gain
// check), while the GET of the same resource always goes out plain, since
// no encoding of 0 or 1 bytes is smaller. RFC 9110 §9.3.2: HEAD answers with
// the header fields GET would send; here they are known to differ.
func TestReviewHeadOfATinyBodyMatchesGet(t *testing.T) {
	for _, body := range []string{"", "x"} {
		t.Run(strconv.Itoa(len(body))+" bytes", func(t *testing.T) {
			h := newMiddleware(t, squeeze.WithMinSize(0)).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				http.ServeContent(w, r, "", time.Time{}, strings.NewReader(body))
			}))
			get, head := serve(h, "GET", "zstd"), serve(h, "HEAD", "zstd")
			if g, hd := get.Header().Get("Content-Encoding"), head.Header().Get("Content-Encoding"); g != hd {
				t.Errorf("Content-Encoding: GET %q, HEAD %q", g, hd)
			}
			if g, hd := get.Header().Get("Content-Length"), head.Header().Get("Content-Length"); g != hd {
				t.Errorf("Content-Length: GET %q, HEAD %q", g, hd)
			}
		})
	}
}

// Bug: responseWriter (middleware.go) has no lock, so a goroutine the
// handler left behind can race finish: it passes the `cw.state ==
// stateEncoding` check, then uses cw.enc while finish closes it and gives it
// back to the pool (endStream, releaseEncoder), or after another response
// has taken it. One encoder then runs in two goroutines: the zstd encoder
// panics inside finish (slice bounds out of range in EncodeNoHist), and a
// pooled encoder or buffer can carry the late bytes into another client's
// response. The package promises that a goroutine outliving ServeHTTP gets
// errFinished and "must never be able to write into a later client's
// response"; that needs the state check and the use of the encoder and
// buffer to be atomic with finish (a mutex), not just a state field. Run
// with -race too: every iteration is also a reported data race.
func TestReviewLeftoverGoroutineWritesFailWithoutHarm(t *testing.T) {
	m := newMiddleware(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var panics []string
	stop := make(chan struct{})
	var once sync.Once
	halt := func() { once.Do(func() { close(stop) }) }
	defer wg.Wait()
	defer halt()
	note := func(where string, p any) {
		mu.Lock()
		defer mu.Unlock()
		panics = append(panics, fmt.Sprintf("%s: %v", where, p))
	}
	leaky := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(textBody(1, 40000)) // streaming through an encoder
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					note("leftover goroutine", p)
				}
			}()
			for {
				if _, err := w.Write([]byte("leftover bytes from an earlier response\n")); err != nil {
					return
				}
				select {
				case <-stop:
					note("leftover goroutine", "still writing without an error 2s after its handler returned")
					return
				default:
				}
			}
		}()
	}))
	clean := m.Handler(writeText("text/plain", textBody(2, 40000), 0))
	rounds := 200
	if squeeze.RaceEnabled {
		rounds = 10 // the race detector reports the first round already
	}
	for range rounds {
		func() {
			defer func() {
				if p := recover(); p != nil {
					note("finishing the leaky response", p)
				}
			}()
			record(leaky, request("GET", "zstd"))
		}()
		func() {
			defer func() {
				if p := recover(); p != nil {
					note("an unrelated response", p)
				}
			}()
			res, raw := record(clean, request("GET", "zstd"))
			got, err := testtool.TryDecode(res.Header.Get("Content-Encoding"), raw)
			if err != nil || !bytes.Equal(got, textBody(2, 40000)) {
				note("an unrelated response", fmt.Sprintf("body corrupted (%d bytes, %v)", len(got), err))
			}
		}()
	}
	time.Sleep(2 * time.Second)
	halt()
	wg.Wait()
	unrelated := 0
	for _, p := range panics {
		if strings.HasPrefix(p, "an unrelated response") {
			unrelated++
		}
	}
	if len(panics) > 0 {
		t.Errorf("%d failures (%d of them in unrelated responses), first: %s", len(panics), unrelated, panics[0])
	}
}

// Bug: WriteHeader (middleware.go:278) records any final status without
// checking it, and the underlying WriteHeader runs only when the response
// commits, for a waiting body at the end, inside the deferred finish. net/http
// panics in WriteHeader itself for a code outside 100-999
// (checkWriteHeaderCode), where the handler, or a recovery middleware
// between squeeze and the handler, can catch it; through squeeze the handler
// returns normally and the panic surfaces later, in squeeze's defer, past
// every recovery the application installed inside it.
func TestReviewInvalidStatusPanicsInWriteHeader(t *testing.T) {
	var recovered any
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { recovered = recover() }()
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(1000)
	}))
	var escaped any
	func() {
		defer func() { escaped = recover() }()
		serve(h, "GET", "zstd")
	}()
	if recovered == nil {
		t.Errorf("WriteHeader(1000) did not panic in the handler; the panic escaped from the middleware instead: %v", escaped)
	}
}
