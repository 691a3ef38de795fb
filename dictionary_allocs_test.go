package squeeze_test

import (
	"net/http"
	"testing"

	"github.com/squeezehttp/squeeze"
)

// With dictionaries configured, a response to a path that matches no
// dictionary pattern costs what it costs without them: the hook that
// follows it (the one that adds the Link to standalone dictionaries on
// text/html) is the store's own, shared by every such response, and the
// writer hands it how the response went by value.
func TestDictionaryHooksCostNothingOffTheirPaths(t *testing.T) {
	skipUnlessAllocsCount(t)
	const (
		maxAllocs = 2.0 / 36 // as TestSteadyStateAllocations
		maxBytes  = 80
	)
	body := textBody(3, 16<<10)
	ct := []string{"application/json"}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = ct
		_, _ = w.Write(body)
	})
	for _, tc := range []struct {
		name string
		opts []squeeze.Option
	}{
		{"standalone dictionary", []squeeze.Option{squeeze.WithDictionary("/dict/api.dat", "/api/*", body[:4<<10])}},
		{"dictionary match", []squeeze.Option{squeeze.WithDictionaryMatch("/static/app.*.js")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newMiddleware(t, append(tc.opts, squeeze.WithEncodings(squeeze.Zstd))...).Handler(next)
			w, serve := reusedWriter(h, request("GET", "zstd"))
			serve()
			if ce := w.h.Get("Content-Encoding"); ce != "zstd" || w.n == 0 || w.n >= len(body) {
				t.Fatalf("warm-up response: Content-Encoding %q, %d bytes; want zstd and fewer than %d", ce, w.n, len(body))
			}
			allocs, bytes := allocsPerResponse(3200, serve)
			t.Logf("%s: %.3f allocations, %.0f bytes per response", tc.name, allocs, bytes)
			if allocs > maxAllocs || bytes > maxBytes {
				t.Errorf("%.3f allocations and %.0f bytes per response, want at most %.3f and %d", allocs, bytes, maxAllocs, maxBytes)
			}
		})
	}
}
