package squeeze_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/writers"
)

// events collects the responses an observer receives.
type events struct {
	mu   sync.Mutex
	list []squeeze.ResponseInfo
}

func (e *events) observer() squeeze.Observer { return squeeze.Observer{Response: e.observe} }

func (e *events) observe(ev squeeze.ResponseInfo) {
	e.mu.Lock()
	e.list = append(e.list, ev)
	e.mu.Unlock()
}

// take returns the events received so far and forgets them.
func (e *events) take() []squeeze.ResponseInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	list := e.list
	e.list = nil
	return list
}

// only returns the one event received, failing the test unless there was
// exactly one.
func (e *events) only(t *testing.T) squeeze.ResponseInfo {
	t.Helper()
	list := e.take()
	if len(list) != 1 {
		t.Fatalf("the observer got %d events, want 1: %+v", len(list), list)
	}
	return list[0]
}

// encode compresses data with squeeze's own encoder for coding.
func encode(t *testing.T, coding string, data []byte) []byte {
	t.Helper()
	levels, err := writers.Levels(coding)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := writers.NewEncoder(coding, levels.Default)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc.Reset(&buf)
	if _, err := enc.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestObserverSaysWhyAResponseWentOutPlain(t *testing.T) {
	text := textBody(1, 4000)
	tests := []struct {
		name    string
		ae      string
		hdr     []string // request header pairs
		handler http.HandlerFunc
		want    squeeze.Reason
	}{
		{"204", "zstd", nil, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }, squeeze.ReasonStatus},
		{"304", "zstd", nil, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotModified)
		}, squeeze.ReasonStatus},
		{"206", "zstd", nil, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Range", "bytes 0-3999/8000")
			w.WriteHeader(http.StatusPartialContent)
			_, _ = w.Write(text)
		}, squeeze.ReasonPartial},
		{"already encoded", "zstd", nil, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(text)
		}, squeeze.ReasonAlreadyEncoded},
		{"no-transform", "zstd", nil, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Cache-Control", "no-transform")
			_, _ = w.Write(text)
		}, squeeze.ReasonNoTransform},
		{"image", "zstd", nil, writeText("image/png", text, 0), squeeze.ReasonContentType},
		{"range request", "zstd", []string{"Range", "bytes=0-99"}, writeText("text/plain", text, 0), squeeze.ReasonRange},
		{"identity only", "identity", nil, writeText("text/plain", text, 0), squeeze.ReasonNotAccepted},
		{"too small", "zstd", nil, writeText("text/plain", text[:100], 0), squeeze.ReasonTooSmall},
		{"shorter than declared", "zstd", nil, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Length", "5000")
			_, _ = w.Write(text)
		}, squeeze.ReasonLength},
		{"incompressible", "zstd", nil, writeText("text/plain", randomBody(2, 4000), 0), squeeze.ReasonNoGain},
	}
	reached := map[squeeze.Reason]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got events
			h := newMiddleware(t, squeeze.WithObserver(got.observer())).Handler(tt.handler)
			rec := serve(h, "GET", tt.ae, tt.hdr...)
			if ce := rec.Header().Get("Content-Encoding"); ce != "" && tt.want != squeeze.ReasonAlreadyEncoded {
				t.Fatalf("the response went out with Content-Encoding %q; the case must send it plain", ce)
			}
			e := got.only(t)
			if e.Coding != "" || e.Skipped != tt.want {
				t.Errorf("event %+v; want a response event, no coding, Skipped %v", e, tt.want)
			}
			if n := int64(rec.Body.Len()); e.In != n || e.Out != n {
				t.Errorf("event In %d, Out %d; want the %d bytes sent both ways", e.In, e.Out, n)
			}
			// Only finding out that encoding gains nothing takes time.
			if tried := e.Skipped == squeeze.ReasonNoGain; (e.Elapsed > 0) != tried {
				t.Errorf("event Elapsed %v; want time spent encoding only for no_gain", e.Elapsed)
			}
			reached[e.Skipped] = true
		})
	}
	// ReasonNoEncoder needs an encoder that New's validation lets through
	// and that then fails: none of squeeze's.
	for r := squeeze.Reason(0) + 1; r < squeeze.ReasonNoEncoder; r++ {
		if !reached[r] {
			t.Errorf("no case reports Skipped %v", r)
		}
	}
}

