package squeezecaddy_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	dto "github.com/prometheus/client_model/go"

	squeezecaddy "github.com/squeezehttp/squeeze/caddy"
)

// gathered returns the value of the metric name with the label
// label=value in what reg gathers, and whether it has one.
func gathered(t *testing.T, ctx caddy.Context, name, label, value string) (float64, bool) {
	t.Helper()
	families, err := ctx.GetMetricsRegistry().Gather()
	if err != nil {
		t.Fatalf("Caddy's registry: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return metricValue(m), true
				}
			}
		}
	}
	return 0, false
}

func metricValue(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return m.GetGauge().GetValue()
}

// With metrics on, squeeze's counters appear in Caddy's own (pedantic)
// Prometheus registry, shared by the squeeze handlers of one config and
// gone once the last is cleaned up; a stream (a body longer than the
// buffer) is encoded once and then served from the cache: with
// trusted_etags by its strong ETag, as file_server sends, and without it
// by its request, its bytes compared.
func TestHandlerMetricsInCaddysRegistryCountTrustedStreamHits(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	body := []byte(strings.Repeat("export function squeeze(a, b) { return a + b; }\n", 4000)) // 196 KB
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Content-Type", "text/javascript")
		w.Header().Set("ETag", `"t4n3bx2g1"`) // file_server's: modification time and size
		for p := body; len(p) > 0; p = p[min(len(p), 8<<10):] {
			if _, err := w.Write(p[:min(len(p), 8<<10)]); err != nil {
				return err
			}
		}
		return nil
	})
	var hs []*squeezecaddy.Handler
	for _, trusted := range []bool{true, false} {
		h := &squeezecaddy.Handler{CacheSize: 64 << 20, TrustedETags: trusted, Metrics: true}
		if err := h.Provision(ctx); err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	for i, h := range hs {
		for range 3 {
			req := httptest.NewRequest(http.MethodGet, "/app.js", nil)
			req.Header.Set("Accept-Encoding", "zstd")
			rec := httptest.NewRecorder()
			if err := h.ServeHTTP(rec, req, next); err != nil {
				t.Fatal(err)
			}
			if ce := rec.Header().Get("Content-Encoding"); ce != "zstd" {
				t.Fatalf("handler %d: Content-Encoding %q, want zstd", i, ce)
			}
		}
	}
	if n, _ := gathered(t, ctx, "squeeze_compressor_compressed_total", "coding", "zstd"); n != 6 {
		t.Errorf("squeeze_compressor_compressed_total{coding=\"zstd\"} = %v, want the 6 responses of both handlers", n)
	}
	// Each handler: the second and third from the cache.
	if n, _ := gathered(t, ctx, "squeeze_compressor_cached_total", "coding", "zstd"); n != 4 {
		t.Errorf("squeeze_compressor_cached_total{coding=\"zstd\"} = %v, want 4: both handlers' hits", n)
	}
	for _, h := range hs {
		if err := h.Cleanup(); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := gathered(t, ctx, "squeeze_compressor_compressed_total", "coding", "zstd"); ok {
		t.Error("squeeze's metrics outlive the handlers that counted them")
	}
}

// A config whose squeeze handler has metrics on fails to load without a
// metrics registry, and trusted_etags without a cache fails to load,
// each with its reason; length hiding and learned dictionaries reach
// squeeze, which refuses what it would refuse from Go.
func TestHandlerRefusesEdgeSettingsItCannotKeep(t *testing.T) {
	for _, tc := range []struct {
		h    squeezecaddy.Handler
		want string
	}{
		{squeezecaddy.Handler{Metrics: true}, "no metrics registry"},
		{squeezecaddy.Handler{TrustedETags: true}, "trusted_etags needs a cache"},
		{squeezecaddy.Handler{LengthHiding: 5000}, "WithLengthHiding(5000)"},
		{squeezecaddy.Handler{Learned: []squeezecaddy.Learned{{Pattern: "/api/*", Samples: 2}}}, "LearnedSamples(2)"},
		{squeezecaddy.Handler{Learned: []squeezecaddy.Learned{{Pattern: "/api/*", Path: "nope"}}}, `LearnedPath("nope")`},
	} {
		h := tc.h
		err := h.Provision(caddy.Context{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Provision error %v, want one with %q", mustJSONString(h), err, tc.want)
		}
	}
	ok := squeezecaddy.Handler{LengthHiding: 32, Learned: []squeezecaddy.Learned{{Pattern: "/api/*", Samples: 8}}}
	provisioned(t, &ok)
}

func mustJSONString(h squeezecaddy.Handler) string { return fmt.Sprintf("%+v", h) }
