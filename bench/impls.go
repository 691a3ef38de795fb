package bench

import (
	"fmt"
	"io"
	"net/http"

	"github.com/CAFxX/httpcompression"
	hcbrotli "github.com/CAFxX/httpcompression/contrib/andybalholm/brotli"
	hcgzip "github.com/CAFxX/httpcompression/contrib/klauspost/gzip"
	hczstd "github.com/CAFxX/httpcompression/contrib/klauspost/zstd"
	"github.com/NYTimes/gziphandler"
	"github.com/andybalholm/brotli"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/klauspost/compress/gzhttp"
	kpgzip "github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/pool"
	"github.com/squeezehttp/squeeze/writers"
)

// Codings lists the codings compared, in squeeze's order of preference.
// deflate is left out: squeeze does not offer it by default and no peer
// user would choose it over gzip.
func Codings() []string { return []string{squeeze.Zstd, squeeze.Brotli, squeeze.Gzip} }

// Settings squeeze's encoders use, which the peers are given where they
// accept them (see writers/encoder.go).
const (
	zstdWindow   = 128 << 10
	brotliLGWin  = 18
	equalMinSize = 1024 // squeeze's WithMinSize default
)

// Level returns squeeze's default level for coding, the level every
// implementation runs at in the equal-settings comparison.
func Level(coding string) int {
	r, err := writers.Levels(coding)
	if err != nil {
		panic(err) // only called with the codings above
	}
	return r.Default
}

// Impl is one implementation under test for one coding: a middleware, or
// the floor, which is no middleware at all.
type Impl struct {
	// Name is the value of the impl= key in benchmark names.
	Name string
	// Coding is the content coding requested and expected.
	Coding string
	// Settings says how the implementation is configured, for the tables.
	Settings string

	wrap  func(http.Handler) http.Handler
	floor *pool.Encoders
}

// Serve returns a handler that sends body, declaring its content type, in
// one Write, through the implementation.
func (i *Impl) Serve(body Body) http.Handler {
	if i.floor != nil {
		return floorHandler(i.floor, body)
	}
	return i.wrap(appHandler(body))
}

// Stream returns a handler that writes chunk, flushes, reports on started
// and then holds the response open until release is closed, as a server-sent
// events stream would between events.
func (i *Impl) Stream(chunk Body, started chan<- struct{}, release <-chan struct{}) http.Handler {
	if i.floor != nil {
		return floorStream(i.floor, chunk, started, release)
	}
	return i.wrap(streamHandler(chunk, started, release))
}

func appHandler(body Body) http.Handler {
	ct := []string{body.ContentType}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		// Assigning a shared slice keeps the handler's own cost out of
		// every implementation's allocation count.
		w.Header()["Content-Type"] = ct
		must(w.Write(body.Data))
	})
}

// check panics on an error, as must does. The handlers write to in-memory
// recorders or loopback connections the benchmarks hold open, which do not
// fail, so an error is a bug in squeeze or in the harness, never a condition
// to carry on from; checking costs nothing measurable and allocates nothing.
func check(err error) {
	if err != nil {
		panic(err)
	}
}

func streamHandler(chunk Body, started chan<- struct{}, release <-chan struct{}) http.Handler {
	ct := []string{chunk.ContentType}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header()["Content-Type"] = ct
		must(w.Write(chunk.Data))
		check(http.NewResponseController(w).Flush())
		started <- struct{}{}
		<-release
	})
}

// floorHandler is the cost a perfect middleware approaches: a pooled encoder
// of the same codec and level writing the same bytes, with only the headers
// a middleware must set and none of the decisions it must make.
func floorHandler(p *pool.Encoders, body Body) http.Handler {
	ct := []string{body.ContentType}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		e := startFloor(w, p, ct)
		must(e.Write(body.Data))
		check(e.Close())
		p.Put(e)
	})
}

// startFloor sets the headers every encoded response carries, sends them,
// and returns a pooled encoder writing to w.
func startFloor(w http.ResponseWriter, p *pool.Encoders, ct []string) *pool.Encoder {
	h := w.Header()
	h["Content-Type"] = ct
	h.Set("Content-Encoding", p.Coding())
	h.Set("Vary", "Accept-Encoding")
	h.Del("Content-Length")
	w.WriteHeader(http.StatusOK)
	e, err := p.Get(w)
	if err != nil {
		panic(err)
	}
	return e
}

func floorStream(p *pool.Encoders, chunk Body, started chan<- struct{}, release <-chan struct{}) http.Handler {
	ct := []string{chunk.ContentType}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		e := startFloor(w, p, ct)
		must(e.Write(chunk.Data))
		check(e.Flush())
		w.(http.Flusher).Flush()
		started <- struct{}{}
		<-release
		check(e.Close())
		p.Put(e)
	})
}