func TestObserverCountsThePlainAndWireBytesOfEncodedResponses(t *testing.T) {
	small, big := textBody(3, 6000), textBody(4, 200<<10)
	tests := []struct {
		name    string
		method  string
		body    []byte // what the handler writes
		handler http.HandlerFunc
	}{
		{"whole body within the buffer", "GET", small, writeText("text/plain", small, 0)},
		{"stream past the buffer", "GET", big, writeText("text/plain", big, 7000)},
		{"flushed stream", "GET", small, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write(small[:100])
			w.(http.Flusher).Flush()
			_, _ = w.Write(small[100:])
		}},
		{"io.Copy", "GET", big, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.Copy(w, onlyReader{bytes.NewReader(big)})
		}},
		{"HEAD with a declared length", "HEAD", nil, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Length", "6000")
		}},
	}
	for _, coding := range allCodings {
		for _, tt := range tests {
			t.Run(coding+"/"+tt.name, func(t *testing.T) {
				var got events
				h := newMiddleware(t, squeeze.WithEncodings(coding), squeeze.WithObserver(got.observer())).Handler(tt.handler)
				rec := serve(h, tt.method, coding)
				if ce := rec.Header().Get("Content-Encoding"); ce != coding {
					t.Fatalf("Content-Encoding %q, want %s", ce, coding)
				}
				if tt.method != "HEAD" {
					checkBody(t, rec.Header(), rec.Body.Bytes(), tt.body)
				}
				e := got.only(t)
				if e.Coding != coding || e.Skipped != squeeze.Reason(0) || e.Cached || e.Dictionary {
					t.Errorf("event %+v; want a response event with Coding %s and nothing skipped", e, coding)
				}
				if e.In != int64(len(tt.body)) || e.Out != int64(rec.Body.Len()) {
					t.Errorf("event In %d, Out %d; want %d written by the handler and %d sent", e.In, e.Out, len(tt.body), rec.Body.Len())
				}
				if len(tt.body) > 0 && e.Elapsed <= 0 {
					t.Errorf("event Elapsed %v, want the time spent encoding", e.Elapsed)
				}
			})
		}
	}
}

func TestObserverCountsPlainBytesSentThroughReadFrom(t *testing.T) {
	body := randomBody(5, 100<<10)
	var got events
	h := newMiddleware(t, squeeze.WithObserver(got.observer())).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = io.Copy(w, onlyReader{bytes.NewReader(body)})
	}))
	spy := newSpy()
	h.ServeHTTP(spy, request("GET", "zstd"))
	if spy.readFroms == 0 || !bytes.Equal(spy.body.Bytes(), body) {
		t.Fatalf("the body did not reach the writer's ReadFrom intact (%d ReadFrom calls, %d bytes)", spy.readFroms, spy.body.Len())
	}
	e := got.only(t)
	if e.Skipped != squeeze.ReasonContentType || e.In != int64(len(body)) || e.Out != int64(len(body)) {
		t.Errorf("event %+v; want Skipped content_type and %d bytes in and out", e, len(body))
	}
}

func TestObserverIsNotCalledForWhatSqueezeDoesNotHandle(t *testing.T) {
	tests := []struct {
		name    string
		hdr     []string
		handler http.HandlerFunc
	}{
		{"WebSocket upgrade", []string{"Connection", "Upgrade", "Upgrade", "websocket"}, writeText("text/plain", textBody(6, 4000), 0)},
		{"unsupported request coding", []string{"Content-Encoding", "compress"}, writeText("text/plain", textBody(6, 4000), 0)},
		{"panic before the first byte", nil, func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got events
			h := newMiddleware(t, squeeze.WithObserver(got.observer())).Handler(tt.handler)
			r := httptest.NewRequest("POST", "/", strings.NewReader("x"))
			r.Header.Set("Accept-Encoding", "gzip")
			for i := 0; i+1 < len(tt.hdr); i += 2 {
				r.Header.Set(tt.hdr[i], tt.hdr[i+1])
			}
			func() {
				defer func() { _ = recover() }()
				h.ServeHTTP(httptest.NewRecorder(), r)
			}()
			if list := got.take(); len(list) != 0 {
				t.Errorf("the observer got %+v, want nothing", list)
			}
		})
	}
}

