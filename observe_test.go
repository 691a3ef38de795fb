package squeeze_test

import (
	"bytes"
	"encoding/json"
	"expvar"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/writers"
)

// events collects what an observer receives.
type events struct {
	mu   sync.Mutex
	list []squeeze.Event
}

func (e *events) observe(ev squeeze.Event) {
	e.mu.Lock()
	e.list = append(e.list, ev)
	e.mu.Unlock()
}

// take returns the events received so far and forgets them.
func (e *events) take() []squeeze.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	list := e.list
	e.list = nil
	return list
}

// only returns the one event received, failing the test unless there was
// exactly one.
func (e *events) only(t *testing.T) squeeze.Event {
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
			h := newMiddleware(t, squeeze.WithObserver(got.observe)).Handler(tt.handler)
			rec := serve(h, "GET", tt.ae, tt.hdr...)
			if ce := rec.Header().Get("Content-Encoding"); ce != "" && tt.want != squeeze.ReasonAlreadyEncoded {
				t.Fatalf("the response went out with Content-Encoding %q; the case must send it plain", ce)
			}
			e := got.only(t)
			if e.Kind != squeeze.ResponseEvent || e.Coding != "" || e.Skipped != tt.want {
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
	for r := squeeze.ReasonNone + 1; r < squeeze.ReasonNoEncoder; r++ {
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
				h := newMiddleware(t, squeeze.WithEncodings(coding), squeeze.WithObserver(got.observe)).Handler(tt.handler)
				rec := serve(h, tt.method, coding)
				if ce := rec.Header().Get("Content-Encoding"); ce != coding {
					t.Fatalf("Content-Encoding %q, want %s", ce, coding)
				}
				if tt.method != "HEAD" {
					checkBody(t, rec.Header(), rec.Body.Bytes(), tt.body)
				}
				e := got.only(t)
				if e.Kind != squeeze.ResponseEvent || e.Coding != coding || e.Skipped != squeeze.ReasonNone || e.Cached || e.Dictionary {
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
	h := newMiddleware(t, squeeze.WithObserver(got.observe)).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
			h := newMiddleware(t, squeeze.WithObserver(got.observe)).Handler(tt.handler)
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
			h := newMiddleware(t, squeeze.WithObserver(got.observe)).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
			var body []squeeze.Event
			for _, e := range got.take() {
				if e.Kind == squeeze.RequestBodyEvent {
					body = append(body, e)
				} else if e.Skipped != squeeze.ReasonStatus {
					t.Errorf("response event %+v, want Skipped status for the 204", e)
				}
			}
			if len(body) != 1 {
				t.Fatalf("%d request body events, want 1: %+v", len(body), body)
			}
			e := body[0]
			if e.Coding != tt.wantCode || e.Skipped != squeeze.ReasonNone || e.In != tt.wantIn {
				t.Errorf("event %+v; want Coding %q and In %d", e, tt.wantCode, tt.wantIn)
			}
			if tt.wantOut >= 0 && e.Out != tt.wantOut || tt.wantOut < 0 && (e.Out <= 0 || e.Out > int64(len(tt.wire))) {
				t.Errorf("event Out %d, want %d of the %d bytes sent", e.Out, tt.wantOut, len(tt.wire))
			}
			if tt.read != 0 && e.Elapsed <= 0 {
				t.Errorf("event Elapsed %v, want the time spent decoding", e.Elapsed)
			}
		})
	}
}

