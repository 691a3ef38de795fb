package squeezecaddy_test

import (
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	squeezecaddy "github.com/squeezehttp/squeeze/caddy"
)

// FuzzCaddyfileDirective reads any squeeze directive: reading it never
// panics, and a directive it accepts provisions (or is refused with an
// error) and cleans up without panicking.
func FuzzCaddyfileDirective(f *testing.F) {
	for _, seed := range []string{
		"squeeze",
		"squeeze zstd br gzip",
		"squeeze {\n\tgzip 6\n\tminimum_length 512\n\ttypes text/* application/json\n}",
		"squeeze {\n\tdictionary /js/app.*.js /css/*.css\n\tmax_request_body 1MiB\n\tcache 64MiB\n}",
		"squeeze {\n\tstore redis 127.0.0.1:6379 myapp:\n}",
		"squeeze {\n\tstore redis rediss://u:p@h:6380/0\n}",
		"squeeze {\n\tbr 12\n\tcompress harder\n}",
		"squeeze {\n\tcache 1EiB\n}",
		"squeeze {\n\tcache 64MiB\n\ttrusted_etags\n\tlength_hiding 32\n}",
		"squeeze {\n\ttrusted_etags\n\tlength_hiding 5000\n}",
		"squeeze {\n\tlearned /api/* {\n\t\tdictionary_size 32KiB\n\t\tsamples 16\n\t\tsample_budget 2MiB\n\t\ttraining_memory 32MiB\n\t\tinterval 5m\n\t\tpath /_dict/\n\t}\n\tlearned /pages/*\n}",
		"squeeze {\n\tlearned /api/* {\n\t\tpath nope\n\t}\n\tmetrics\n}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, input string) {
		var h squeezecaddy.Handler
		if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input)); err != nil {
			return
		}
		if h.CacheSize > 1<<30 {
			h.CacheSize = 1 << 30 // a budget, but the fuzzer need not reserve an exabyte's bookkeeping
		}
		if err := h.Provision(caddy.Context{}); err != nil {
			return
		}
		_ = h.Validate()
		if err := h.Cleanup(); err != nil {
			t.Fatal(err)
		}
	})
}