func TestObserverReportsEachDecodedRequestBodyOnce(t *testing.T) {
	plain := textBody(7, 50<<10)
	gz := encode(t, squeeze.Gzip, plain)
	stacked := encode(t, squeeze.Brotli, gz)
	tests := []struct {
		name     string
		coding   string // Content-Encoding
		wire     []byte
		read     int // bytes the handler reads; -1 for all
		close    bool
		wantIn   int64
		wantOut  int64 // -1: at least one byte, at most len(wire)
		wantCode string
	}{
		{"read to the end", "gzip", gz, -1, false, int64(len(plain)), int64(len(gz)), "gzip"},
		{"read to the end and closed", "gzip", gz, -1, true, int64(len(plain)), int64(len(gz)), "gzip"},
		{"read in part", "gzip", gz, 1000, false, 1000, -1, "gzip"},
		{"not read", "gzip", gz, 0, false, 0, 0, "gzip"},
		{"closed unread", "gzip", gz, 0, true, 0, 0, "gzip"},
		{"stacked codings", "gzip, br", stacked, -1, false, int64(len(plain)), int64(len(stacked)), "gzip, br"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got events
			var mu sync.Mutex
			var body []squeeze.RequestBodyInfo
			obs := got.observer()
			obs.RequestBody = func(e squeeze.RequestBodyInfo) { mu.Lock(); body = append(body, e); mu.Unlock() }
			h := newMiddleware(t, squeeze.WithObserver(obs)).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var err error
				switch {
				case tt.read < 0:
					_, err = io.ReadAll(r.Body)
				case tt.read > 0:
					_, err = io.ReadFull(r.Body, make([]byte, tt.read))
				}
				if err != nil {
					t.Errorf("reading the body: %v", err)
				}
				if tt.close {
					_ = r.Body.Close()
				}
				w.WriteHeader(http.StatusNoContent)
			}))
			r := httptest.NewRequest("POST", "/", bytes.NewReader(tt.wire))
			r.Header.Set("Content-Encoding", tt.coding)
			h.ServeHTTP(httptest.NewRecorder(), r)
			for _, e := range got.take() {
				if e.Skipped != squeeze.ReasonStatus {
					t.Errorf("response event %+v, want Skipped status for the 204", e)
				}
			}
			if len(body) != 1 {
				t.Fatalf("%d request body events, want 1: %+v", len(body), body)
			}
			e := body[0]
			if e.Coding != tt.wantCode || e.Decoded != tt.wantIn {
				t.Errorf("event %+v; want Coding %q and Decoded %d", e, tt.wantCode, tt.wantIn)
			}
			if tt.wantOut >= 0 && e.Compressed != tt.wantOut || tt.wantOut < 0 && (e.Compressed <= 0 || e.Compressed > int64(len(tt.wire))) {
				t.Errorf("event Compressed %d, want %d of the %d bytes sent", e.Compressed, tt.wantOut, len(tt.wire))
			}
			if tt.read != 0 && e.Elapsed <= 0 {
				t.Errorf("event Elapsed %v, want the time spent decoding", e.Elapsed)
			}
		})
	}
}

func TestReasonNamesAreDistinctMetricLabels(t *testing.T) {
	seen := map[string]squeeze.Reason{}
	for r := squeeze.Reason(0); r < squeeze.ReasonCount; r++ {
		name := r.String()
		if name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz_") != "" {
			t.Errorf("Reason(%d).String() = %q, want snake_case", r, name)
		}
		if prev, ok := seen[name]; ok {
			t.Errorf("Reason(%d) and Reason(%d) are both %q", prev, r, name)
		}
		seen[name] = r
	}
	if s := squeeze.ReasonCount.String(); s != "Reason("+strconv.Itoa(int(squeeze.ReasonCount))+")" {
		t.Errorf("an unknown reason prints as %q", s)
	}
}

// BenchmarkObserver measures what observing adds to a response: a small
// one sent plain, where the fixed cost shows most, and a 16 KiB one
// encoded whole, where the clock is read around the encoder.
func BenchmarkObserver(b *testing.B) {
	var counters squeeze.Counters
	ct := []string{"text/html; charset=utf-8"}
	for _, body := range []struct {
		name string
		data []byte
	}{{"plain-200B", textBody(30, 200)}, {"zstd-16K", textBody(31, 16<<10)}} {
		next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = ct
			_, _ = w.Write(body.data)
		})
		for _, obs := range []struct {
			name string
			opts []squeeze.Option
		}{{"none", nil}, {"counters", []squeeze.Option{squeeze.WithObserver(counters.Observer())}}} {
			b.Run("body="+body.name+"/observer="+obs.name, func(b *testing.B) {
				h := newMiddleware(b, append(obs.opts, squeeze.WithEncodings(squeeze.Zstd))...).Handler(next)
				_, serve := reusedWriter(h, request("GET", "zstd"))
				b.ReportAllocs()
				for b.Loop() {
					serve()
				}
			})
		}
	}
}