func TestReasonNamesAreDistinctMetricLabels(t *testing.T) {
	seen := map[string]squeeze.Reason{}
	for r := squeeze.ReasonNone; r < squeeze.ReasonCount; r++ {
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

// counterJSON is the part of Counters.String the tests read.
type counterJSON struct {
	Compressor struct {
		Compressed             int64 `json:"compressed"`
		NotCompressed          int64 `json:"not_compressed"`
		TotalUncompressedBytes int64 `json:"total_uncompressed_bytes"`
		TotalCompressedBytes   int64 `json:"total_compressed_bytes"`
		ContentLengthTooSmall  int64 `json:"content_length_too_small"`
		NotCompressedBytes     int64 `json:"not_compressed_bytes"`
		Codings                map[string]struct {
			Compressed             int64   `json:"compressed"`
			TotalUncompressedBytes int64   `json:"total_uncompressed_bytes"`
			TotalCompressedBytes   int64   `json:"total_compressed_bytes"`
			EncodeSeconds          float64 `json:"encode_seconds"`
		} `json:"codings"`
		Reasons map[string]struct {
			NotCompressed      int64 `json:"not_compressed"`
			NotCompressedBytes int64 `json:"not_compressed_bytes"`
		} `json:"reasons"`
	} `json:"compressor"`
	Decompressor struct {
		Decompressed           int64 `json:"decompressed"`
		TotalUncompressedBytes int64 `json:"total_uncompressed_bytes"`
		TotalCompressedBytes   int64 `json:"total_compressed_bytes"`
		Codings                map[string]struct {
			Decompressed           int64 `json:"decompressed"`
			TotalUncompressedBytes int64 `json:"total_uncompressed_bytes"`
			TotalCompressedBytes   int64 `json:"total_compressed_bytes"`
		} `json:"codings"`
	} `json:"decompressor"`
}

func readCounters(t *testing.T, v expvar.Var) counterJSON {
	t.Helper()
	var c counterJSON
	if err := json.Unmarshal([]byte(v.String()), &c); err != nil {
		t.Fatalf("Counters.String is not JSON: %v\n%s", err, v.String())
	}
	return c
}

func TestCountersAgreeWithTheResponsesSent(t *testing.T) {
	var counters squeeze.Counters
	expvar.Publish("squeeze_test_counters", &counters)
	m := newMiddleware(t, squeeze.WithEncodings(squeeze.Zstd, squeeze.Gzip), squeeze.WithObserver(counters.Observe))
	type tally struct{ n, plain, wire int64 }
	codings := map[string]*tally{}
	reasons := map[string]*tally{}
	add := func(m map[string]*tally, k string, plain, wire int) {
		if m[k] == nil {
			m[k] = &tally{}
		}
		m[k].n++
		m[k].plain += int64(plain)
		m[k].wire += int64(wire)
	}
	responses := []struct {
		ae, ct string
		body   []byte
		reason squeeze.Reason // for a response that must go out plain
	}{
		{"zstd", "text/html", textBody(10, 5000), squeeze.ReasonNone},
		{"zstd", "text/html", textBody(11, 90<<10), squeeze.ReasonNone},
		{"gzip", "application/json", textBody(12, 3000), squeeze.ReasonNone},
		{"gzip", "text/plain", textBody(13, 200), squeeze.ReasonTooSmall},
		{"zstd", "text/plain", textBody(14, 10), squeeze.ReasonTooSmall},
		{"zstd", "image/png", randomBody(15, 4000), squeeze.ReasonContentType},
		{"br", "text/plain", textBody(16, 4000), squeeze.ReasonNotAccepted},
	}
	for _, r := range responses {
		rec := serve(m.Handler(writeText(r.ct, r.body, 1000)), "GET", r.ae)
		ce := rec.Header().Get("Content-Encoding")
		if (ce == "") != (r.reason != squeeze.ReasonNone) {
			t.Fatalf("%s %s of %d bytes went out with Content-Encoding %q", r.ae, r.ct, len(r.body), ce)
		}
		if ce != "" {
			add(codings, ce, len(r.body), rec.Body.Len())
		} else {
			add(reasons, r.reason.String(), len(r.body), rec.Body.Len())
		}
	}
	upload := textBody(17, 20000)
	wire := encode(t, squeeze.Gzip, upload)
	req := httptest.NewRequest("POST", "/", bytes.NewReader(wire))
	req.Header.Set("Content-Encoding", "gzip")
	m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	})).ServeHTTP(httptest.NewRecorder(), req)
	add(reasons, squeeze.ReasonStatus.String(), 0, 0)

	got := readCounters(t, expvar.Get("squeeze_test_counters"))
	c := &got.Compressor
	var sum tally
	for k, want := range codings {
		g := c.Codings[k]
		if g.Compressed != want.n || g.TotalUncompressedBytes != want.plain || g.TotalCompressedBytes != want.wire || g.EncodeSeconds <= 0 {
			t.Errorf("codings[%s] = %+v, want %d responses, %d plain and %d wire bytes, some time", k, g, want.n, want.plain, want.wire)
		}
		sum.n, sum.plain, sum.wire = sum.n+want.n, sum.plain+want.plain, sum.wire+want.wire
	}
	if len(c.Codings) != len(codings) {
		t.Errorf("codings %v, want only %d of them", c.Codings, len(codings))
	}
	if c.Compressed != sum.n || c.TotalUncompressedBytes != sum.plain || c.TotalCompressedBytes != sum.wire {
		t.Errorf("compressor totals %d, %d, %d; want %d, %d, %d", c.Compressed, c.TotalUncompressedBytes, c.TotalCompressedBytes, sum.n, sum.plain, sum.wire)
	}
	sum = tally{}
	for r := squeeze.ReasonNone + 1; r < squeeze.ReasonCount; r++ {
		g, ok := c.Reasons[r.String()]
		want := reasons[r.String()]
		if want == nil {
			want = &tally{}
		}
		if !ok || g.NotCompressed != want.n || g.NotCompressedBytes != want.wire {
			t.Errorf("reasons[%s] = %+v (present %v), want %d responses of %d bytes", r, g, ok, want.n, want.wire)
		}
		sum.n, sum.wire = sum.n+want.n, sum.wire+want.wire
	}
	if c.NotCompressed != sum.n || c.NotCompressedBytes != sum.wire {
		t.Errorf("not_compressed %d of %d bytes, want %d of %d", c.NotCompressed, c.NotCompressedBytes, sum.n, sum.wire)
	}
	if c.ContentLengthTooSmall != 2 {
		t.Errorf("content_length_too_small %d, want 2", c.ContentLengthTooSmall)
	}
	d := &got.Decompressor
	if g := d.Codings["gzip"]; d.Decompressed != 1 || g.Decompressed != 1 || g.TotalUncompressedBytes != int64(len(upload)) || g.TotalCompressedBytes != int64(len(wire)) ||
		d.TotalUncompressedBytes != g.TotalUncompressedBytes || d.TotalCompressedBytes != g.TotalCompressedBytes {
		t.Errorf("decompressor %+v, want one gzip body of %d bytes from %d", *d, len(upload), len(wire))
	}

	// The Prometheus exposition says the same.
	var text bytes.Buffer
	if err := counters.WritePrometheus(&text); err != nil {
		t.Fatal(err)
	}
	samples := parsePrometheus(t, text.String())
	check := func(name, label, value string, want int64) {
		t.Helper()
		key := name
		if label != "" {
			key += "{" + label + "=" + strconv.Quote(value) + "}"
		}
		if v, ok := samples[key]; !ok || v != float64(want) {
			t.Errorf("%s = %v (present %v), want %d", key, v, ok, want)
		}
	}
	for k, want := range codings {
		check("squeeze_compressor_compressed_total", "coding", k, want.n)
		check("squeeze_compressor_uncompressed_bytes_total", "coding", k, want.plain)
		check("squeeze_compressor_compressed_bytes_total", "coding", k, want.wire)
	}
	for k, want := range reasons {
		check("squeeze_compressor_not_compressed_total", "reason", k, want.n)
		check("squeeze_compressor_not_compressed_bytes_total", "reason", k, want.wire)
	}
	check("squeeze_compressor_content_length_too_small_total", "", "", 2)
	check("squeeze_decompressor_decompressed_total", "coding", "gzip", 1)
	check("squeeze_decompressor_uncompressed_bytes_total", "coding", "gzip", int64(len(upload)))
	check("squeeze_decompressor_compressed_bytes_total", "coding", "gzip", int64(len(wire)))
	if v := samples[`squeeze_compressor_encode_seconds_total{coding="zstd"}`]; v <= 0 {
		t.Errorf("encode seconds for zstd %v, want some", v)
	}
}

