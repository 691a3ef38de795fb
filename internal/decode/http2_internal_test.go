package decode

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"testing"

	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/internal/testtool"
	"github.com/squeezehttp/squeeze/writers"
)

// protocol is a test server speaking one HTTP version, with its client.
type protocol struct {
	name   string
	major  int
	url    string
	client *http.Client
}

// overBothProtocols starts h behind an HTTP/1.1 server and behind an HTTP/2
// one (TLS, as browsers speak it), with testtool.StartServer, which the
// package's external tests use too. decodeRequest branches on the protocol:
// Connection: close is HTTP/1's way to drop a body it will not read, and an
// HTTP/2 server takes it as an order to shut down every stream.
func overBothProtocols(t *testing.T, h http.Handler) []protocol {
	t.Helper()
	var ps []protocol
	for _, v := range testtool.Protocols() {
		srv, c := testtool.StartServer(t, v.Name, v.Major, h, false)
		ps = append(ps, protocol{v.Name, v.Major, srv.URL, c})
	}
	return ps
}

// post sends body with the Content-Encoding lines and reports the response,
// its body, and whether it went out on a connection used before.
func (p protocol) post(t *testing.T, body []byte, chunked bool, lines ...string) (*http.Response, []byte, bool) {
	t.Helper()
	var reused bool
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
	ctx := httptrace.WithClientTrace(context.Background(), trace)
	var src io.Reader = bytes.NewReader(body)
	if chunked {
		src = io.MultiReader(src) // hides the length
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) > 0 {
		req.Header["Content-Encoding"] = lines
	}
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.ProtoMajor != p.major {
		t.Fatalf("answered over HTTP/%d, want %s", resp.ProtoMajor, p.name)
	}
	return resp, got, reused
}

// statusFor is the handler the README suggests: 413 past a cap, 400 for an
// invalid body, and the decoded body echoed otherwise.
var statusFor = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
	case errors.Is(err, ErrInvalidBody):
		http.Error(w, "bad body", http.StatusBadRequest)
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	default:
		_, _ = w.Write(body)
	}
})

// wrapper stands for any middleware in front of squeeze that wraps the
// ResponseWriter: a logger, a metrics recorder. net/http no longer sees its
// own ResponseWriter behind it.
type wrapper struct{ http.ResponseWriter }

func wrapped(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(wrapper{w}, r)
	})
}

// TestDecodeRequestOverHTTP1AndHTTP2 runs request decoding over real
// servers of both protocols, directly and behind a wrapping middleware.
// Past a cap, HTTP/1.1 must close the connection, since the rest of the
// body is never read, and say so with Connection: close; HTTP/2 resets
// the one stream and keeps the connection for the next request.
func TestDecodeRequestOverHTTP1AndHTTP2(t *testing.T) {
	limit := bombLimit()
	m := mustNew(t, limit, 0)
	plain := corpus.Prefix(t, corpus.HTML(t), 16<<10)
	bomb := zeroBomb(t, Zstd, 1024)
	stacks := []struct {
		name string
		h    http.Handler
	}{
		{"direct", decodeOnly(m, statusFor)},
		{"behind a wrapping middleware", wrapped(decodeOnly(m, statusFor))},
	}
	for _, stack := range stacks {
		for _, p := range overBothProtocols(t, stack.h) {
			t.Run(stack.name+"/"+p.name, func(t *testing.T) {
				for _, coding := range writers.Codings() {
					resp, got, _ := p.post(t, goEncode(t, coding, plain), false, coding)
					if resp.StatusCode != http.StatusOK || !bytes.Equal(got, plain) {
						t.Fatalf("%s: status %d, %d bytes; want 200 and the plain body", coding, resp.StatusCode, len(got))
					}
				}
				if resp, _, _ := p.post(t, nil, false, Gzip); resp.StatusCode != http.StatusBadRequest {
					t.Errorf("empty gzip body: status %d, want 400", resp.StatusCode)
				}
				checkClose := func(what string, resp *http.Response, reused bool) {
					t.Helper()
					if !reused {
						t.Errorf("%s did not go out on a warm connection; the checks below prove nothing", what)
					}
					_, _, next := p.post(t, goEncode(t, Gzip, []byte("after")), false, Gzip)
					if p.major == 1 {
						// The client takes Connection: close out of the
						// header and reports it as Close.
						if !resp.Close {
							t.Errorf("%s: response without Connection: close", what)
						}
						if next {
							t.Errorf("%s: the connection was reused", what)
						}
						return
					}
					if resp.Close || !next {
						t.Errorf("%s: Close %v, next request reused the connection: %v; want one connection for both", what, resp.Close, next)
					}
				}
				for _, chunked := range []bool{false, true} {
					p.post(t, goEncode(t, Zstd, []byte("warm up")), false, Zstd)
					resp, _, reused := p.post(t, bomb, chunked, Zstd)
					if resp.StatusCode != http.StatusRequestEntityTooLarge {
						t.Fatalf("bomb: status %d, want 413", resp.StatusCode)
					}
					checkClose("bomb", resp, reused)
				}
				// Declared longer than any body within the cap: 413 before
				// the handler runs.
				p.post(t, goEncode(t, Zstd, []byte("warm up")), false, Zstd)
				resp, _, reused := p.post(t, make([]byte, CompressedLimit(limit)+1), false, Zstd)
				if resp.StatusCode != http.StatusRequestEntityTooLarge {
					t.Fatalf("declared length over the limit: status %d, want 413", resp.StatusCode)
				}
				checkClose("declared length over the limit", resp, reused)
			})
		}
	}
}
