package squeezecaddy_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile" // the Caddyfile adapter
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	squeezecaddy "github.com/squeezehttp/squeeze/caddy"
)

// adapt returns the JSON config of a Caddyfile, as caddy adapt does.
func adapt(t testing.TB, caddyfile string) ([]byte, error) {
	t.Helper()
	adapter := caddyconfig.GetAdapter("caddyfile")
	if adapter == nil {
		t.Fatal("no caddyfile adapter registered")
	}
	out, _, err := adapter.Adapt([]byte(caddyfile), map[string]any{"filename": "Caddyfile"})
	return out, err
}

// The directive's settings reach the handler's JSON, and squeeze runs
// inside encode (after it in the route) whichever comes first in the site
// block, so that encode steps aside for what squeeze encoded.
func TestCaddyfileDirectiveRunsInsideEncode(t *testing.T) {
	out, err := adapt(t, `
http://example.com {
	encode zstd gzip
	squeeze zstd br {
		gzip 6
		minimum_length 512
		types text/* application/json
		dictionary /js/app.*.js /css/*.css
		max_request_body 1MiB
		cache 64MiB
		store redis 127.0.0.1:6379 myapp:
	}
	file_server
}`)
	if err != nil {
		t.Fatal(err)
	}
	got, handlers := squeezeIn(t, out)
	if strings.Join(handlers, " ") != "subroute encode squeeze file_server" {
		t.Errorf("handlers in the order %q, want squeeze inside encode:\n%s", handlers, out)
	}
	want := squeezecaddy.Handler{
		Prefer:         []string{"zstd", "br", "gzip"},
		Levels:         map[string]int{"gzip": 6},
		MinLength:      512,
		Types:          []string{"text/*", "application/json"},
		Dictionaries:   []string{"/js/app.*.js", "/css/*.css"},
		MaxRequestBody: 1 << 20,
		CacheSize:      64 << 20,
		Redis:          &squeezecaddy.Redis{Address: "127.0.0.1:6379", Prefix: "myapp:"},
	}
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Errorf("the handler's config is\n%s\nwant\n%s", g, w)
	}
}

