package main

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze/internal/testtool"
)

// text returns n bytes of compressible text.
func text(n int) []byte {
	return bytes.Repeat([]byte("static files compress well, "), n/28+1)[:n]
}

// tree writes files under a new directory and returns it.
func tree(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runCmd(t *testing.T, tty bool, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errs bytes.Buffer
	code = run(args, &out, &errs, tty)
	return code, out.String(), errs.String()
}

func exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

func TestPrecompressWritesSiblingsThatDecodeToTheirFiles(t *testing.T) {
	random := make([]byte, 4000)
	_, _ = rand.Read(random)
	dir := tree(t, map[string][]byte{
		"app.js":          text(20000),
		"css/app.css":     text(5000),
		"small.html":      text(100),
		"photo.png":       append([]byte("\x89PNG\r\n\x1a\n"), text(5000)...),
		".hidden.js":      text(5000),
		".git/config.js":  text(5000),
		"noise.txt":       random,
		"page":            append([]byte("<!DOCTYPE html>"), text(5000)...),
		"already.js.gz":   text(5000), // a sibling name: never a file to precompress
		"unchanged.json":  text(3000),
		"nested/deep.svg": text(3000),
	})
	code, out, errs := runCmd(t, false, "precompress", dir)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, name := range []string{"app.js", "css/app.css", "page", "unchanged.json", "nested/deep.svg"} {
		data, _ := os.ReadFile(filepath.Join(dir, name))
		for coding, ext := range extensions {
			sib, err := os.ReadFile(filepath.Join(dir, name+ext))
			if err != nil {
				t.Fatalf("%s: no %s sibling: %v", name, coding, err)
			}
			if len(sib) >= len(data) {
				t.Errorf("%s%s: %d bytes for %d", name, ext, len(sib), len(data))
			}
			if !bytes.Equal(testtool.Decode(t, coding, sib), data) || !bytes.Equal(testtool.DecodeCLI(t, coding, sib), data) {
				t.Errorf("%s%s does not decode to the file", name, ext)
			}
		}
	}
	for _, name := range []string{"small.html", "photo.png", ".hidden.js", ".git/config.js", "noise.txt", "already.js.gz"} {
		for _, ext := range extensions {
			if exists(filepath.Join(dir, name+ext)) {
				t.Errorf("%s%s written", name, ext)
			}
		}
	}
	if !strings.Contains(out, "bytes saved") || !strings.Contains(out, "app.js.br: 20000 -> ") {
		t.Errorf("output:\n%s", out)
	}
	if strings.Contains(out, "\r") {
		t.Error("progress line off a terminal")
	}
}

func TestPrecompressSkipsUpToDateSiblingsAndRedoesStaleOnes(t *testing.T) {
	dir := tree(t, map[string][]byte{"app.js": text(20000), "lib.js": text(9000)})
	if code, _, errs := runCmd(t, false, "precompress", dir); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, errs)
	}
	app, lib := filepath.Join(dir, "app.js"), filepath.Join(dir, "lib.js")
	st, _ := os.Stat(app + ".br")
	// lib.js changes; its siblings are older than it now.
	newLib := append(text(9000), "// changed"...)
	if err := os.WriteFile(lib, newLib, 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(lib, future, future); err != nil {
		t.Fatal(err)
	}
	// And a sibling of app.js newer than it but of other bytes.
	if err := os.WriteFile(app+".gz", testGzip(t, []byte("other")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCmd(t, false, "precompress", dir)
	if code != 0 {
		t.Fatalf("second run: exit %d", code)
	}
	if st2, _ := os.Stat(app + ".br"); !st2.ModTime().Equal(st.ModTime()) {
		t.Error("an up-to-date sibling was rewritten")
	}
	if !strings.Contains(out, "2 siblings up to date") {
		t.Errorf("output:\n%s", out)
	}
	for coding, ext := range extensions {
		sib, _ := os.ReadFile(lib + ext)
		if !bytes.Equal(testtool.Decode(t, coding, sib), newLib) {
			t.Errorf("lib.js%s is stale", ext)
		}
	}
	gz, _ := os.ReadFile(app + ".gz")
	if data, _ := os.ReadFile(app); !bytes.Equal(testtool.Decode(t, "gzip", gz), data) {
		t.Error("a sibling of other bytes was kept")
	}
}

// testGzip gzips b.
func testGzip(t *testing.T, b []byte) []byte {
	t.Helper()
	return testtool.Encode(t, "gzip", b)
}

func TestPrecompressRemovesASiblingNoLongerSmaller(t *testing.T) {
	random := make([]byte, 5000)
	_, _ = rand.Read(random)
	dir := tree(t, map[string][]byte{"data.json": random, "data.json.br": []byte("stale")})
	if code, out, errs := runCmd(t, false, "precompress", "-codings", "br", dir); code != 0 || !strings.Contains(out, "removed") {
		t.Fatalf("exit %d, output %q %q", code, out, errs)
	}
	if exists(filepath.Join(dir, "data.json.br")) {
		t.Error("the stale sibling is still there")
	}
}

func TestPrecompressShowsProgressOnATerminal(t *testing.T) {
	dir := tree(t, map[string][]byte{"a.js": text(5000), "b.js": text(6000)})
	code, out, _ := runCmd(t, true, "precompress", dir)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out, "\r\033[K[2/2] ") || strings.Contains(out, "a.js.br: 5000") {
		t.Errorf("output %q", out)
	}
	if !strings.Contains(out, "bytes saved") {
		t.Errorf("no summary: %q", out)
	}
}

func TestPrecompressErrors(t *testing.T) {
	dir := tree(t, map[string][]byte{"a.js": text(5000)})
	file := filepath.Join(dir, "a.js")
	cases := []struct {
		name    string
		args    []string
		code    int
		message string
	}{
		{"no command", nil, exitUsage, "usage:"},
		{"unknown command", []string{"compress", dir}, exitUsage, `unknown command "compress"`},
		{"no DIR", []string{"precompress"}, exitUsage, "no DIR given"},
		{"unknown coding", []string{"precompress", "-codings", "br,lz4", dir}, exitUsage, `"lz4" is not one of br, zstd, gzip`},
		{"deflate has no sibling", []string{"precompress", "-codings", "deflate", dir}, exitUsage, `"deflate" is not one of`},
		{"unknown flag", []string{"precompress", "-level", "3", dir}, exitUsage, "flag provided but not defined"},
		{"missing DIR", []string{"precompress", filepath.Join(dir, "nope")}, exitFail, "no such file or directory"},
		{"a file, not a DIR", []string{"precompress", file}, exitUsage, "is not a directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := runCmd(t, false, c.args...)
			if code != c.code || !strings.Contains(errs, c.message) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errs, c.code, c.message)
			}
		})
	}
	if exists(file + ".br") {
		t.Error("a failed run wrote siblings")
	}
}

