//go:build unix

package squeezecaddy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze/internal/testtool"
)

// sizes returns the body sizes Caddy logged for its responses to path, in
// order.
func (s caddyServer) sizes(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(s.log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []int
	lines := bufio.NewScanner(bytes.NewReader(b))
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var entry struct {
			Request struct {
				URI string `json:"uri"`
			} `json:"request"`
			Size int `json:"size"`
		}
		if json.Unmarshal(lines.Bytes(), &entry) == nil && entry.Request.URI == path {
			out = append(out, entry.Size)
		}
	}
	return out
}

// nextSize returns a function that returns the size Caddy logged for each
// next response to path, polling its log until the entry is there.
func (s caddyServer) nextSize(t *testing.T, path string) func() int64 {
	seen := len(s.sizes(t, path))
	return func() int64 {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if sizes := s.sizes(t, path); len(sizes) > seen {
				seen++
				return int64(sizes[seen-1])
			}
		}
		t.Fatalf("Caddy logged no response to %s in 10 s", path)
		return 0
	}
}

// Caddy built with squeeze in front of file_server answers a HEAD for a
// bundle over the buffer (88 KiB, a stream) and for one within it with
// the GET's Content-Encoding, a Content-Length only if it is the GET's,
// and no body bytes, as Caddy's access log counts them.
func TestCaddyFileServerAnswersHeadWithTheGetsHeaderAndNoBody(t *testing.T) {
	bin := buildCaddy(t)
	root := siteDir(t)
	bodies := map[string][]byte{}
	for name, size := range map[string]int{"/big.js": 88 << 10, "/small.js": 20000} {
		var b bytes.Buffer
		for i := 0; b.Len() < size; i++ {
			fmt.Fprintf(&b, "export function f%d(x) { return x * %d + %d; }\n", i, i%97, i*i%1009)
		}
		bodies[name] = b.Bytes()
		if err := os.WriteFile(filepath.Join(root, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := startCaddy(t, bin, root, "squeeze zstd br gzip\nfile_server")
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 10 * time.Second}
	for name, body := range bodies {
		written := s.nextSize(t, name)
		for _, coding := range []string{"zstd", "br", "gzip"} {
			testtool.CheckHead(t, client, s.url+name, coding, body, written)
		}
	}
}
