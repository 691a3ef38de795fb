package squeeze_test

import (
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/squeezehttp/squeeze"
)

// The migration table (docs/migration.md) holds: each row's
// squeeze code, run as written, sends the codings the peer sends by its
// documented defaults for the same content types, sizes and clients, except
// where the row says how squeeze differs, and there it does what the row
// says. The peers are not imported: their defaults are written down here
// from their documentation and source (gzhttp v1.18, CAFxX/httpcompression
// v0.0.8, chi v5, NYTimes gziphandler v1.1). The echo and gin rows need the
// adapter modules: echo/migration_test.go and gin/migration_test.go run them.

// A migration case is one response: its content type, body size and the
// client's Accept-Encoding.
type migrationCase struct {
	ct   string
	size int
	ae   string
}

// migrationTypes are the content types every row is tried with: the ones
// every peer compresses, the ones only some do, and formats that are
// compressed inside.
var migrationTypes = []string{
	"text/html; charset=utf-8", "text/css", "text/plain", "text/javascript", "text/csv",
	"application/json", "application/javascript", "application/xml", "application/rss+xml",
	"image/svg+xml", "application/x-ndjson", "application/wasm",
	"application/x-protobuf", "application/protobuf", "application/sql", "application/graphql",
	"application/msgpack", "application/x-msgpack", "image/bmp", "image/x-icon",
	"application/octet-stream", "image/png", "image/gif", "font/woff2", "application/pdf",
	"image/jpeg", "video/mp4", "audio/mpeg", "application/zip", "application/gzip",
	"application/x-7z-compressed", "application/zstd",
}

var (
	migrationSizes = []int{200, 1200, 4096}
	migrationAEs   = []string{"gzip", "deflate", "zstd", "br", "gzip, deflate", "gzip, zstd", "gzip, deflate, br, zstd"}
)

// accepts reports whether the Accept-Encoding list ae names coding.
func accepts(ae, coding string) bool {
	for v := range strings.SplitSeq(ae, ",") {
		if strings.TrimSpace(v) == coding {
			return true
		}
	}
	return false
}

// firstAccepted returns the first of offered that ae names, or "".
func firstAccepted(ae string, offered ...string) string {
	for _, coding := range offered {
		if accepts(ae, coding) {
			return coding
		}
	}
	return ""
}

func mediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// squeezeDefaultTypes says whether DefaultContentTypes covers ct.
func squeezeDefaultTypes(ct string) bool { return squeeze.MustNew().Compresses(ct) }

// gzhttpDefaultFilter is gzhttp's DefaultContentTypeFilter: everything but
// video/, audio/, image/jp* and types containing the name of an archive or
// compressor.
func gzhttpDefaultFilter(ct string) bool {
	ct = mediaType(ct)
	for _, s := range []string{"compress", "zip", "snappy", "lzma", "xz", "zstd", "brotli", "stuffit"} {
		if strings.Contains(ct, s) {
			return false
		}
	}
	for _, p := range []string{"video/", "audio/", "image/jp"} {
		if strings.HasPrefix(ct, p) {
			return false
		}
	}
	return true
}

// chiTypes is chi's middleware.Compress content-type check for types, or
// its default list when types is empty: exact media types and "type/*".
func chiTypes(types ...string) func(string) bool {
	if len(types) == 0 {
		types = []string{"text/html", "text/css", "text/plain", "text/javascript", "text/xml",
			"application/javascript", "application/x-javascript", "application/json", "application/xml",
			"application/atom+xml", "application/rss+xml", "image/svg+xml"}
	}
	return func(ct string) bool {
		mt := mediaType(ct)
		for _, t := range types {
			if t == mt || strings.HasSuffix(t, "/*") && strings.HasPrefix(mt, strings.TrimSuffix(t, "*")) {
				return true
			}
		}
		return false
	}
}

