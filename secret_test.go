package squeeze_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// secretToken is the token the tests' pages mark.
const secretToken = "Zk3q9XbT0wPzLm4sYc7eRv2nHa8uJd1g"

// secretPage is how a handler writes a page holding a token: which API
// marks it, and where the response stands when it does.
type secretPage struct {
	name string
	// late is set for a page that marks its first secret once its coding
	// was chosen: served in br, it fails (ErrSecretNotIsolated).
	late bool
	// serve writes a page holding token and returns the plain body it
	// wrote.
	serve func(w http.ResponseWriter, token string) (string, error)
}

// pageHTML returns n bytes of real HTML, for the text around a token.
func pageHTML(t testing.TB, n int) string {
	t.Helper()
	return string(corpus.Prefix(t, corpus.HTML(t), n))
}

// secretPages are the pages the decoding tests serve: a whole body, a
// stream whose token comes once the coding was chosen, a token first, a
// token across a flush, a template into the writer and one into a buffer,
// and a handler that marks first and writes the token in pieces.
func secretPages(t testing.TB) []secretPage {
	small, large := pageHTML(t, 6<<10), pageHTML(t, 100<<10)
	writeSecret := func(w http.ResponseWriter, token string) error {
		n, err := squeeze.WriteSecret(w, []byte(token))
		if err == nil && n != len(token) {
			err = fmt.Errorf("WriteSecret wrote %d of %d", n, len(token))
		}
		return err
	}
	tmpl := template.Must(template.New("page").Funcs(template.FuncMap{"secret": squeeze.TemplateSecret}).Parse(
		`<!doctype html><form><input type="hidden" name="csrf" value="{{secret .W .Token}}"></form>{{.Before}}` +
			`<script>const csrf = "{{secret .W .Token}}";</script>{{.After}}`))
	type data struct {
		W             http.ResponseWriter
		Token         string
		Before, After template.HTML
	}
	return []secretPage{
		{"whole", false, func(w http.ResponseWriter, token string) (string, error) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, small[:3000])
			err := writeSecret(w, token)
			io.WriteString(w, small[3000:])
			return small[:3000] + token + small[3000:], err
		}},
		{"stream", false, func(w http.ResponseWriter, token string) (string, error) {
			w.Header().Set("Content-Type", "text/html")
			if _, err := squeeze.TemplateSecret(w, token); err != nil { // marked before the coding is chosen
				return "", err
			}
			io.WriteString(w, large[:60<<10])
			err := writeSecret(w, token)
			io.WriteString(w, large[60<<10:])
			return large[:60<<10] + token + large[60<<10:], err
		}},
		{"late", true, func(w http.ResponseWriter, token string) (string, error) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, large[:60<<10])
			err := writeSecret(w, token)
			io.WriteString(w, large[60<<10:])
			return large[:60<<10] + token + large[60<<10:], err
		}},
		{"first", false, func(w http.ResponseWriter, token string) (string, error) {
			w.Header().Set("Content-Type", "text/html")
			err := writeSecret(w, token)
			io.WriteString(w, large)
			return token + large, err
		}},
		{"flushed", false, func(w http.ResponseWriter, token string) (string, error) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, small[:100])
			err := writeSecret(w, token)
			w.(http.Flusher).Flush()
			io.WriteString(w, small[100:])
			return small[:100] + token + small[100:], err
		}},
		{"template", false, func(w http.ResponseWriter, token string) (string, error) {
			w.Header().Set("Content-Type", "text/html")
			var plain strings.Builder
			d := data{W: w, Token: token, Before: template.HTML(large[:50<<10]), After: template.HTML(large[50<<10:])}
			err := tmpl.Execute(io.MultiWriter(w, &plain), d)
			return plain.String(), err
		}},
		{"template-buffered", false, func(w http.ResponseWriter, token string) (string, error) {
			w.Header().Set("Content-Type", "text/html")
			var buf bytes.Buffer
			if err := tmpl.Execute(&buf, data{W: w, Token: token, Before: template.HTML(small), After: template.HTML(large)}); err != nil {
				return "", err
			}
			plain := buf.String()
			// Through a small bufio.Writer the token is cut across writes.
			bw := bufio.NewWriterSize(w, 4099)
			io.Copy(bw, &buf)
			return plain, bw.Flush()
		}},
		{"marked-pieces", false, func(w http.ResponseWriter, token string) (string, error) {
			w.Header().Set("Content-Type", "text/html")
			if _, err := squeeze.TemplateSecret(w, token); err != nil {
				return "", err
			}
			io.WriteString(w, large[:40<<10])
			io.WriteString(w, "token="+token[:5])
			w.(http.Flusher).Flush()
			io.WriteString(w, token[5:9])
			io.WriteString(w, token[9:]+"; again "+token+large[40<<10:]+token[:7])
			return large[:40<<10] + "token=" + token + "; again " + token + large[40<<10:] + token[:7], nil
		}},
	}
}

