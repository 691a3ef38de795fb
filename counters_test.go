package squeeze_test

import (
	"bytes"
	"encoding/json"
	"expvar"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/squeezehttp/squeeze"
)

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
	m := newMiddleware(t, squeeze.WithEncodings(squeeze.Zstd, squeeze.Gzip), squeeze.WithObserver(counters.Observer()))
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
		{"zstd", "text/html", textBody(10, 5000), squeeze.Reason(0)},
		{"zstd", "text/html", textBody(11, 90<<10), squeeze.Reason(0)},
		{"gzip", "application/json", textBody(12, 3000), squeeze.Reason(0)},
		{"gzip", "text/plain", textBody(13, 200), squeeze.ReasonTooSmall},
		{"zstd", "text/plain", textBody(14, 10), squeeze.ReasonTooSmall},
		{"zstd", "image/png", randomBody(15, 4000), squeeze.ReasonContentType},
		{"br", "text/plain", textBody(16, 4000), squeeze.ReasonNotAccepted},
	}
	for _, r := range responses {
		rec := serve(m.Handler(writeText(r.ct, r.body, 1000)), "GET", r.ae)
		ce := rec.Header().Get("Content-Encoding")
		if (ce == "") != (r.reason != squeeze.Reason(0)) {
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
	for r := squeeze.Reason(0) + 1; r < squeeze.ReasonCount; r++ {
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
	name := regexp.MustCompile(`^squeeze_((compressor|decompressor|shared_store|learned_dictionary)_[a-z_]+_total|shared_store_breaker_open)$`)
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
	obs := counters.Observer()
	const goroutines, each = 8, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				switch i % 3 {
				case 0:
					obs.Response(squeeze.ResponseInfo{Coding: squeeze.Zstd, In: 100, Out: 10})
				case 1:
					obs.Response(squeeze.ResponseInfo{Skipped: squeeze.ReasonTooSmall, In: 5, Out: 5})
				default:
					obs.RequestBody(squeeze.RequestBodyInfo{Coding: squeeze.Gzip, Decoded: 50, Compressed: 7})
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
