// Command example is a small chi server that shows what the squeeze
// middleware does: an HTML page with its script and stylesheet, a JSON API,
// a server-sent-events stream, an upload endpoint that takes compressed
// bodies, and a page left uncompressed because it is small.
//
//	go run ./example
//	go run ./example -addr 127.0.0.1:9000
//
// GET /debug/codings reports, for the client asking, the Content-Encoding of
// the latest response on each path and the Accept-Encoding it sent. A
// browser is told apart by a cookie the demo sets, a client that sends no
// cookie (curl) by its User-Agent and address; ?all=1 lists every client.
//
// GET /debug/counters serves squeeze.Counters as JSON (what expvar would
// publish) and GET /metrics the same counters in the Prometheus text format;
// the page draws them beside what the browser itself measured.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	tick := flag.Duration("tick", time.Second, "interval between server-sent events")
	staticDir := flag.String("static", "", "a deploy directory to serve at /static/ instead of the embedded files")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, a second one kills the process the usual way.
	context.AfterFunc(ctx, stop)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	if err := run(ctx, ln, *tick, *staticDir, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run serves the demo on ln until ctx is done, then shuts down: open event
// streams end at once and other requests get a few seconds to finish, and
// then squeeze's background work is stopped.
func run(ctx context.Context, ln net.Listener, tick time.Duration, staticDir string, out io.Writer) error {
	handler, closeSqueeze, err := newRouter(tick, staticDir)
	if err != nil {
		return errors.Join(err, ln.Close())
	}
	// After Shutdown, which waits for the requests: squeeze's background
	// work (the cache's upgrades) ends with them.
	defer func() { _ = closeSqueeze() }() // it returns nil
	url := "http://" + ln.Addr().String()
	// Messages on out are for the person running the demo; failing to
	// print them is no reason to stop serving.
	_, _ = fmt.Fprintf(out, "squeeze demo listening on %s\n", url)
	_, _ = fmt.Fprintf(out, "try: curl --compressed -s -D - -o /dev/null %s/api/products\n", url)

	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		// Request contexts derive from ctx, so event streams, which run
		// until their client leaves, stop when shutdown begins.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	_, _ = fmt.Fprintln(out, "shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