// decodeOneMember decodes a response body in coding with the reference
// decoders, and for gzip checks that the body is one member, as Chromium
// reads no further.
func decodeOneMember(t testing.TB, coding string, raw []byte) []byte {
	t.Helper()
	if coding != squeeze.Gzip {
		return testtool.Decode(t, coding, raw)
	}
	br := bytes.NewReader(raw)
	zr, err := gzip.NewReader(br)
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(false)
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if br.Len() != 0 {
		t.Fatalf("%d bytes follow the gzip member", br.Len())
	}
	return out
}

// TestSecretResponsesDecodeByteForByte serves each secret page over
// HTTP/1.1 and HTTP/2 to clients accepting each coding, and checks the
// coding is one that isolates the secret (never br: a client that accepts
// only br gets the page unencoded) and that the body decodes to what the
// handler wrote, with Go's decoders and the reference programs; and again
// under WithLengthHiding(32), whose padding goes around the segments.
func TestSecretResponsesDecodeByteForByte(t *testing.T) {
	t.Parallel()
	t.Run("all codings", func(t *testing.T) {
		t.Parallel()
		testSecretResponsesDecode(t, newMiddleware(t, squeeze.WithEncodings(squeeze.Zstd, squeeze.Brotli, squeeze.Gzip, squeeze.Deflate)), true)
	})
	t.Run("length hiding", func(t *testing.T) {
		t.Parallel()
		testSecretResponsesDecode(t, newMiddleware(t, squeeze.WithEncodings(squeeze.Zstd, squeeze.Brotli, squeeze.Gzip), squeeze.WithLengthHiding(32)), false)
	})
}

func testSecretResponsesDecode(t *testing.T, m *squeeze.Middleware, deflate bool) {
	pages := secretPages(t)
	want := map[string]string{}
	mux := http.NewServeMux()
	for _, p := range pages {
		plain, err := p.serve(httptest.NewRecorder(), secretToken)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		want[p.name] = plain
		mux.HandleFunc("/"+p.name, func(w http.ResponseWriter, r *http.Request) {
			if got, err := p.serve(w, secretToken); (err != nil || got != plain) && !p.late {
				t.Errorf("%s: %v, or wrote another body", p.name, err)
			}
		})
	}
	h := m.Handler(mux)
	for _, proto := range testtool.Protocols() {
		srv, c := testtool.StartServer(t, proto.Name, proto.Major, h, false)
		for _, p := range pages {
			for _, tc := range []struct{ ae, want string }{
				{"zstd", "zstd"}, {"gzip", "gzip"}, {"deflate", "deflate"}, {"br", ""},
				{"br, zstd", "zstd"}, {"br, gzip;q=0.5, deflate;q=0.4", "gzip"}, {"", ""},
			} {
				if !deflate && strings.Contains(tc.ae, "deflate") {
					continue
				}
				if p.late && strings.HasPrefix(tc.ae, "br") {
					continue // TestSecretAfterBrotliCommittedFails
				}
				res, raw := testtool.Fetch(t, c, srv.URL+"/"+p.name, tc.ae)
				coding := res.Header.Get("Content-Encoding")
				if coding != tc.want {
					t.Errorf("%s %s, Accept-Encoding %q: Content-Encoding %q, want %q", proto.Name, p.name, tc.ae, coding, tc.want)
					continue
				}
				if got := decodeOneMember(t, coding, raw); string(got) != want[p.name] {
					t.Errorf("%s %s %s: decoded %d bytes, want %d", proto.Name, p.name, coding, len(got), len(want[p.name]))
				}
				if _, _, ok := testtool.DecodeCommand(coding); ok {
					if got := testtool.DecodeCLI(t, coding, raw); string(got) != want[p.name] {
						t.Errorf("%s %s %s: the reference program decoded %d bytes, want %d", proto.Name, p.name, coding, len(got), len(want[p.name]))
					}
				}
				if !strings.Contains(string(raw), secretToken) && coding != "" && p.name != "marked-pieces" {
					t.Errorf("%s %s %s: the token is not stored as it is in the body", proto.Name, p.name, coding)
				}
			}
		}
	}
}

