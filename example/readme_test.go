package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/squeezehttp/squeeze/internal/testtool"
)

// readmeAddr is the demo's default address, as the README's commands use it.
const readmeAddr = "127.0.0.1:8080"

// fences returns the bodies of the root README's code blocks of one
// language.
func fences(t *testing.T, lang string) []string {
	t.Helper()
	return fencesOf(t, filepath.Join("..", "README.md"), lang)
}

// fencesOf returns the bodies of the code blocks of one language in the
// Markdown file path.
func fencesOf(t *testing.T, path, lang string) []string {
	t.Helper()
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	var block *strings.Builder
	for line := range strings.Lines(string(readme)) {
		switch {
		case block == nil && strings.TrimSpace(line) == "```"+lang:
			block = &strings.Builder{}
		case block != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, block.String())
			block = nil
		case block != nil:
			block.WriteString(line)
		}
	}
	if block != nil {
		t.Fatalf("%s: a ```%s block is not closed", path, lang)
	}
	return blocks
}

// The README's complete program is example/hello/main.go, which go vet and
// go build compile, and every other Go excerpt of it is taken from that file.
func TestReadmeProgramIsHello(t *testing.T) {
	hello, err := os.ReadFile(filepath.Join("hello", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, block := range fences(t, "go") {
		if strings.Contains(block, "package main") {
			found = true
			if block != string(hello) {
				t.Errorf("README.md's complete program differs from example/hello/main.go; copy the file into the README:\n%s", hello)
			}
		}
		if strings.HasPrefix(block, "func ") && !strings.Contains(string(hello), block) {
			t.Errorf("README.md shows a function that is not in example/hello/main.go:\n%s", block)
		}
	}
	if !found {
		t.Error("README.md has no complete program (a ```go block with package main)")
	}
}

// demoCommands returns the shell command lines of the demo's README
// (example/README.md) that talk to the demo server.
func demoCommands(t *testing.T) []string {
	t.Helper()
	var cmds []string
	for _, block := range fencesOf(t, "README.md", "sh") {
		for line := range strings.Lines(block) {
			if cmd := testtool.ShellCommand(line); strings.Contains(cmd, readmeAddr) {
				cmds = append(cmds, cmd)
			}
		}
	}
	return cmds
}

// programs returns the program each stage of a pipeline runs.
func programs(cmd string) []string {
	var names []string
	for _, stage := range strings.Split(cmd, "|") {
		if fields := strings.Fields(stage); len(fields) > 0 {
			names = append(names, fields[0])
		}
	}
	return names
}

// Every command of example/README.md that talks to the demo runs as written against the
// demo, started in-process on a free port that replaces 127.0.0.1:8080.
// --fail is added to curl so that an HTTP error fails the command too. A
// command whose tools are missing is skipped, or fails under CI=true.
func TestReadmeCommandsRunAgainstTheDemo(t *testing.T) {
	cmds := demoCommands(t)
	if len(cmds) == 0 {
		t.Fatal("example/README.md has no shell command that talks to the demo")
	}
	bash := testtool.Require(t, "bash")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, ln, 10*time.Millisecond, "", &out) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("demo server: %v", err)
		}
	})

	for _, cmd := range cmds {
		t.Run(cmd, func(t *testing.T) {
			for _, name := range programs(cmd) {
				testtool.Require(t, name)
			}
			line := strings.ReplaceAll(cmd, readmeAddr, ln.Addr().String())
			line = strings.ReplaceAll(line, "curl ", "curl --fail ")
			ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
			defer cancel()
			c := exec.CommandContext(ctx, bash, "-e", "-u", "-o", "pipefail", "-c", line)
			output, err := c.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", line, err, output)
			}
			if len(strings.TrimSpace(string(output))) == 0 {
				t.Errorf("%s printed nothing", line)
			}
			t.Logf("%s\n%s", line, output)
		})
	}
}

// The README's static-files recipe is the demo's: every line of its code
// (comments aside) is a line of app.go, where the demo mounts its
// FileServer, so that the Chromium tests prove the recipe as written
// (TestChromiumGetsTheNextReleaseAsADelta: deltas to a browser that sends
// the demo's cookie, behind the recipe's Cache-Control: public).
func TestReadmeStaticRecipeIsTheDemos(t *testing.T) {
	app, err := os.ReadFile("app.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for line := range strings.Lines(string(app)) {
		lines[strings.TrimSpace(line)] = true
	}
	found := false
	for _, block := range fences(t, "go") {
		if !strings.Contains(block, ".FileServer(") {
			continue
		}
		found = true
		for line := range strings.Lines(block) {
			code := strings.TrimSpace(line)
			if code == "" || strings.HasPrefix(code, "// ") {
				continue
			}
			if !lines[code] {
				t.Errorf("README.md's static-files recipe has a line that example/app.go does not: %s", code)
			}
		}
	}
	if !found {
		t.Error("README.md has no static-files recipe (a ```go block calling FileServer)")
	}
}
