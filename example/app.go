package main

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/squeezehttp/squeeze"
)

// The static directory ships with .br, .zst and .gz siblings at the best
// levels, made by squeeze's command and served byte for byte by
// FileServer. Run go generate after changing a file there; FileServer
// never serves a sibling that no longer matches its file.
//
//go:generate go run github.com/squeezehttp/squeeze/cmd/squeeze precompress static
//go:embed static
var static embed.FS

// routeStatic mounts the static files on mux exactly as the README's
// "Static files" section shows (readme_test.go holds the two together):
// the embedded ones, or with dir those of a deploy directory. os.OpenRoot
// keeps every path inside dir: a symbolic link that leads out of it is
// refused, where fs.Sub(os.DirFS(...)) would follow it.
func routeStatic(mux *http.ServeMux, m *squeeze.Middleware, dir string) error {
	sub, _ := fs.Sub(static, "static")
	if dir != "" {
		root, err := os.OpenRoot(dir)
		if err != nil {
			return err
		}
		sub = root.FS()
	}
	files := http.StripPrefix("/static/", m.FileServer(sub))
	mux.Handle("/static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The same bytes for every user: public, so that they stay
		// dictionaries for a browser that sends a session cookie.
		w.Header().Set("Cache-Control", "public, max-age=86400")
		files.ServeHTTP(w, r)
	}))
	return nil
}

// maxUpload caps every upload, compressed or not. squeeze enforces it on the
// decoded bytes of compressed bodies; http.MaxBytesReader covers plain ones.
const maxUpload = 10 << 20 // squeeze's WithMaxDecompressedSize default

// newRouter returns the demo's routes behind squeeze, and behind them a
// recorder of the coding each response used, with what stops squeeze's
// background work once the server has shut down. tick is the interval
// between server-sent events; staticDir, if not "", a deploy directory
// /static/ serves instead of the embedded files.
func newRouter(tick time.Duration, staticDir string) (http.Handler, func() error, error) {
	// counters aggregates what squeeze reports of every response and
	// decoded upload, for /debug/counters, /metrics and the page's chart.
	counters := new(squeeze.Counters)
	// The cache compresses each page, script and API answer once, and
	// re-encodes the popular ones at the best level in the background, as
	// compress's work, which compress.Close stops.
	cache, err := squeeze.NewCache(16 << 20)
	if err != nil {
		return nil, nil, err
	}
	compress, err := squeeze.New(append(dictionaryOptions(), squeeze.WithMaxDecompressedSize(maxUpload),
		squeeze.WithObserver(counters.Observer()), squeeze.WithCache(cache))...)
	if err != nil {
		return nil, nil, err
	}
	assets, err := loadAssets(static, "static")
	if err != nil {
		return nil, nil, err
	}
	products, err := json.Marshal(catalog())
	if err != nil {
		return nil, nil, err
	}
	var codings codingLog

	r := chi.NewRouter()
	// The recorder sits outside squeeze so that it sees the headers squeeze
	// sent, not the ones the handlers set.
	r.Use(codings.middleware)
	r.Use(compress.Handler)
	// chi routes HEAD only where asked; GetHead answers it with the GET
	// handlers, as net/http's ServeMux does.
	r.Use(middleware.GetHead)

	r.Get("/", assets.handler("index.html"))
	r.Get("/small", assets.handler("small.html"))
	// FileServer is a complete handler; behind compress.Handler, as here,
	// its encoded responses pass through untouched. It is mounted as the
	// README mounts it, behind a Cache-Control that says public: the demo
	// sets a cookie on every path, and an answer to a request with Cookie
	// becomes a dictionary only when it says so.
	files := http.NewServeMux()
	if err := routeStatic(files, compress, staticDir); err != nil {
		return nil, nil, err
	}
	r.Handle("/static/*", files)
	r.Get("/api/products", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(products) // an error means the client went away: nothing to do
	})
	r.Get("/events", func(w http.ResponseWriter, r *http.Request) {
		serveEvents(w, r, tick)
	})
	r.Post("/upload", upload)
	r.Get("/debug/codings", codings.serve)
	if err := routeDictionaries(r, compress, assets); err != nil {
		return nil, nil, err
	}
	r.Get("/debug/counters", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = io.WriteString(w, counters.String())
	})
	r.Get("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_ = counters.WritePrometheus(w) // an error means the client went away
	})
	r.Get("/debug/cache", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(cache.Stats())
	})
	return r, compress.Close, nil
}

// asset is an embedded file with a strong validator, so that conditional
// requests show how squeeze keeps ETags distinct per coding.
type asset struct {
	data []byte
	etag string
}

type assets map[string]asset

