package squeezecaddy_test

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/corpus"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// startReplicas loads caddyfile into this process's Caddy, as caddy run
// does with the Caddyfile adapter, and stops Caddy (which cleans up every
// handler it provisioned) when the test ends.
func startReplicas(t *testing.T, caddyfile string) {
	t.Helper()
	// Caddy keeps its data (an instance id, certificates) under the home
	// directory: the test's own.
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home)
	config, err := adapt(t, caddyfile)
	if err != nil {
		t.Fatalf("%v\n%s", err, caddyfile)
	}
	if err := caddy.Load(config, true); err != nil {
		t.Fatalf("loading the config: %v\n%s", err, config)
	}
	t.Cleanup(func() {
		if err := caddy.Stop(); err != nil {
			t.Errorf("stopping Caddy: %v", err)
		}
	})
}

// Two replicas, each a site of its own that Caddy provisions from the
// Caddyfile with its own squeeze handler and a `store redis` pointing at
// one Redis, share a dictionary: once replica A has sent the first
// release of a script with Use-As-Dictionary often enough to earn it a
// place, Redis holds it under the configured key prefix, and replica B,
// which never served that release, answers a client that names it with
// the next release as a dcz delta against it.
func TestCaddyfileStoreRedisSharesADictionaryBetweenReplicas(t *testing.T) {
	redis := testtool.StartRedis(t)
	pair := corpus.Releases(t)[1]
	const (
		oldPath = "/js/lodash-4.17.15.js"
		newPath = "/js/lodash-4.17.21.js"
		prefix  = "caddytest:"
	)
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "js"), 0o755); err != nil {
		t.Fatal(err)
	}
	for path, body := range map[string][]byte{oldPath: pair.Old, newPath: pair.New} {
		if err := os.WriteFile(filepath.Join(root, path), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	replicaA := "http://127.0.0.1:" + strconv.Itoa(testtool.FreePort(t))
	replicaB := "http://127.0.0.1:" + strconv.Itoa(testtool.FreePort(t))
	site := func(addr string) string {
		return fmt.Sprintf(`%s {
	root * %s
	header Cache-Control "max-age=3600"
	squeeze {
		dictionary /js/lodash-*.js
		store redis %s %s
	}
	file_server
}
`, addr, root, redis.Addr(), prefix)
	}
	startReplicas(t, "{\n\tadmin off\n\tauto_https off\n\tpersist_config off\n\tlog {\n\t\toutput discard\n\t}\n}\n"+
		site(replicaA)+site(replicaB))

	client := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 10 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	hash := sha256.Sum256(pair.Old)
	key := prefix + "dict:" + base64.RawURLEncoding.EncodeToString(hash[:])
	// Served twice (SharedAdmitAfter's default), the release has
	// earned its place; the write goes on in the background.
	for range 2 {
		res, raw := testtool.Fetch(t, client, replicaA+oldPath, "zstd, gzip")
		if res.StatusCode != http.StatusOK || res.Header.Get("Use-As-Dictionary") == "" {
			t.Fatalf("replica A: %d, Use-As-Dictionary %q; want 200 with one", res.StatusCode, res.Header.Get("Use-As-Dictionary"))
		}
		if got := testtool.Decode(t, res.Header.Get("Content-Encoding"), raw); string(got) != string(pair.Old) {
			t.Fatalf("replica A sent %d bytes, want the %d of the release", len(got), len(pair.Old))
		}
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		reply, err := redis.Do("EXISTS", key)
		if err != nil {
			t.Fatal(err)
		}
		if reply == ":1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Redis has no %s 5 s after replica A earned it the place (EXISTS: %s)", key, reply)
		}
	}

	res, raw := testtool.Fetch(t, client, replicaB+newPath, "zstd, gzip, dcz",
		"Available-Dictionary", ":"+base64.StdEncoding.EncodeToString(hash[:])+":")
	if ce := res.Header.Get("Content-Encoding"); res.StatusCode != http.StatusOK || ce != squeeze.DCZ {
		t.Fatalf("replica B: %d with Content-Encoding %q, want 200 with dcz", res.StatusCode, ce)
	}
	got, err := testtool.DecodeDictionary(squeeze.DCZ, raw, pair.Old)
	if err != nil || string(got) != string(pair.New) {
		t.Fatalf("replica B's delta decodes to %d bytes (%v), want the %d of the next release", len(got), err, len(pair.New))
	}
	t.Logf("replica B's delta: %d bytes for %d", len(raw), len(pair.New))
}
