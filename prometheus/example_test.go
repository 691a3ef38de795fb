package squeezeprometheus_test

import (
	"bufio"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/squeezehttp/squeeze"
	squeezeprometheus "github.com/squeezehttp/squeeze/prometheus"
)

// A Collector registers squeeze's Counters with a client_golang registry,
// served here by promhttp at /metrics beside the application.
func ExampleCollector() {
	var counters squeeze.Counters
	m, err := squeeze.New(squeeze.WithObserver(counters.Observer()))
	if err != nil {
		log.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(squeezeprometheus.MustNewCollector(&counters))

	mux := http.NewServeMux()
	mux.Handle("/", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, strings.Repeat("hello, squeeze. ", 200))
	})))
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	for _, ae := range []string{"gzip", "zstd", "gzip"} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("Accept-Encoding", ae)
		mux.ServeHTTP(httptest.NewRecorder(), req)
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	lines := bufio.NewScanner(rec.Body)
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "squeeze_compressor_compressed_total") {
			fmt.Println(lines.Text())
		}
	}
	// Output:
	// squeeze_compressor_compressed_total{coding="gzip"} 2
	// squeeze_compressor_compressed_total{coding="zstd"} 1
}