// parsePrometheus parses the text exposition format as far as counters
// need, failing the test on anything out of place: every family has HELP
// then TYPE counter (gauge for the breaker's state) before its samples,
// names are squeeze_..._total, and
// label values are unescaped. It returns the samples keyed by name and
// labels, label values in Go's quoting.
func parsePrometheus(t *testing.T, text string) map[string]float64 {
	t.Helper()
	if !strings.HasSuffix(text, "\n") {
		t.Errorf("the exposition does not end with a line feed")
	}
	// Counters end in _total; the one gauge, the breaker's state, does not.
	name := regexp.MustCompile(`^squeeze_((compressor|decompressor|shared_store)_[a-z_]+_total|shared_store_breaker_open)$`)
	samples := map[string]float64{}
	families := map[string]bool{}
	var family string
	var typed bool
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		fail := func(why string) { t.Fatalf("line %d %q: %s", i+1, line, why) }
		switch {
		case strings.HasPrefix(line, "# HELP "):
			f := strings.Fields(line)
			if len(f) < 4 || !name.MatchString(f[2]) || families[f[2]] {
				fail("want # HELP, a new squeeze_..._total name and some text")
			}
			family, typed, families[f[2]] = f[2], false, true
		case strings.HasPrefix(line, "# TYPE "):
			kind := "counter"
			if !strings.HasSuffix(family, "_total") {
				kind = "gauge"
			}
			if line != "# TYPE "+family+" "+kind || typed {
				fail("want one # TYPE " + family + " " + kind + " after its HELP")
			}
			typed = true
		case strings.HasPrefix(line, "#") || line == "":
			fail("unexpected line")
		default:
			if !typed {
				fail("sample before its family's HELP and TYPE")
			}
			key, value, labels := parseSample(t, line)
			if key != family {
				fail("sample outside its family " + family)
			}
			for _, l := range labels {
				key += "{" + l[0] + "=" + strconv.Quote(l[1]) + "}"
			}
			v, err := strconv.ParseFloat(value, 64)
			if err != nil || v < 0 {
				fail("the value is not a non-negative number")
			}
			if _, dup := samples[key]; dup {
				fail("duplicate sample")
			}
			samples[key] = v
		}
	}
	return samples
}