// TestSecretAfterBrotliCommittedFails: a secret written into a br stream
// already going out, which cannot isolate it, is refused with
// ErrSecretNotIsolated and nothing written; the stream goes on and
// decodes, without the secret.
func TestSecretAfterBrotliCommittedFails(t *testing.T) {
	t.Parallel()
	large := pageHTML(t, 100<<10)
	var writeErr, markErr error
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, large[:50<<10])
		var n int
		n, writeErr = squeeze.WriteSecret(w, []byte(secretToken))
		if n != 0 {
			t.Errorf("WriteSecret wrote %d bytes into br", n)
		}
		_, markErr = squeeze.TemplateSecret(w, secretToken)
		io.WriteString(w, large[50<<10:])
	}))
	rec := serve(h, http.MethodGet, "br")
	if !errors.Is(writeErr, squeeze.ErrSecretNotIsolated) || !errors.Is(markErr, squeeze.ErrSecretNotIsolated) {
		t.Fatalf("WriteSecret: %v; TemplateSecret: %v; want ErrSecretNotIsolated", writeErr, markErr)
	}
	if got := testtool.Decode(t, "br", rec.Body.Bytes()); string(got) != large {
		t.Fatalf("decoded %d bytes, want %d", len(got), len(large))
	}
}

// TestSecretWithoutSqueezeWritesPlainly: with no squeeze in the chain,
// WriteSecret writes and TemplateSecret returns the secret as it is.
func TestSecretWithoutSqueezeWritesPlainly(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	if n, err := squeeze.WriteSecret(rec, []byte("abc")); n != 3 || err != nil {
		t.Fatalf("WriteSecret: %d, %v", n, err)
	}
	if s, err := squeeze.TemplateSecret(rec, secretToken); s != secretToken || err != nil {
		t.Fatalf("TemplateSecret: %q, %v", s, err)
	}
	if rec.Body.String() != "abc" {
		t.Fatalf("body %q", rec.Body.String())
	}
}

// TestTemplateSecretRejectsWhatItCannotFind: a secret html/template may
// escape, or too short or long to scan for, is an error matching
// ErrInvalidSecret, which stops the template.
func TestTemplateSecretRejectsWhatItCannotFind(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"short", "abc+def/ghi=", "a<b>cdefgh", "quote\"dabc", strings.Repeat("a", 1025), "tab\tabcdef"} {
		if _, err := squeeze.TemplateSecret(httptest.NewRecorder(), s); !errors.Is(err, squeeze.ErrInvalidSecret) {
			t.Errorf("TemplateSecret(%q): %v, want ErrInvalidSecret", s, err)
		}
	}
	if _, err := squeeze.WriteSecret(httptest.NewRecorder(), make([]byte, squeeze.MaxSecretSize+1)); err != nil {
		t.Errorf("without squeeze, a long secret is written plainly: %v", err)
	}
	h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := squeeze.WriteSecret(w, make([]byte, squeeze.MaxSecretSize+1)); !errors.Is(err, squeeze.ErrInvalidSecret) {
			t.Errorf("WriteSecret of %d bytes: %v", squeeze.MaxSecretSize+1, err)
		}
	}))
	serve(h, http.MethodGet, "gzip")
}