// The reference's table of reasons (docs/reference.md) gives every
// Reason's Go name and its label, the String that the counters export, and
// nothing else.
func TestReferenceReasonTableMatchesEveryReason(t *testing.T) {
	readme, err := os.ReadFile("docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "| `Reason` | label |")
	if section == "" {
		t.Fatal("docs/reference.md has no table with the header | `Reason` | label |")
	}
	table := map[string]string{}
	var order []string
	for i, line := range strings.Split(section, "\n")[1:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, "|")
		if i == 0 || len(cells) < 3 {
			continue // the delimiter row
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		table[name] = strings.Trim(strings.TrimSpace(cells[2]), "`")
		order = append(order, name)
	}
	// The Go names, in the order of their values (iota), from the source.
	// The zero Reason, an encoded response's, has no constant: the table
	// names it Reason(0).
	goNames := append([]string{"Reason(0)"}, reasonConstNames(t)...)
	var want []string
	for r := squeeze.Reason(0); !strings.HasPrefix(r.String(), "Reason("); r++ {
		if int(r) >= len(goNames) {
			t.Fatalf("Reason %d (%q) has no constant", r, r)
		}
		name := goNames[r]
		want = append(want, name)
		if got, ok := table[name]; !ok {
			t.Errorf("docs/reference.md's reason table has no row for %s (label %q)", name, r.String())
		} else if got != r.String() {
			t.Errorf("docs/reference.md gives %s the label %q; its String is %q", name, got, r.String())
		}
	}
	if !slices.Equal(order, want) {
		t.Errorf("docs/reference.md's reason table lists\n%v\nwant, in the order of their values,\n%v", order, want)
	}
}

// reasonConstNames returns the exported constants of type Reason in the
// order they are declared, which is the order of their values (the zero
// Reason is unexported).
func reasonConstNames(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "decide.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		inReasons := false
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Reason" || inReasons && vs.Type == nil && len(vs.Values) == 0 {
				inReasons = true
				for _, n := range vs.Names {
					if n.IsExported() {
						names = append(names, n.Name)
					}
				}
			}
		}
		if len(names) > 0 {
			break
		}
	}
	return names
}

// A FileServer mounted behind its own Middleware's Handler (example/app.go,
// "behind compress.Handler, as here") reports exactly one Event per response,
// so Counters count each static response once, not once as br and once as
// skipped "encoded"; so it does with handlers between the two that wrap the
// ResponseWriter and unwrap it as http.ResponseController expects, and
// behind a second Middleware, which reports to its own observer.
func TestWrappedFileServerReportsOneEvent(t *testing.T) {
	js := textBody(14, 20000)
	for _, tc := range []struct {
		name string
		wrap func(m *squeeze.Middleware, fsrv http.Handler) http.Handler
	}{
		{"directly", func(m *squeeze.Middleware, fsrv http.Handler) http.Handler { return m.Handler(fsrv) }},
		{"under StripPrefix", func(m *squeeze.Middleware, fsrv http.Handler) http.Handler {
			return m.Handler(http.StripPrefix("/static", fsrv))
		}},
		{"under a logging writer", func(m *squeeze.Middleware, fsrv http.Handler) http.Handler {
			return m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fsrv.ServeHTTP(&unwrappingWriter{w}, r)
			}))
		}},
		{"under another Middleware", func(m *squeeze.Middleware, fsrv http.Handler) http.Handler {
			return m.Handler(newMiddleware(t).Handler(fsrv))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got events
			m := newMiddleware(t, squeeze.WithObserver(got.observer()))
			fsrv, _ := fileServer(t, m, fstest.MapFS{"app.js": {Data: js}})
			path := "/app.js"
			if tc.name == "under StripPrefix" {
				path = "/static/app.js"
			}
			rec := serveAt(tc.wrap(m, fsrv), path, "br")
			checkBody(t, rec.Header(), rec.Body.Bytes(), js)
			if e := got.only(t); e.Coding != "br" {
				t.Errorf("event %+v, want the file server's, br", e)
			}
		})
	}
}

// unwrappingWriter wraps a ResponseWriter, as logging middleware does, and
// unwraps to it for http.ResponseController.
type unwrappingWriter struct{ http.ResponseWriter }

func (w *unwrappingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// The file server takes every reason a file goes out unencoded from the
// decision (decide.go), as the Middleware does: no file of it names a
// Reason but the zero one (unexported). TestFileServerReportsTheReasonsTheMiddlewareWould
// checks what the reasons are.
func TestFileServerTakesEveryReasonFromTheDecision(t *testing.T) {
	reasons := map[string]bool{}
	for _, name := range reasonConstNames(t) {
		reasons[name] = true
	}
	files, err := filepath.Glob("file*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && reasons[id.Name] {
				t.Errorf("%s names %s: a reason is decide's to give", file, id.Name)
			}
			return true
		})
	}
	if checked < 2 {
		t.Fatalf("checked %d files (%v), want fileserver.go and fileserver_store.go at least", checked, files)
	}
}