// parseSample splits a sample line into its name, its value and its labels,
// unescaping label values.
func parseSample(t *testing.T, line string) (name, value string, labels [][2]string) {
	t.Helper()
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		t.Fatalf("sample %q has no name", line)
	}
	name, rest := line[:i], line[i:]
	if strings.HasPrefix(rest, "{") {
		rest = rest[1:]
		for !strings.HasPrefix(rest, "}") {
			eq := strings.Index(rest, `="`)
			if eq <= 0 {
				t.Fatalf("sample %q: bad label", line)
			}
			label := rest[:eq]
			rest = rest[eq+2:]
			var v strings.Builder
			for {
				if rest == "" {
					t.Fatalf("sample %q: unterminated label value", line)
				}
				c := rest[0]
				rest = rest[1:]
				if c == '"' {
					break
				}
				if c == '\n' {
					t.Fatalf("sample %q: raw line feed in a label value", line)
				}
				if c == '\\' {
					if rest == "" {
						t.Fatalf("sample %q: dangling escape", line)
					}
					switch rest[0] {
					case '\\', '"':
						c = rest[0]
					case 'n':
						c = '\n'
					default:
						t.Fatalf("sample %q: unknown escape \\%c", line, rest[0])
					}
					rest = rest[1:]
				}
				v.WriteByte(c)
			}
			labels = append(labels, [2]string{label, v.String()})
			rest = strings.TrimPrefix(rest, ",")
		}
		rest = rest[1:]
	}
	if !strings.HasPrefix(rest, " ") || strings.Contains(rest[1:], " ") {
		t.Fatalf("sample %q: want one space before the value and no timestamp", line)
	}
	return name, rest[1:], labels
}

func TestPrometheusLabelValuesAreEscaped(t *testing.T) {
	for _, v := range []string{`plain`, `a "quoted" word`, `back\slash`, "two\nlines", `\"\n`, ""} {
		line := `squeeze_compressor_x_total{coding="` + squeeze.EscapeLabel(v) + `"} 1`
		if strings.Count(line, "\n") != 0 {
			t.Errorf("%q escapes to a value with a line feed: %q", v, line)
		}
		_, _, labels := parseSample(t, line)
		if len(labels) != 1 || labels[0][1] != v {
			t.Errorf("%q escapes to %q, which reads back as %q", v, line, labels)
		}
	}
}

func TestCountersAreSafeForConcurrentUse(t *testing.T) {
	var counters squeeze.Counters
	const goroutines, each = 8, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				switch i % 3 {
				case 0:
					counters.Observe(squeeze.Event{Coding: squeeze.Zstd, In: 100, Out: 10})
				case 1:
					counters.Observe(squeeze.Event{Skipped: squeeze.ReasonTooSmall, In: 5, Out: 5})
				default:
					counters.Observe(squeeze.Event{Kind: squeeze.RequestBodyEvent, Coding: squeeze.Gzip, In: 50, Out: 7})
				}
				if g == 0 && i%50 == 0 {
					_ = counters.String()
					_ = counters.WritePrometheus(io.Discard)
				}
			}
		})
	}
	wg.Wait()
	got := readCounters(t, &counters)
	var n0, n1, n2 int64
	for i := range each {
		switch i % 3 {
		case 0:
			n0++
		case 1:
			n1++
		default:
			n2++
		}
	}
	n0, n1, n2 = n0*goroutines, n1*goroutines, n2*goroutines
	if c := got.Compressor; c.Compressed != n0 || c.TotalUncompressedBytes != 100*n0 || c.TotalCompressedBytes != 10*n0 ||
		c.NotCompressed != n1 || c.ContentLengthTooSmall != n1 || c.NotCompressedBytes != 5*n1 {
		t.Errorf("compressor %+v; want %d compressed and %d too small", c, n0, n1)
	}
	if d := got.Decompressor; d.Decompressed != n2 || d.TotalUncompressedBytes != 50*n2 || d.TotalCompressedBytes != 7*n2 {
		t.Errorf("decompressor %+v; want %d bodies", d, n2)
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
		}{{"none", nil}, {"counters", []squeeze.Option{squeeze.WithObserver(counters.Observe)}}} {
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

// The README's table of reasons gives every Reason's Go name and its
// label, the String that the counters export, and nothing else.
func TestReadmeReasonTableMatchesEveryReason(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "| `Reason` | label |")
	if section == "" {
		t.Fatal("README.md has no table with the header | `Reason` | label |")
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
	goNames := reasonConstNames(t)
	var want []string
	for r := squeeze.Reason(0); !strings.HasPrefix(r.String(), "Reason("); r++ {
		if int(r) >= len(goNames) {
			t.Fatalf("Reason %d (%q) has no constant", r, r)
		}
		name := goNames[r]
		want = append(want, name)
		if got, ok := table[name]; !ok {
			t.Errorf("README.md's reason table has no row for %s (label %q)", name, r.String())
		} else if got != r.String() {
			t.Errorf("README.md gives %s the label %q; its String is %q", name, got, r.String())
		}
	}
	if !slices.Equal(order, want) {
		t.Errorf("README.md's reason table lists\n%v\nwant, in the order of their values,\n%v", order, want)
	}
}

// reasonConstNames returns the exported constants of type Reason in the
// order they are declared, which is the order of their values.
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
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Reason" || len(names) > 0 && vs.Type == nil && len(vs.Values) == 0 {
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
// skipped "encoded".
func TestWrappedFileServerReportsOneEvent(t *testing.T) {
	js := textBody(14, 20000)
	var n atomic.Int32
	var evs []squeeze.Event
	var mu sync.Mutex
	m := newMiddleware(t, squeeze.WithObserver(func(e squeeze.Event) {
		n.Add(1)
		mu.Lock()
		evs = append(evs, e)
		mu.Unlock()
	}))
	fsrv, _ := fileServer(t, m, fstest.MapFS{"app.js": {Data: js}})
	h := m.Handler(fsrv)
	rec := serveAt(h, "/app.js", "br")
	checkBody(t, rec.Header(), rec.Body.Bytes(), js)
	if got := n.Load(); got != 1 {
		t.Errorf("%d events for one response, want 1: %+v", got, evs)
	}
}