// precompress decides from a file's name and first 512 bytes, and streams
// what it encodes: a large video is not read, and a large script costs
// what a small one does. What a run over large files allocates is measured
// against a run over small ones of the same kinds, in the same test.
func TestPrecompressCostDoesNotGrowWithTheFile(t *testing.T) {
	allocated := func(videoSize, scriptSize int64) uint64 {
		dir := tree(t, map[string][]byte{"app.js": text(int(scriptSize))})
		video := filepath.Join(dir, "clip.mp4")
		if err := os.WriteFile(video, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(video, videoSize); err != nil { // sparse: zeros, which no type claims
			t.Fatal(err)
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		code, _, errs := runCmd(t, false, "precompress", "-codings", "gzip", dir)
		runtime.ReadMemStats(&after)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if exists(video + ".gz") {
			t.Error("a video got a sibling")
		}
		gz, err := os.ReadFile(filepath.Join(dir, "app.js.gz"))
		if err != nil {
			t.Fatal(err)
		}
		if data, _ := os.ReadFile(filepath.Join(dir, "app.js")); !bytes.Equal(testtool.Decode(t, "gzip", gz), data) {
			t.Error("app.js.gz does not decode to app.js")
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	small := allocated(4<<10, 64<<10)
	large := allocated(256<<20, 8<<20)
	t.Logf("a 4 KiB video and a 64 KiB script: %d bytes allocated; 256 MiB and 8 MiB: %d", small, large)
	if large > small+2<<20 {
		t.Errorf("precompressing a 256 MiB video and an 8 MiB script allocated %d bytes, %d more than a 4 KiB video and a 64 KiB script", large, large-small)
	}
}