// squeezeOwnCodings is what squeeze sends where the row says it offers
// zstd and br too: the client's pick among offered, most preferred first.
func squeezeOwnCodings(c migrationCase, offered ...string) (string, bool) {
	if accepts(c.ae, squeeze.Zstd) || accepts(c.ae, squeeze.Brotli) {
		return firstAccepted(c.ae, offered...), true
	}
	return "", false
}

var defaultOffer = []string{squeeze.Zstd, squeeze.Brotli, squeeze.Gzip}

type migrationRow struct {
	// name is the peer's call being replaced.
	name string
	// code is the row's squeeze code as docs/migration.md shows it, and build
	// runs exactly that code.
	code  string
	build func() (func(http.Handler) http.Handler, error)
	// peer is the coding the peer sends for c by its documented
	// defaults, "" for none.
	peer func(c migrationCase) string
	// differs is the table's word on how squeeze differs: for the cases
	// it covers, it returns what squeeze sends and true.
	differs func(c migrationCase) (string, bool)
}

func TestMigrationRowsKeepThePeersCodings(t *testing.T) {
	if squeeze.RaceEnabled {
		t.Skip("5,376 responses served one after another: nothing for the race detector to see, 20 times the CPU under it (.ci/run runs it without -race)")
	}
	level := 5
	types := []string{"text/*", "application/json"}
	n := 1400
	except := []string{"image/png", "application/zip"}
	exact := []string{"text/html", "application/json", "application/x-protobuf"}
	rows := []migrationRow{{
		name: "gzhttp.GzipHandler(h)",
		code: "squeeze.Handler(h)",
		build: func() (func(http.Handler) http.Handler, error) {
			return func(h http.Handler) http.Handler { return squeeze.Handler(h) }, nil
		},
		peer: func(c migrationCase) string {
			if c.size < 1024 || !gzhttpDefaultFilter(c.ct) {
				return ""
			}
			return firstAccepted(c.ae, squeeze.Zstd, squeeze.Gzip)
		},
		differs: func(c migrationCase) (string, bool) {
			switch {
			case c.size >= 1024 && gzhttpDefaultFilter(c.ct) && !squeezeDefaultTypes(c.ct):
				// octet-stream and formats compressed inside: plain.
				return "", true
			case c.size >= 1024 && squeezeDefaultTypes(c.ct) && accepts(c.ae, squeeze.Brotli) && !accepts(c.ae, squeeze.Zstd):
				return squeeze.Brotli, true
			}
			return "", false
		},
	}, {
		name: "gzhttp ContentTypes(types)",
		code: "squeeze.New(squeeze.WithContentTypes(types...))",
		build: func() (func(http.Handler) http.Handler, error) {
			types := exact
			m, err := squeeze.New(squeeze.WithContentTypes(types...))
			return m.Handler, err
		},
		peer: func(c migrationCase) string {
			if c.size < 1024 || !slices.Contains(exact, mediaType(c.ct)) {
				return ""
			}
			return firstAccepted(c.ae, squeeze.Zstd, squeeze.Gzip)
		},
		differs: func(c migrationCase) (string, bool) {
			if c.size >= 1024 && slices.Contains(exact, mediaType(c.ct)) && accepts(c.ae, squeeze.Brotli) && !accepts(c.ae, squeeze.Zstd) {
				return squeeze.Brotli, true
			}
			return "", false
		},
	}, {
		name: "gzhttp ExceptContentTypes(types)",
		code: `squeeze.New(squeeze.WithContentTypes("*/*"), squeeze.WithoutContentTypes(types...))`,
		build: func() (func(http.Handler) http.Handler, error) {
			types := except
			m, err := squeeze.New(squeeze.WithContentTypes("*/*"), squeeze.WithoutContentTypes(types...))
			return m.Handler, err
		},
		peer: func(c migrationCase) string {
			if c.size < 1024 || slices.Contains(except, mediaType(c.ct)) {
				return ""
			}
			return firstAccepted(c.ae, squeeze.Zstd, squeeze.Gzip)
		},
		differs: func(c migrationCase) (string, bool) {
			if c.size >= 1024 && !slices.Contains(except, mediaType(c.ct)) && accepts(c.ae, squeeze.Brotli) && !accepts(c.ae, squeeze.Zstd) {
				return squeeze.Brotli, true
			}
			return "", false
		},
	}, {
		name: "httpcompression.DefaultAdapter()",
		code: `squeeze.New(squeeze.WithEncodings(squeeze.Zstd, squeeze.Brotli, squeeze.Gzip, squeeze.Deflate), squeeze.WithMinSize(200), squeeze.WithContentTypes("*/*"))`,
		build: func() (func(http.Handler) http.Handler, error) {
			m, err := squeeze.New(squeeze.WithEncodings(squeeze.Zstd, squeeze.Brotli, squeeze.Gzip, squeeze.Deflate), squeeze.WithMinSize(200), squeeze.WithContentTypes("*/*"))
			return m.Handler, err
		},
		// DefaultAdapter: every type (no ContentTypes option), from
		// defaultMinSize (200) bytes, the server's order (PreferServer)
		// by priority: zstd, br, gzip, deflate.
		peer: func(c migrationCase) string {
			if c.size < 200 {
				return ""
			}
			return firstAccepted(c.ae, squeeze.Zstd, squeeze.Brotli, squeeze.Gzip, squeeze.Deflate)
		},
		differs: func(migrationCase) (string, bool) { return "", false },
	}, {
		name: "chi middleware.Compress(level)",
		code: "squeeze.New(squeeze.WithEncodings(squeeze.Zstd, squeeze.Brotli, squeeze.Gzip, squeeze.Deflate), squeeze.WithLevel(squeeze.Gzip, level), squeeze.WithLevel(squeeze.Deflate, level))",
		build: func() (func(http.Handler) http.Handler, error) {
			m, err := squeeze.New(squeeze.WithEncodings(squeeze.Zstd, squeeze.Brotli, squeeze.Gzip, squeeze.Deflate), squeeze.WithLevel(squeeze.Gzip, level), squeeze.WithLevel(squeeze.Deflate, level))
			return m.Handler, err
		},
		peer: func(c migrationCase) string {
			if !chiTypes()(c.ct) {
				return ""
			}
			return firstAccepted(c.ae, squeeze.Gzip, squeeze.Deflate)
		},
		differs: chiDiffers(chiTypes(), squeezeDefaultTypes),
	}, {
		name: "chi middleware.Compress(level, types...)",
		code: "squeeze.WithContentTypes(types...)",
		build: func() (func(http.Handler) http.Handler, error) {
			m, err := squeeze.New(squeeze.WithEncodings(squeeze.Zstd, squeeze.Brotli, squeeze.Gzip, squeeze.Deflate), squeeze.WithLevel(squeeze.Gzip, level), squeeze.WithLevel(squeeze.Deflate, level), squeeze.WithContentTypes(types...))
			return m.Handler, err
		},
		peer: func(c migrationCase) string {
			if !chiTypes(types...)(c.ct) {
				return ""
			}
			return firstAccepted(c.ae, squeeze.Gzip, squeeze.Deflate)
		},
		differs: chiDiffers(chiTypes(types...), chiTypes(types...)),
	}, {
		name: "gziphandler.GzipHandler(h)",
		code: "squeeze.Handler(h)",
		build: func() (func(http.Handler) http.Handler, error) {
			return func(h http.Handler) http.Handler { return squeeze.Handler(h) }, nil
		},
		peer: func(c migrationCase) string {
			if c.size < 1400 {
				return ""
			}
			return firstAccepted(c.ae, squeeze.Gzip)
		},
		differs: allTypesGzipDiffers(1024, squeezeDefaultTypes),
	}, {
		name: "gziphandler.GzipHandlerWithOpts(CompressionLevel(level), MinSize(n), ContentTypes(types))",
		code: "squeeze.New(squeeze.WithLevel(squeeze.Gzip, level), squeeze.WithMinSize(n), squeeze.WithContentTypes(types...))",
		build: func() (func(http.Handler) http.Handler, error) {
			m, err := squeeze.New(squeeze.WithLevel(squeeze.Gzip, level), squeeze.WithMinSize(n), squeeze.WithContentTypes(types...))
			return m.Handler, err
		},
		peer: func(c migrationCase) string {
			if c.size < n || !chiTypes(types...)(c.ct) {
				return ""
			}
			return firstAccepted(c.ae, squeeze.Gzip)
		},
		differs: func(c migrationCase) (string, bool) {
			if c.size >= n && chiTypes(types...)(c.ct) {
				return squeezeOwnCodings(c, defaultOffer...)
			}
			return "", false
		},
	}}

	doc, err := os.ReadFile("docs/migration.md")
	if err != nil {
		t.Fatal(err)
	}
	table := string(doc)
	self, err := os.ReadFile("doc_migration_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			if !strings.Contains(table, "`"+row.code+"`") {
				t.Errorf("docs/migration.md's table has no `%s`", row.code)
			}
			if !strings.Contains(string(self), row.code) {
				t.Errorf("the test does not run the row's code %s", row.code)
			}
			mw, err := row.build()
			if err != nil {
				t.Fatalf("the row's code fails: %v", err)
			}
			same := 0
			for _, ct := range migrationTypes {
				for _, size := range migrationSizes {
					body := textBody(size, size)
					h := mw(writeText(ct, body, 0))
					for _, ae := range migrationAEs {
						c := migrationCase{ct, size, ae}
						want, differs := row.differs(c)
						if peer := row.peer(c); !differs || want == peer {
							want, differs = peer, false
							same++
						}
						rec := serve(h, http.MethodGet, ae)
						if got := rec.Header().Get("Content-Encoding"); got != want {
							what := "as the peer does"
							if differs {
								what = "as docs/migration.md says squeeze differs"
							}
							t.Errorf("%s, %d bytes, Accept-Encoding %q: Content-Encoding %q, want %q (%s)", ct, size, ae, got, want, what)
						}
						checkBody(t, rec.Header(), rec.Body.Bytes(), body)
					}
				}
			}
			if same == 0 {
				t.Error("no case where squeeze does what the peer does")
			}
			t.Logf("%d cases as the peer, %d as the table's difference", same, len(migrationTypes)*len(migrationSizes)*len(migrationAEs)-same)
		})
	}
}

