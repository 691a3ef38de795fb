//go:build unix

package squeezecaddy_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
)

// The releases the page fetches, from the example module's static files.
const (
	libV1 = "/lib/underscore-1.13.6.min.js"
	libV2 = "/lib/underscore-1.13.7.min.js"
)

// buildCaddy builds cmd/caddy-squeeze into a temporary directory and
// returns the binary's path.
func buildCaddy(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to build Caddy: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "caddy")
	start := time.Now()
	if out, err := exec.CommandContext(t.Context(), goTool, "build", "-o", bin, "./cmd/caddy-squeeze").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/caddy-squeeze: %v\n%s", err, out)
	}
	t.Logf("built Caddy with squeeze in %v", time.Since(start).Round(time.Millisecond))
	return bin
}

// siteDir returns a directory with the page and both releases.
func siteDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	for dst, src := range map[string]string{
		"delta.html": "testdata/delta.html",
		libV1[1:]:    "../example/static" + libV1,
		libV2[1:]:    "../example/static" + libV2,
	} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// caddyServer is a running Caddy and its JSON access log.
type caddyServer struct {
	url, log string
}

// startCaddy runs bin with a Caddyfile whose one site, on a loopback
// port, serves root with Cache-Control (Chromium keeps a dictionary only
// while its response is fresh), logs in JSON and ends with handlers; it
// returns once the site answers, and stops Caddy when the test ends.
func startCaddy(t *testing.T, bin, root, handlers string) caddyServer {
	t.Helper()
	dir := t.TempDir()
	port := testtool.FreePort(t)
	s := caddyServer{url: "http://127.0.0.1:" + strconv.Itoa(port), log: filepath.Join(dir, "access.log")}
	caddyfile := fmt.Sprintf(`{
	admin off
	auto_https off
	persist_config off
}

%s {
	root * %s
	header Cache-Control "max-age=3600"
	log {
		output file %s
		format json
	}
	%s
}
`, s.url, root, s.log, strings.ReplaceAll(handlers, "\n", "\n\t"))
	config := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(config, []byte(caddyfile), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", config, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("Caddyfile:\n%s\nCaddy's output:\n%s", caddyfile, output.Bytes())
		}
	})
	client := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(30 * time.Second); ; {
		res, err := client.Get(s.url + "/delta.html")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("caddy exited: %v\n%s", err, output.Bytes())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("caddy did not answer on %s in 30 s: %v\n%s", s.url, err, output.Bytes())
		}
	}
}

// logged returns the Content-Encoding and the body bytes Caddy logged for
// its last response to path.
func (s caddyServer) logged(t *testing.T, path string) (coding string, size int) {
	t.Helper()
	f, err := os.Open(s.log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	found := false
	lines := bufio.NewScanner(f)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var entry struct {
			Request struct {
				URI string `json:"uri"`
			} `json:"request"`
			Size        int                 `json:"size"`
			RespHeaders map[string][]string `json:"resp_headers"`
		}
		if err := json.Unmarshal(lines.Bytes(), &entry); err != nil || entry.Request.URI != path {
			continue
		}
		found = true
		coding, size = strings.Join(entry.RespHeaders["Content-Encoding"], ", "), entry.Size
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatalf("Caddy's log has no response to %s", path)
	}
	return coding, size
}

// Caddy built with squeeze, with file_server and with reverse_proxy in
// front of a plain upstream, gives headless Chromium the next release of a
// script as a dcz or dcb delta against the one it holds; the same site
// with Caddy's own encode zstd gzip sends the whole release, compressed.
// Caddy's access log says what went on the wire; the page says what
// Chromium decoded.
func TestCaddyGivesChromiumTheNextReleaseAsADelta(t *testing.T) {
	chromium := testtool.Require(t, "chromium")
	bin := buildCaddy(t)
	root := siteDir(t)
	v2, err := os.ReadFile(filepath.Join(root, libV2))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(v2)
	upstream := httptest.NewServer(http.FileServer(http.Dir(root))) // plain: it compresses nothing
	t.Cleanup(upstream.Close)
	const squeezeBlock = "squeeze {\n\tdictionary /lib/underscore-*.js\n}\n"
	wire := map[string]int{}
	for _, tc := range []struct {
		name, handlers string
		delta          bool
	}{
		{"squeeze, file_server", squeezeBlock + "file_server", true},
		{"squeeze, reverse_proxy", squeezeBlock + "reverse_proxy " + strings.TrimPrefix(upstream.URL, "http://"), true},
		{"encode zstd gzip, file_server", "encode zstd gzip\nfile_server", false},
		// Both on one route: squeeze runs inside encode, which steps aside.
		{"encode zstd gzip and squeeze, file_server", "encode zstd gzip\n" + squeezeBlock + "file_server", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startCaddy(t, bin, root, tc.handlers)
			dom, err := testtool.DumpDOM(t.Context(), chromium, t.TempDir(), s.url+"/delta.html")
			if err != nil {
				t.Fatal(err)
			}
			result := regexp.MustCompile(`<p id="result"[^>]*>[^<]*</p>`).FindString(dom)
			attr := func(name string) string {
				m := regexp.MustCompile(` data-` + name + `="([^"]*)"`).FindStringSubmatch(result)
				if m == nil {
					return ""
				}
				return m[1]
			}
			if attr("state") != "done" {
				t.Fatalf("the page did not finish: %s", result)
			}
			coding, size := s.logged(t, libV2)
			wire[tc.name] = size
			t.Logf("%s: Chromium got %s as %s, %d bytes on the wire, after %s request(s)", tc.name, libV2, coding, size, attr("tries"))
			if attr("bytes") != strconv.Itoa(len(v2)) || attr("sha256") != hex.EncodeToString(sum[:]) {
				t.Errorf("Chromium decoded %s, want the %d bytes of %s", result, len(v2), libV2)
			}
			if coding != attr("coding") {
				t.Errorf("Caddy logged Content-Encoding %q, the page read %q", coding, attr("coding"))
			}
			isDelta := coding == squeeze.DCZ || coding == squeeze.DCB
			if isDelta != tc.delta {
				t.Errorf("%s went to Chromium as %q; a delta: %v, want %v", libV2, coding, isDelta, tc.delta)
			}
			if !tc.delta && coding == "" {
				t.Errorf("encode sent %s uncompressed", libV2)
			}
		})
	}
	if d, full := wire["squeeze, file_server"], wire["encode zstd gzip, file_server"]; d == 0 || full < 4*d {
		t.Errorf("squeeze's delta took %d bytes, encode's whole release %d: want the delta under a quarter", d, full)
	}
}