// Equal returns the implementations that can serve coding, each configured
// at squeeze's default level for it, with squeeze's encoder settings where
// the implementation accepts them, and the same minimum size where it has
// one. The floor comes first and squeeze second.
func Equal(coding string) ([]*Impl, error) {
	level := Level(coding)
	var out []*Impl
	add := func(name, settings string, wrap func(http.Handler) http.Handler, err error) error {
		if err != nil {
			return fmt.Errorf("bench: %s %s: %w", name, coding, err)
		}
		out = append(out, &Impl{Name: name, Coding: coding, Settings: settings, wrap: wrap})
		return nil
	}

	fp, err := pool.NewEncoders(coding, level)
	if err != nil {
		return nil, err
	}
	out = append(out, &Impl{Name: "floor", Coding: coding, floor: fp,
		Settings: fmt.Sprintf("squeeze/pool encoder, %s level %d", coding, level)})

	m, err := squeeze.New(squeeze.WithEncodings(coding), squeeze.WithLevel(coding, level))
	if err := add("squeeze", fmt.Sprintf("WithEncodings(%q), WithLevel(%q, %d)", coding, coding, level), handlerOf(m), err); err != nil {
		return nil, err
	}

	switch coding {
	case squeeze.Gzip:
		gz, err := gzhttp.NewWrapper(gzhttp.CompressionLevel(level), gzhttp.MinSize(equalMinSize))
		if err := add("gzhttp", fmt.Sprintf("CompressionLevel(%d), MinSize(%d)", level, equalMinSize), httpHandlerOf(gz), err); err != nil {
			return nil, err
		}
		hc, err := httpcompression.Adapter(
			httpcompression.GzipCompressor(must(hcgzip.New(hcgzip.Options{Level: level}))),
			httpcompression.MinSize(equalMinSize))
		if err := add("httpcompression", fmt.Sprintf("contrib/klauspost/gzip level %d, MinSize(%d)", level, equalMinSize), hc, err); err != nil {
			return nil, err
		}
		if err := add("chi", fmt.Sprintf("Compress(%d): compress/gzip (stdlib)", level), middleware.Compress(level), nil); err != nil {
			return nil, err
		}
		c := middleware.NewCompressor(level)
		c.SetEncoder(squeeze.Gzip, func(w io.Writer, level int) io.Writer {
			return must(kpgzip.NewWriterLevel(w, level))
		})
		if err := add("chi-kp", fmt.Sprintf("NewCompressor(%d) + SetEncoder(klauspost gzip)", level), c.Handler, nil); err != nil {
			return nil, err
		}
		ny, err := gziphandler.GzipHandlerWithOpts(gziphandler.CompressionLevel(level), gziphandler.MinSize(equalMinSize))
		if err := add("nytimes", fmt.Sprintf("CompressionLevel(%d), MinSize(%d): compress/gzip (stdlib)", level, equalMinSize), ny, err); err != nil {
			return nil, err
		}

	case squeeze.Zstd:
		speed := zstd.EncoderLevelFromZstd(level)
		gz, err := gzhttp.NewWrapper(gzhttp.EnableGzip(false), gzhttp.ZstdCompressionLevel(int(speed)), gzhttp.MinSize(equalMinSize))
		// gzhttp's zstd writers are fixed at concurrency 1, a 128 KiB
		// window and lower encoder memory: squeeze's settings.
		if err := add("gzhttp", fmt.Sprintf("ZstdCompressionLevel(%d) (%s), MinSize(%d)", speed, speed, equalMinSize), httpHandlerOf(gz), err); err != nil {
			return nil, err
		}
		zc, err := hczstd.New(zstdOptions(speed)...)
		if err != nil {
			return nil, err
		}
		hc, err := httpcompression.Adapter(httpcompression.ZstandardCompressor(zc), httpcompression.MinSize(equalMinSize))
		if err := add("httpcompression", fmt.Sprintf("contrib/klauspost/zstd %s, squeeze's window and memory options, MinSize(%d)", speed, equalMinSize), hc, err); err != nil {
			return nil, err
		}
		c := middleware.NewCompressor(level)
		c.SetEncoder(squeeze.Zstd, func(w io.Writer, _ int) io.Writer {
			return must(zstd.NewWriter(w, zstdOptions(speed)...))
		})
		if err := add("chi", fmt.Sprintf("SetEncoder(klauspost zstd %s, squeeze's window and memory options)", speed), c.Handler, nil); err != nil {
			return nil, err
		}

	case squeeze.Brotli:
		opts := brotli.WriterOptions{Quality: level, LGWin: brotliLGWin}
		bc, err := hcbrotli.New(opts)
		if err != nil {
			return nil, err
		}
		hc, err := httpcompression.Adapter(httpcompression.BrotliCompressor(bc), httpcompression.MinSize(equalMinSize))
		if err := add("httpcompression", fmt.Sprintf("contrib/andybalholm/brotli quality %d lgwin %d, MinSize(%d)", level, brotliLGWin, equalMinSize), hc, err); err != nil {
			return nil, err
		}
		c := middleware.NewCompressor(level)
		c.SetEncoder(squeeze.Brotli, func(w io.Writer, _ int) io.Writer {
			return brotli.NewWriterOptions(w, opts)
		})
		if err := add("chi", fmt.Sprintf("SetEncoder(andybalholm brotli quality %d lgwin %d)", level, brotliLGWin), c.Handler, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Squeeze returns squeeze as Equal configures it for coding, with opts
// added: BenchmarkObserverVersusFloor adds WithObserver.
func Squeeze(coding string, opts ...squeeze.Option) (*Impl, error) {
	level := Level(coding)
	m, err := squeeze.New(append([]squeeze.Option{squeeze.WithEncodings(coding), squeeze.WithLevel(coding, level)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("bench: squeeze %s: %w", coding, err)
	}
	return &Impl{Name: "squeeze", Coding: coding, wrap: m.Handler,
		Settings: fmt.Sprintf("WithEncodings(%q), WithLevel(%q, %d) and %d more options", coding, coding, level, len(opts))}, nil
}

// Defaults returns squeeze and each peer that can serve coding as its users
// get it: constructed with no options (chi, which has no default level, is
// left out; its documentation's suggested level 5 is the equal-settings
// configuration).
func Defaults(coding string) ([]*Impl, error) {
	var out []*Impl
	add := func(name, settings string, wrap func(http.Handler) http.Handler, err error) error {
		if err != nil {
			return fmt.Errorf("bench: %s %s defaults: %w", name, coding, err)
		}
		out = append(out, &Impl{Name: name, Coding: coding, Settings: settings, wrap: wrap})
		return nil
	}
	m, err := squeeze.New()
	if err := add("squeeze", fmt.Sprintf("New(): %s level %d", coding, Level(coding)), handlerOf(m), err); err != nil {
		return nil, err
	}
	hc, hcErr := httpcompression.DefaultAdapter()
	switch coding {
	case squeeze.Gzip:
		gz, err := gzhttp.NewWrapper()
		if err := add("gzhttp", "NewWrapper(): klauspost gzip level 5 (DefaultCompression)", httpHandlerOf(gz), err); err != nil {
			return nil, err
		}
		if err := add("httpcompression", "DefaultAdapter(): compress/gzip (stdlib) level 6, MinSize 200", hc, hcErr); err != nil {
			return nil, err
		}
		if err := add("nytimes", "GzipHandler: compress/gzip (stdlib) level 6, MinSize 1400", gziphandler.GzipHandler, nil); err != nil {
			return nil, err
		}
	case squeeze.Zstd:
		gz, err := gzhttp.NewWrapper()
		if err := add("gzhttp", "NewWrapper(): klauspost zstd SpeedFastest, 128 KiB window", httpHandlerOf(gz), err); err != nil {
			return nil, err
		}
		if err := add("httpcompression", "DefaultAdapter(): klauspost zstd SpeedDefault, library defaults (8 MiB window, concurrency GOMAXPROCS)", hc, hcErr); err != nil {
			return nil, err
		}
	case squeeze.Brotli:
		if err := add("httpcompression", "DefaultAdapter(): andybalholm brotli quality 6, lgwin 22", hc, hcErr); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// zstdOptions are squeeze's zstd encoder options (writers/encoder.go) at
// speed, for the peers that take encoder options.
func zstdOptions(speed zstd.EncoderLevel) []zstd.EOption {
	return []zstd.EOption{
		zstd.WithEncoderLevel(speed),
		zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(zstdWindow),
		zstd.WithLowerEncoderMem(true),
	}
}

func handlerOf(m *squeeze.Middleware) func(http.Handler) http.Handler {
	if m == nil {
		return nil
	}
	return m.Handler
}

func httpHandlerOf(wrap func(http.Handler) http.HandlerFunc) func(http.Handler) http.Handler {
	if wrap == nil {
		return nil
	}
	return func(h http.Handler) http.Handler { return wrap(h) }
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
