package bench

import (
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/klauspost/compress/gzhttp"
	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/writers"
)

// demoStatic reads the demo's static directory, siblings included, into
// memory (as its embed.FS holds it), and returns it with the plain files
// alone.
func demoStatic(b *testing.B) (all, plain fstest.MapFS) {
	all, plain = fstest.MapFS{}, fstest.MapFS{}
	err := fs.WalkDir(os.DirFS("../example/static"), ".", func(name string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(path.Join("../example/static", name))
		if err != nil {
			return err
		}
		all[name] = &fstest.MapFile{Data: data}
		if ext := path.Ext(name); ext != ".br" && ext != ".zst" && ext != ".gz" {
			plain[name] = &fstest.MapFile{Data: data}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return all, plain
}

// BenchmarkFileServer serves the demo's static assets in rotation through
// squeeze's FileServer (siblings made by squeeze precompress, as the demo
// embeds them), http.FileServer behind squeeze's Middleware, and
// http.FileServer behind gzhttp with its defaults, each request asking
// for one coding. It reports each side's requests per second and the
// bytes on the wire per request, and checks every body round-trips.
func BenchmarkFileServer(b *testing.B) {
	all, plain := demoStatic(b)
	m := squeeze.MustNew()
	gz, err := gzhttp.NewWrapper()
	if err != nil {
		b.Fatal(err)
	}
	impls := []struct {
		name string
		h    http.Handler
	}{
		{"FileServer", m.FileServer(all)},
		{"Middleware", m.Handler(http.FileServer(http.FS(plain)))},
		{"gzhttp", gz(http.FileServer(http.FS(plain)))},
	}
	var names []string
	for name, f := range plain {
		if len(f.Data) >= 1024 {
			names = append(names, name)
		}
	}
	for _, coding := range []string{"br", "zstd", "gzip"} {
		b.Run("coding="+coding, func(b *testing.B) {
			for _, name := range names {
				b.Run("asset="+name, func(b *testing.B) {
					want := plain[name].Data
					target := "/" + name
					if name == "index.html" {
						target = "/" // http.FileServer redirects index.html
					}
					r, _ := http.NewRequest(http.MethodGet, target, nil)
					r.Header.Set("Accept-Encoding", coding)
					w := NewResponseWriter(true)
					wire := make([]int64, len(impls))
					for j, impl := range impls {
						w.Reset()
						impl.h.ServeHTTP(w, r)
						if err := checkFile(w, want); err != nil {
							b.Fatalf("%s: %v", impl.name, err)
						}
						wire[j] = w.Written()
					}
					w = NewResponseWriter(false)
					spent := make([]time.Duration, len(impls))
					for i := 0; b.Loop(); i++ {
						t0 := time.Now()
						for k := range impls {
							j := (i + k) % len(impls)
							w.Reset()
							impls[j].h.ServeHTTP(w, r)
							t1 := time.Now()
							spent[j] += t1.Sub(t0)
							t0 = t1
						}
					}
					for j, impl := range impls {
						b.ReportMetric(float64(b.N)/spent[j].Seconds(), impl.name+"-req/s")
						b.ReportMetric(float64(wire[j]), impl.name+"-wire-B")
					}
					b.ReportMetric(0, "ns/op")
				})
			}
		})
	}
}

// checkFile checks that w holds a 200 whose body decodes to want.
func checkFile(w *ResponseWriter, want []byte) error {
	if w.Status() != http.StatusOK {
		return &checkError{"status " + http.StatusText(w.Status())}
	}
	body := w.Body()
	if ce := w.Header().Get("Content-Encoding"); ce != "" {
		dec, err := writers.NewDecoder(ce)
		if err != nil {
			return err
		}
		if err := dec.Reset(bytes.NewReader(body)); err != nil {
			return err
		}
		if body, err = io.ReadAll(dec); err != nil {
			return err
		}
	}
	if !bytes.Equal(body, want) {
		return &checkError{"body differs from the file"}
	}
	return nil
}

type checkError struct{ s string }

func (e *checkError) Error() string { return e.s }

// BenchmarkPrecompress encodes the demo's assets as squeeze precompress
// does, at the best level of each coding, and reports the bytes out per
// byte in and the time per asset set.
func BenchmarkPrecompress(b *testing.B) {
	_, plain := demoStatic(b)
	for _, coding := range []string{"br", "zstd", "gzip"} {
		b.Run("coding="+coding, func(b *testing.B) {
			enc, err := writers.NewEncoder(coding, squeeze.BestLevel(coding))
			if err != nil {
				b.Fatal(err)
			}
			var in, out int64
			for b.Loop() {
				in, out = 0, 0
				for name, f := range plain {
					if len(f.Data) < 1024 || strings.HasSuffix(name, ".png") {
						continue
					}
					var buf bytes.Buffer
					enc.Reset(&buf)
					_, _ = enc.Write(f.Data)
					_ = enc.Close()
					in += int64(len(f.Data))
					out += int64(buf.Len())
				}
			}
			b.ReportMetric(float64(in), "plain-B")
			b.ReportMetric(float64(out), "out-B")
		})
	}
}