// TestSecretResponsesDecodeInCurlAndTheCLIs fetches every secret page
// with curl --compressed in each coding that isolates a secret, and
// decodes the gzip bodies with pigz and zcat too (gzip -d and zstd -d in
// TestSecretResponsesDecodeByteForByte).
func TestSecretResponsesDecodeInCurlAndTheCLIs(t *testing.T) {
	t.Parallel()
	curl := testtool.Require(t, "curl")
	pigz, zcat := testtool.Require(t, "pigz"), testtool.Require(t, "zcat")
	for _, p := range secretPages(t) {
		want, err := p.serve(httptest.NewRecorder(), secretToken)
		if err != nil {
			t.Fatal(err)
		}
		h := newMiddleware(t).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = p.serve(w, secretToken)
		}))
		srv := httptest.NewServer(h)
		for _, coding := range []string{squeeze.Zstd, squeeze.Gzip, squeeze.Deflate} {
			out, err := exec.Command(curl, "-sS", "--fail", "--compressed", "-H", "Accept-Encoding: "+coding, srv.URL).Output()
			if err != nil || string(out) != want {
				t.Errorf("%s %s: curl --compressed: %d bytes, %v; want %d", p.name, coding, len(out), err, len(want))
			}
		}
		rec := serveAt(h, "/", squeeze.Gzip)
		for _, tool := range []string{pigz, zcat} {
			cmd := exec.Command(tool, "-d", "-c")
			if tool == zcat {
				cmd = exec.Command(tool)
			}
			cmd.Stdin = bytes.NewReader(rec.Body.Bytes())
			if out, err := cmd.Output(); err != nil || string(out) != want {
				t.Errorf("%s: %s: %d bytes, %v; want %d", p.name, tool, len(out), err, len(want))
			}
		}
		srv.Close()
	}
}

// TestWriteSecretAcrossTheBufferEdgeIsIsolated writes a secret with
// WriteSecret when the bytes held back reach to just before, at and just
// past the end of the buffer, so the secret's own write is the one that
// commits the response: the body decodes to what the handler wrote, the
// secret stored as it is, in every coding that isolates.
func TestWriteSecretAcrossTheBufferEdgeIsIsolated(t *testing.T) {
	t.Parallel()
	const size = 32 << 10
	m := newMiddleware(t, squeeze.WithEncodings(squeeze.Zstd, squeeze.Gzip, squeeze.Deflate))
	for _, before := range []int{size - len(secretToken) - 1, size - len(secretToken), size - len(secretToken) + 1, size - 1, size} {
		for _, coding := range []string{"zstd", "gzip", "deflate"} {
			var plain bytes.Buffer
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				out := io.MultiWriter(w, &plain)
				plain.Reset()
				_, _ = out.Write(textBody(before, before))
				if _, err := squeeze.WriteSecret(w, []byte(secretToken)); err != nil {
					t.Errorf("%d bytes before, %s: WriteSecret: %v", before, coding, err)
				}
				plain.WriteString(secretToken)
				_, _ = out.Write(textBody(before+1, 4<<10))
			}))
			rec := serveAt(h, "/", coding)
			if got := rec.Header().Get("Content-Encoding"); got != coding {
				t.Fatalf("%d bytes before: Content-Encoding %q, want %q", before, got, coding)
			}
			if got := decodeOneMember(t, coding, rec.Body.Bytes()); !bytes.Equal(got, plain.Bytes()) {
				t.Errorf("%d bytes before, %s: decoded %d bytes, want %d", before, coding, len(got), plain.Len())
			}
			if !bytes.Contains(rec.Body.Bytes(), []byte(secretToken)) {
				t.Errorf("%d bytes before, %s: the secret is not stored as it is", before, coding)
			}
		}
	}
}