func loadAssets(fsys fs.FS, dir string) (assets, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	a := assets{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		a[e.Name()] = asset{data: data, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	return a, nil
}

// serve answers with the named asset. http.ServeContent handles Range and
// the conditional headers against the ETag set here.
func (a assets) serve(w http.ResponseWriter, r *http.Request, name string) {
	f, ok := a[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", f.etag)
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.data))
}

// handler serves the named asset on a fixed route.
func (a assets) handler(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { a.serve(w, r, name) }
}

// product is one entry of the JSON API's catalogue.
type product struct {
	SKU         string   `json:"sku"`
	Name        string   `json:"name"`
	Category    string   `json:"category"`
	Description string   `json:"description"`
	PriceCents  int      `json:"price_cents"`
	InStock     int      `json:"in_stock"`
	Tags        []string `json:"tags"`
}

// catalog returns a deterministic catalogue: the same products on every
// call, so tests can compare the API's body byte for byte.
func catalog() []product {
	bases := []struct{ name, category, desc string }{
		{"Trail running shoe", "footwear", "Lightweight shoe with a grippy outsole for wet and rocky trails."},
		{"Merino base layer", "clothing", "Long-sleeve top in fine merino wool that stays warm when damp."},
		{"Insulated bottle", "kitchen", "Double-walled steel bottle that keeps drinks cold for a day."},
		{"Headlamp", "electronics", "Rechargeable headlamp with a red night mode and a lock switch."},
		{"Daypack", "bags", "Twenty-litre pack with a padded back panel and a rain cover."},
		{"Camp stove", "kitchen", "Compact gas stove with a piezo igniter and a wind shield."},
	}
	variants := []struct {
		suffix string
		cents  int
	}{{"S", 0}, {"M", 500}, {"L", 900}, {"XL", 1400}}
	var list []product
	for i, b := range bases {
		for j, v := range variants {
			n := i*len(variants) + j
			list = append(list, product{
				SKU:         fmt.Sprintf("SQZ-%03d-%s", 100+i, v.suffix),
				Name:        b.name + " (" + v.suffix + ")",
				Category:    b.category,
				Description: b.desc,
				PriceCents:  2999 + 1000*i + v.cents,
				InStock:     (n * 37) % 23,
				Tags:        []string{b.category, "size-" + v.suffix, "demo"},
			})
		}
	}
	return list
}

// event returns the seq'th server-sent event (from 1), in wire format.
func event(seq int) string {
	return fmt.Sprintf("id: %d\ndata: {\"seq\":%d,\"message\":\"event %d, flushed through the compressor as soon as it was written\"}\n\n", seq, seq, seq)
}

// serveEvents streams server-sent events, the first at once and then one
// per tick, until the client goes away or, with ?count=N, after N events.
func serveEvents(w http.ResponseWriter, r *http.Request, tick time.Duration) {
	limit, err := strconv.Atoi(r.URL.Query().Get("count"))
	if err != nil || limit < 0 {
		limit = 0 // no limit
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for seq := 1; limit == 0 || seq <= limit; seq++ {
		if seq > 1 {
			select {
			case <-r.Context().Done():
				return
			case <-ticker.C:
			}
		}
		if _, err := io.WriteString(w, event(seq)); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// upload reads the whole request body, which squeeze has already decoded,
// and answers with its size and SHA-256.
func upload(w http.ResponseWriter, r *http.Request) {
	body := http.MaxBytesReader(w, r.Body, maxUpload)
	h := sha256.New()
	n, err := io.Copy(h, body)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		http.Error(w, fmt.Sprintf("body larger than %d bytes once decoded", tooBig.Limit), http.StatusRequestEntityTooLarge)
		return
	case errors.Is(err, squeeze.ErrInvalidBody):
		http.Error(w, "body is not valid for its Content-Encoding", http.StatusBadRequest)
		return
	case errors.Is(err, squeeze.ErrDecoderBusy):
		// Too many compressed uploads are being decoded at once.
		w.Header().Set("Retry-After", "1")
		http.Error(w, "busy decoding other uploads; try again", http.StatusServiceUnavailable)
		return
	case err != nil:
		http.Error(w, "reading the body failed", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	// Encode fails only when the client went away: nothing to do then.
	_ = json.NewEncoder(w).Encode(struct {
		Bytes  int64  `json:"bytes"`
		SHA256 string `json:"sha256"`
	}{n, hex.EncodeToString(h.Sum(nil))})
}

// codingRecord is what the server saw of the latest exchange on one path.
type codingRecord struct {
	Requests        int    `json:"requests"`
	Status          int    `json:"status"`
	ContentEncoding string `json:"content_encoding"`
	Vary            string `json:"vary"`
	AcceptEncoding  string `json:"accept_encoding"`
	// Bytes is the body as it went on the wire, encoded.
	Bytes int `json:"bytes"`
}

// clientCookie carries a browser's client key, so that /debug/codings shows
// a browser its own requests whatever connection they came on. It is set
// on a page load (Sec-Fetch-Dest: document), which only browsers send.
const clientCookie = "squeeze_demo_client"

// maxClients bounds the memory the log holds: past it, a new client evicts
// one of the others.
const maxClients = 100

// codingsAbout says on the page what "client" means here.
const codingsAbout = "The latest response on each path for this client only. A client is a " +
	"browser (told apart by the squeeze_demo_client cookie this demo sets on a page load) or, for clients that " +
	"send no cookie such as curl, a User-Agent at an address: two curl runs of the same version " +
	"on one machine count as one client. /debug/codings?all=1 lists every client."

// clientLog is the record of one client: who it is and, per path, its
// latest exchange.
type clientLog struct {
	Client string                  `json:"client"`
	Paths  map[string]codingRecord `json:"paths"`
}

// codingLog records, per client and path, the Content-Encoding each
// response went out with.
type codingLog struct {
	mu      sync.Mutex
	clients map[string]*clientLog // by client key
}

// clientKey identifies the client of r: the key in its cookie if the log
// knows it, else one derived from the User-Agent and the remote address. A
// browser's first request gets the derived key and keeps it by cookie, so
// its first request and the rest fall under one key; a client that sends
// no cookie gets the same derived key every time.
func (l *codingLog) clientKey(r *http.Request) (key, label string, known bool) {
	if c, err := r.Cookie(clientCookie); err == nil {
		l.mu.Lock()
		cl := l.clients[c.Value]
		l.mu.Unlock()
		if cl != nil {
			return c.Value, cl.Client, true
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	label = fmt.Sprintf("%s at %s", r.UserAgent(), host)
	sum := sha256.Sum256([]byte(label))
	return hex.EncodeToString(sum[:8]), label, false
}

func (l *codingLog) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, label, known := l.clientKey(r)
		if !known && r.Header.Get("Sec-Fetch-Dest") == "document" {
			// Only a browser's page load gets the cookie: a response
			// with Set-Cookie is never cached, so setting it on every
			// response to a client without cookies (curl) would keep
			// the cache from ever serving one.
			http.SetCookie(w, &http.Cookie{Name: clientCookie, Value: key, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
		}
		rw := &recordingWriter{ResponseWriter: w}
		next.ServeHTTP(rw, r)
		rw.capture(http.StatusOK) // a handler that wrote nothing sent a 200
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.clients == nil {
			l.clients = map[string]*clientLog{}
		}
		cl := l.clients[key]
		if cl == nil {
			if len(l.clients) >= maxClients {
				for k := range l.clients {
					delete(l.clients, k)
					break
				}
			}
			cl = &clientLog{Client: label, Paths: map[string]codingRecord{}}
			l.clients[key] = cl
		}
		cl.Paths[r.URL.Path] = codingRecord{
			Requests:        cl.Paths[r.URL.Path].Requests + 1,
			Status:          rw.status,
			ContentEncoding: rw.coding,
			Vary:            rw.vary,
			AcceptEncoding:  r.Header.Get("Accept-Encoding"),
			Bytes:           rw.bytes,
		}
	})
}

// codingsPage is the answer of /debug/codings: the asking client's own
// records, or with ?all=1 every client's.
type codingsPage struct {
	About   string                             `json:"about"`
	Client  string                             `json:"client,omitempty"`
	Paths   map[string]codingRecord            `json:"paths,omitempty"`
	Clients map[string]map[string]codingRecord `json:"clients,omitempty"`
}

func (l *codingLog) serve(w http.ResponseWriter, r *http.Request) {
	key, label, _ := l.clientKey(r)
	page := codingsPage{About: codingsAbout, Client: label, Paths: map[string]codingRecord{}}
	l.mu.Lock()
	if r.URL.Query().Get("all") != "" {
		page.Client, page.Paths = "", nil
		page.Clients = map[string]map[string]codingRecord{}
		for _, cl := range l.clients {
			page.Clients[cl.Client] = cl.Paths
		}
	} else if cl := l.clients[key]; cl != nil {
		page.Paths = cl.Paths
	}
	body, err := json.MarshalIndent(page, "", "  ")
	l.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(body) // an error means the client went away
}

// recordingWriter notes the status and coding headers at the moment the
// response header goes out.
type recordingWriter struct {
	http.ResponseWriter
	status int
	coding string
	vary   string
	bytes  int
}

func (w *recordingWriter) capture(status int) {
	if w.status == 0 {
		w.status = status
		w.coding = w.Header().Get("Content-Encoding")
		w.vary = strings.Join(w.Header().Values("Vary"), ", ")
	}
}

func (w *recordingWriter) WriteHeader(code int) {
	if code >= 200 { // 1xx responses are interim; the final header comes later
		w.capture(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	w.capture(http.StatusOK)
	n, err := w.ResponseWriter.Write(p)
	w.bytes += n
	return n, err
}

// Flush sends the header if it has not gone out yet, as a plain
// ResponseWriter would.
func (w *recordingWriter) Flush() {
	w.capture(http.StatusOK)
	// http.Flusher has no error to return; a writer that cannot flush
	// sends the data when the handler returns.
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
