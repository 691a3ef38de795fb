package squeeze_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/squeezehttp/squeeze"
)

// New validates every option, so a mistake in the configuration is an error
// at start-up rather than a broken response later.
func ExampleNew() {
	m, err := squeeze.New(
		squeeze.WithEncodings(squeeze.Zstd, squeeze.Gzip),
		squeeze.WithLevel(squeeze.Gzip, 6),
		squeeze.WithMinSize(512),
		squeeze.WithContentTypes("application/json", "text/*"),
	)
	if err != nil {
		log.Fatal(err)
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"items":[%s"last"]}`, strings.Repeat(`"squeeze",`, 100))
	}))

	req := httptest.NewRequest("GET", "/items", nil)
	req.Header.Set("Accept-Encoding", "gzip, zstd;q=0.5")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	fmt.Println("Content-Encoding:", rec.Header().Get("Content-Encoding"))
	fmt.Println("Vary:", rec.Header().Get("Vary"))

	_, err = squeeze.New(squeeze.WithLevel(squeeze.Brotli, 12))
	fmt.Println(err)
	_, err = squeeze.New(squeeze.WithLevel(squeeze.Deflate, 6))
	fmt.Println(err)
	// Output:
	// Content-Encoding: gzip
	// Vary: Accept-Encoding
	// squeeze: WithLevel("br", 12): level must be 0 to 11
	// squeeze: WithLevel("deflate", 6): deflate is not offered (the codings offered are zstd, br, gzip); offer it with squeeze.WithEncodings(squeeze.Zstd, squeeze.Brotli, squeeze.Gzip, squeeze.Deflate)
}

// Handler wraps a handler with the defaults: zstd, br and gzip, bodies of at
// least 1 KiB, text and other compressible types only.
func ExampleHandler() {
	page := strings.Repeat("<p>Compressible HTML, over and over.</p>\n", 100)
	h := squeeze.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page)
	}))

	for _, accept := range []string{"gzip", "br;q=0, gzip;q=0", ""} {
		req := httptest.NewRequest("GET", "/", nil)
		if accept != "" {
			req.Header.Set("Accept-Encoding", accept)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		body := rec.Body.Bytes()
		if rec.Header().Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				log.Fatal(err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				log.Fatal(err)
			}
		}
		fmt.Printf("Accept-Encoding %q: Content-Encoding %q, Vary %q, body intact: %v\n",
			accept, rec.Header().Get("Content-Encoding"), rec.Header().Get("Vary"), string(body) == page)
	}
	// Output:
	// Accept-Encoding "gzip": Content-Encoding "gzip", Vary "Accept-Encoding", body intact: true
	// Accept-Encoding "br;q=0, gzip;q=0": Content-Encoding "", Vary "Accept-Encoding", body intact: true
	// Accept-Encoding "": Content-Encoding "", Vary "Accept-Encoding", body intact: true
}

// A Middleware wraps a whole http.ServeMux. Small bodies go out unchanged
// with their Content-Length; types that are already compressed pass straight
// through, as the handler wrote them.
func ExampleMiddleware_Handler() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /report", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/csv")
		for i := range 500 {
			fmt.Fprintf(w, "%d,squeeze,%d\n", i, i*i)
		}
	})
	mux.HandleFunc("GET /ping", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "pong")
	})
	mux.HandleFunc("GET /logo.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("Content-Length", "4096")
		w.Write(make([]byte, 4096))
	})

	m := squeeze.MustNew(squeeze.WithEncodings(squeeze.Zstd, squeeze.Gzip))
	handler := m.Handler(mux)
	// In a program: log.Fatal(http.ListenAndServe(":8080", handler))

	srv := httptest.NewServer(handler)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	for _, path := range []string{"/report", "/ping", "/logo.png"} {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("Accept-Encoding", "zstd, gzip")
		res, err := client.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		length := "unknown"
		if res.ContentLength >= 0 && res.Header.Get("Content-Encoding") == "" {
			length = fmt.Sprint(res.ContentLength)
		}
		fmt.Printf("%s: %d, Content-Encoding %q, plain length %s\n",
			path, res.StatusCode, res.Header.Get("Content-Encoding"), length)
	}
	// Output:
	// /report: 200, Content-Encoding "zstd", plain length unknown
	// /ping: 200, Content-Encoding "", plain length 4
	// /logo.png: 200, Content-Encoding "", plain length 4096
}

// A Middleware with a Cache, a shared store, learned dictionaries or a
// FileServer works in the background too: re-encoding what is asked often,
// writing to the store. Close it after the server: Shutdown waits for the
// requests in flight, which may start such work, and Close stops it and
// waits for it, cancelling the calls to the store under way.
func ExampleMiddleware_Close() {
	cache, err := squeeze.NewCache(64 << 20)
	if err != nil {
		log.Fatal(err)
	}
	m := squeeze.MustNew(squeeze.WithCache(cache))
	page := strings.Repeat("<p>squeeze</p>\n", 300)
	srv := &http.Server{Handler: m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, page)
	}))}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	for range 4 { // the third hit queues the page's upgrade to zstd's best level
		req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/", nil)
		req.Header.Set("Accept-Encoding", "zstd")
		res, err := client.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}

	// In a program, on SIGTERM (signal.NotifyContext):
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("Serve:", <-served)
	fmt.Println("Close:", m.Close())
	// Output:
	// Serve: http: Server closed
	// Close: <nil>
}

// An observer's Response hook sees every response once it is complete: the coding sent,
// or why none was, and the bytes before and after.
func ExampleWithObserver() {
	m := squeeze.MustNew(squeeze.WithObserver(squeeze.Observer{
		Response: func(e squeeze.ResponseInfo) {
			if e.Coding != "" {
				fmt.Printf("response: %d bytes encoded as %s, smaller: %v\n", e.In, e.Coding, e.Out < e.In)
			} else {
				fmt.Printf("response: %d bytes sent plain: %s\n", e.In, e.Skipped)
			}
		},
	}))
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, strings.Repeat("squeeze ", int(r.ContentLength)))
	}))
	for _, size := range []int{1000, 10} {
		req := httptest.NewRequest("POST", "/", strings.NewReader(strings.Repeat("x", size)))
		req.Header.Set("Accept-Encoding", "gzip")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	// Output:
	// response: 8000 bytes encoded as gzip, smaller: true
	// response: 80 bytes sent plain: too_small
}

// Counters aggregates the events into Envoy's counters, per coding and per
// reason. Publish it with expvar, or serve it to Prometheus; neither needs
// a metrics library.
func ExampleCounters() {
	var counters squeeze.Counters
	// In a program: expvar.Publish("squeeze", &counters), and
	//	http.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
	//		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	//		counters.WritePrometheus(w)
	//	})
	m := squeeze.MustNew(squeeze.WithObserver(counters.Observer()))
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, strings.Repeat("<p>squeeze</p>\n", int(r.ContentLength)))
	}))
	for _, n := range []int{500, 500, 2} {
		req := httptest.NewRequest("POST", "/", strings.NewReader(strings.Repeat("x", n)))
		req.Header.Set("Accept-Encoding", "zstd")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}

	var text strings.Builder
	counters.WritePrometheus(&text)
	for line := range strings.Lines(text.String()) {
		if strings.HasPrefix(line, "squeeze_compressor_compressed_total") ||
			strings.HasPrefix(line, "squeeze_compressor_uncompressed_bytes_total") ||
			strings.HasPrefix(line, `squeeze_compressor_not_compressed_total{reason="too_small"}`) {
			fmt.Print(line)
		}
	}
	// Output:
	// squeeze_compressor_compressed_total{coding="zstd"} 2
	// squeeze_compressor_uncompressed_bytes_total{coding="zstd"} 15000
	// squeeze_compressor_not_compressed_total{reason="too_small"} 1
}
