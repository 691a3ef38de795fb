package squeezecaddy_test

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	squeezecaddy "github.com/squeezehttp/squeeze/caddy"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// A store redis whose server declares a reply of 256 MiB costs a request
// a fallback, not 256 MiB: the module's client reads through
// redisstore.LimitReplies, which fails the reply before go-redis allocates
// what it declares. The response is the route's body.
func TestHandlerStoreRedisRefusesDeclaredGiantReplies(t *testing.T) {
	const declared = 256 << 20
	var reads atomic.Int64
	h := provisioned(t, &squeezecaddy.Handler{
		Dictionaries: []string{"/js/*"},
		Redis:        &squeezecaddy.Redis{Address: testtool.HostileRedis(t, "$"+strconv.Itoa(declared)+"\r\n", false, &reads)},
	})
	body := strings.Repeat("function squeeze() { return 1; }\n", 200)
	srv := httptest.NewServer(route(h, func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Content-Type", "text/javascript")
		_, err := io.WriteString(w, body)
		return err
	}))
	defer srv.Close()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 4 {
		// Each names a dictionary no replica has seen: squeeze asks the
		// store for it.
		hash := sha256.Sum256([]byte{byte(i)})
		req, _ := http.NewRequest("GET", srv.URL+"/js/app.js", nil)
		req.Header.Set("Accept-Encoding", "dcz, gzip")
		req.Header.Set("Available-Dictionary", ":"+base64.StdEncoding.EncodeToString(hash[:])+":")
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("request %d: %d %q, want 200 in gzip", i, resp.StatusCode, resp.Header.Get("Content-Encoding"))
		}
	}
	runtime.ReadMemStats(&after)
	if reads.Load() == 0 {
		t.Fatal("no request read from the store")
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 32<<20 {
		t.Errorf("4 requests against a Redis declaring %d MiB replies allocated %d MiB, want under 32", declared>>20, got>>20)
	}
}
