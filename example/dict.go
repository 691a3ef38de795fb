package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/squeezehttp/squeeze"
)

// The demo's Compression Dictionary Transport (RFC 9842): two releases of a
// real library under a dictionary pattern, so that a browser holding the
// first gets the second as a delta, and a standalone dictionary for a JSON
// API. dict.html shows both; e2e_test.go checks them in Chromium.

// Paths of the versioned scripts and of the standalone dictionary.
const (
	libPattern     = "/static/lib/underscore-*.js"
	libV1          = "/static/lib/underscore-1.13.6.min.js"
	libV2          = "/static/lib/underscore-1.13.7.min.js"
	ordersDictPath = "/dict/orders.dict"
	ordersPattern  = "/api/orders*"
)

// dictionaryOptions returns the squeeze options of the demo's
// dictionaries.
func dictionaryOptions() []squeeze.Option {
	return []squeeze.Option{
		squeeze.WithDictionaryMatch(libPattern),
		squeeze.WithDictionary(ordersDictPath, ordersPattern, ordersDictionary()),
	}
}

// order is one entry of the orders API.
type order struct {
	ID       string  `json:"id"`
	Customer string  `json:"customer"`
	Email    string  `json:"email"`
	Status   string  `json:"status"`
	Items    []item  `json:"items"`
	Total    float64 `json:"total_eur"`
	Shipping string  `json:"shipping_method"`
}

type item struct {
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity"`
}

// orders returns the deterministic body of /api/orders.
func orders() []byte {
	names := []string{"Ada Lovelace", "Grace Hopper", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov", "Donald Knuth"}
	statuses := []string{"pending", "paid", "shipped", "delivered"}
	var list []order
	for i := range 24 {
		n := names[i%len(names)]
		list = append(list, order{
			ID:       fmt.Sprintf("ORD-2026-%05d", 1000+i*7),
			Customer: n,
			Email:    strings.ToLower(strings.ReplaceAll(n, " ", ".")) + "@example.com",
			Status:   statuses[i%len(statuses)],
			Items:    []item{{fmt.Sprintf("SQZ-%03d-M", 100+i%6), 1 + i%3}, {fmt.Sprintf("SQZ-%03d-L", 100+(i+2)%6), 1}},
			Total:    float64(2999+i*731) / 100,
			Shipping: []string{"standard", "express"}[i%2],
		})
	}
	b, err := json.Marshal(list)
	if err != nil {
		panic(err) // plain structs always marshal
	}
	return b
}

// ordersDictionary is a dictionary for /api/orders: what its responses
// repeat (field names, statuses, shipping methods, the shape of IDs and
// emails), as a dictionary trainer would find it in a sample of them.
func ordersDictionary() []byte {
	var b strings.Builder
	for _, s := range []string{"pending", "paid", "shipped", "delivered"} {
		for _, m := range []string{"standard", "express"} {
			fmt.Fprintf(&b, `{"id":"ORD-2026-0","customer":"","email":"@example.com","status":"%s","items":[{"sku":"SQZ-10","quantity":1}],"total_eur":,"shipping_method":"%s"},`, s, m)
		}
	}
	return []byte(b.String())
}

// routeDictionaries adds the routes of the dictionary demo. compress is
// the router's squeeze middleware, used again by /debug/wire to measure
// what the second release costs on the wire in each coding.
func routeDictionaries(r chi.Router, compress *squeeze.Middleware, pages assets) error {
	// The releases themselves are static files (static/lib), served by
	// the FileServer under libPattern; here they are only measured.
	libs, err := loadAssets(static, "static/lib")
	if err != nil {
		return err
	}
	ordersBody := orders()
	r.Get("/dict", pages.handler("dict.html"))
	r.Get("/api/orders", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(ordersBody) // an error means the client went away
	})
	// /debug/wire answers how many bytes the second release takes on the
	// wire as br, zstd and gzip, and as dcz and dcb against the first once
	// squeeze holds it.
	measure := compress.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		libs.serve(w, r, strings.TrimPrefix(libV2, "/static/lib/"))
	}))
	v1 := libs[strings.TrimPrefix(libV1, "/static/lib/")].data
	r.Get("/debug/wire", func(w http.ResponseWriter, r *http.Request) {
		sizes := map[string]int{}
		for _, ae := range []string{"identity", squeeze.Gzip, squeeze.Brotli, squeeze.Zstd, squeeze.DCZ, squeeze.DCB} {
			req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, libV2, nil)
			req.Header.Set("Accept-Encoding", ae)
			req.Header.Set("Available-Dictionary", availableDictionary(v1))
			cw := &countingWriter{h: http.Header{}}
			measure.ServeHTTP(cw, req)
			if ce := cw.h.Get("Content-Encoding"); ce == ae || ce == "" && ae == "identity" {
				sizes[ae] = cw.n
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(sizes) // an error means the client went away
	})
	return nil
}

// availableDictionary is the Available-Dictionary value naming data.
func availableDictionary(data []byte) string {
	sum := sha256.Sum256(data)
	return ":" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
}

// countingWriter counts the body bytes of a response it throws away.
type countingWriter struct {
	h http.Header
	n int
}

func (c *countingWriter) Header() http.Header         { return c.h }
func (c *countingWriter) WriteHeader(int)             {}
func (c *countingWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }
