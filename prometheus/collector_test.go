package squeezeprometheus_test

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/squeezehttp/squeeze"
	squeezeprometheus "github.com/squeezehttp/squeeze/prometheus"
)

// countedTraffic serves responses of each kind the counters keep apart
// (zstd and gzip, too small, an image, a client accepting no offered
// coding, a gzip request body) through a middleware observed by counters.
func countedTraffic(t *testing.T, counters *squeeze.Counters) {
	t.Helper()
	m := squeeze.MustNew(squeeze.WithEncodings(squeeze.Zstd, squeeze.Gzip), squeeze.WithObserver(counters.Observer()))
	text := strings.Repeat("squeeze counts what it sends. ", 200)
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := text
		switch r.URL.Path {
		case "/small":
			body = "short"
		case "/image":
			w.Header().Set("Content-Type", "image/png")
		case "/upload":
			var b bytes.Buffer
			if _, err := b.ReadFrom(r.Body); err != nil {
				t.Errorf("reading the upload: %v", err)
			}
			body = b.String()
		}
		_, _ = w.Write([]byte(body))
	}))
	var upload bytes.Buffer
	zw := gzip.NewWriter(&upload)
	_, _ = zw.Write([]byte(text))
	_ = zw.Close()
	for _, r := range []struct{ method, path, ae, ce string }{
		{"GET", "/", "zstd", ""},
		{"GET", "/", "gzip", ""},
		{"GET", "/", "gzip", ""},
		{"GET", "/small", "gzip", ""},
		{"GET", "/image", "gzip", ""},
		{"GET", "/", "br", ""},
		{"POST", "/upload", "zstd", "gzip"},
	} {
		var req *http.Request
		if r.ce != "" {
			req = httptest.NewRequest(r.method, r.path, bytes.NewReader(upload.Bytes()))
			req.Header.Set("Content-Encoding", r.ce)
		} else {
			req = httptest.NewRequest(r.method, r.path, nil)
		}
		req.Header.Set("Accept-Encoding", r.ae)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s %s: %d", r.method, r.path, rec.Code)
		}
	}
}

// Registered in a pedantic registry, the Collector gathers exactly what
// Counters.WritePrometheus writes: the same families, help, types, labels
// and values, so a dashboard built on one reads the other; the values are
// those of the traffic served.
func TestCollectorGathersWhatWritePrometheusWrites(t *testing.T) {
	var counters squeeze.Counters
	countedTraffic(t, &counters)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(squeezeprometheus.MustNewCollector(&counters))

	var text bytes.Buffer
	if err := counters.WritePrometheus(&text); err != nil {
		t.Fatal(err)
	}
	if err := testutil.GatherAndCompare(reg, bytes.NewReader(text.Bytes())); err != nil {
		t.Errorf("the registry and WritePrometheus disagree: %v", err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		name, label string
		value       float64
	}{
		{"squeeze_compressor_compressed_total", "gzip", 2},
		{"squeeze_compressor_compressed_total", "zstd", 2}, // the upload's answer too
		{"squeeze_compressor_not_compressed_total", "too_small", 1},
		{"squeeze_compressor_not_compressed_total", "content_type", 1},
		{"squeeze_compressor_not_compressed_total", "not_accepted", 1},
		{"squeeze_decompressor_decompressed_total", "gzip", 1},
	} {
		if v, ok := value(families, want.name, want.label); !ok || v != want.value {
			t.Errorf("%s{%q}: %v (found %v), want %v", want.name, want.label, v, ok, want.value)
		}
	}
	n, err := testutil.GatherAndCount(reg)
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Errorf("gathered %d metrics, want the families of every feature", n)
	}
}

// value returns the value of the sample of family name whose one label has
// the value label.
func value(families []*dto.MetricFamily, name, label string) (float64, bool) {
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if l := m.GetLabel(); len(l) == 1 && l[0].GetValue() == label {
				return m.GetCounter().GetValue(), true
			}
		}
	}
	return 0, false
}

// The names, help and types pass promlint, the Prometheus naming
// conventions: counters end in _total, bytes in _bytes_total, seconds in
// _seconds_total.
func TestCollectorPassesPrometheusLint(t *testing.T) {
	var counters squeeze.Counters
	countedTraffic(t, &counters)
	problems, err := testutil.CollectAndLint(squeezeprometheus.MustNewCollector(&counters))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// Two registries gather from one Counters, and a second Collector of the
// same Counters in one registry is refused at gathering, as metrics
// collected twice are.
func TestCollectorOfOneCountersPerRegistry(t *testing.T) {
	var counters squeeze.Counters
	countedTraffic(t, &counters)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(squeezeprometheus.MustNewCollector(&counters))
	reg.MustRegister(squeezeprometheus.MustNewCollector(&counters))
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "collected before with the same name and label values") {
		t.Errorf("gathering two Collectors of one Counters: %v, want an error naming the duplicate", err)
	}
}

func TestNewCollectorRefusesNilCounters(t *testing.T) {
	if _, err := squeezeprometheus.NewCollector(nil); err == nil || !strings.Contains(err.Error(), "nil") {
		t.Errorf("NewCollector(nil): %v, want an error saying the Counters is nil", err)
	}
}