// squeezeIn returns the squeeze handler of an adapted config, and the
// names of the handlers of its site's routes in order.
func squeezeIn(t *testing.T, out []byte) (squeezecaddy.Handler, []string) {
	t.Helper()
	var handlers []string
	var got squeezecaddy.Handler
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if name, ok := v["handler"].(string); ok {
				handlers = append(handlers, name)
				if name == "squeeze" {
					b, _ := json.Marshal(v)
					if err := json.Unmarshal(b, &got); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, k := range []string{"apps", "http", "servers", "srv0", "routes", "handle"} {
				if child, ok := v[k]; ok {
					walk(child)
				}
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	var config any
	if err := json.Unmarshal(out, &config); err != nil {
		t.Fatal(err)
	}
	walk(config)
	return got, handlers
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// store redis takes a URL, with the password from the environment as the
// Caddyfile reads it, to the handler's config as written.
func TestCaddyfileStoreRedisTakesAURL(t *testing.T) {
	t.Setenv("SQUEEZE_TEST_REDIS_PASSWORD", "hunter2")
	out, err := adapt(t, "http://example.com {\n\tsqueeze {\n\t\tstore redis rediss://squeeze:{$SQUEEZE_TEST_REDIS_PASSWORD}@redis.internal:6380/0 myapp:\n\t}\n}")
	if err != nil {
		t.Fatal(err)
	}
	want := mustJSON(t, squeezecaddy.Redis{Address: "rediss://squeeze:hunter2@redis.internal:6380/0", Prefix: "myapp:"})
	if !strings.Contains(string(out), want) {
		t.Errorf("the config has no redis %s:\n%s", want, out)
	}
}

// A directive Caddy cannot read is an error naming the line's mistake.
func TestCaddyfileDirectiveErrors(t *testing.T) {
	for _, tc := range []struct{ block, want string }{
		{"squeeze {\n\tgzip fast\n}", `gzip level "fast"`},
		{"squeeze {\n\tminimum_length\n}", "wrong argument count"},
		{"squeeze {\n\tcache lots\n}", `cache "lots": not a size`},
		{"squeeze {\n\tstore memcached 1.2.3.4:11211\n}", "store redis <host:port or URL>"},
		{"squeeze {\n\tcompress harder\n}", `unrecognized squeeze subdirective "compress"`},
		{"squeeze {\n\tdictionary\n}", "wrong argument count"},
		{"squeeze {\n\tlength_hiding some\n}", `length_hiding "some": not a number`},
		{"squeeze {\n\ttrusted_etags yes\n}", "wrong argument count"},
		{"squeeze {\n\tlearned\n}", "wrong argument count"},
		{"squeeze {\n\tlearned /a/* /b/*\n}", "wrong argument count"},
		{"squeeze {\n\tlearned /a/* {\n\t\tsamples many\n\t}\n}", `learned samples "many": not a number`},
		{"squeeze {\n\tlearned /a/* {\n\t\tinterval soon\n\t}\n}", `learned interval "soon"`},
		{"squeeze {\n\tlearned /a/* {\n\t\tdictionary_size big\n\t}\n}", `learned dictionary_size "big": not a size`},
		{"squeeze {\n\tlearned /a/* {\n\t\tteach harder\n\t}\n}", `unrecognized learned subdirective "teach"`},
		{"squeeze {\n\tlearned /a/* {\n\t\tpath\n\t}\n}", "wrong argument count"},
		{"squeeze {\n\tlearned /a/* {\n\t\tcredential_headers\n\t}\n}", "wrong argument count"},
	} {
		_, err := adapt(t, "http://example.com {\n"+tc.block+"\n}")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one with %q", tc.block, err, tc.want)
		}
	}
}

// The README's Caddyfile recipe, in a site block, is a valid config with
// squeeze in it.
func TestReadmeCaddyfileRecipeAdapts(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```caddyfile\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) == 0 {
		t.Fatal("README.md has no ```caddyfile block")
	}
	for _, block := range blocks {
		out, err := adapt(t, block[1]) // a whole Caddyfile, as a user runs it
		if err != nil {
			t.Errorf("the README's Caddyfile:\n%s\n%v", block[1], err)
			continue
		}
		if !strings.Contains(string(out), `"handler":"squeeze"`) {
			t.Errorf("the README's Caddyfile has no squeeze handler: %s", out)
		}
	}
}

// The edge's directives (trusted ETags, length hiding, learned
// dictionaries with their settings, metrics) reach the handler's JSON as
// written.
func TestCaddyfileEdgeDirectives(t *testing.T) {
	out, err := adapt(t, `
http://example.com {
	squeeze {
		cache 64MiB
		trusted_etags
		length_hiding 32
		learned /api/* {
			dictionary_size 32KiB
			samples 16
			sample_budget 2MiB
			training_memory 32MiB
			interval 5m
			path /_dict/
			credential_headers X-Api-Key X-Auth-Token
		}
		learned /pages/*
		metrics
	}
	file_server
}`)
	if err != nil {
		t.Fatal(err)
	}
	want := squeezecaddy.Handler{
		CacheSize:    64 << 20,
		TrustedETags: true,
		LengthHiding: 32,
		Learned: []squeezecaddy.Learned{
			{Pattern: "/api/*", DictionarySize: 32 << 10, Samples: 16, SampleBudget: 2 << 20,
				TrainingMemory: 32 << 20, Interval: caddy.Duration(5 * time.Minute), Path: "/_dict/",
				CredentialHeaders: []string{"X-Api-Key", "X-Auth-Token"}},
			{Pattern: "/pages/*"},
		},
		Metrics: true,
	}
	got, _ := squeezeIn(t, out)
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Errorf("the handler's config is\n%s\nwant\n%s", g, w)
	}
}