// chiDiffers is how squeeze, with the chi row's code, differs from chi:
// the minimum size (chi has none), zstd and br preferred where accepted,
// and squeezeTypes (a superset of chi's) compressed.
func chiDiffers(chi, squeezeTypes func(string) bool) func(migrationCase) (string, bool) {
	return func(c migrationCase) (string, bool) {
		offered := []string{squeeze.Zstd, squeeze.Brotli, squeeze.Gzip, squeeze.Deflate}
		switch {
		case !squeezeTypes(c.ct):
			return "", false // chi's types are squeeze's: both send it plain
		case c.size < squeeze.DefaultMinSize:
			return "", chi(c.ct) && firstAccepted(c.ae, squeeze.Gzip, squeeze.Deflate) != ""
		case !chi(c.ct):
			return firstAccepted(c.ae, offered...), true
		}
		return squeezeOwnCodings(c, offered...)
	}
}

// allTypesGzipDiffers is how squeeze differs from a peer that gzips every
// type from a minimum size on (gziphandler, echo): squeeze compresses the
// types of squeezeTypes only, from minSize, and offers zstd and br too.
func allTypesGzipDiffers(minSize int, squeezeTypes func(string) bool) func(migrationCase) (string, bool) {
	return func(c migrationCase) (string, bool) {
		squeezes := c.size >= minSize && squeezeTypes(c.ct)
		if !squeezes {
			return "", true
		}
		if coding, ok := squeezeOwnCodings(c, defaultOffer...); ok {
			return coding, true
		}
		return firstAccepted(c.ae, squeeze.Gzip), true
	}
}
