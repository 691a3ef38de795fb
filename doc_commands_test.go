package squeeze_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/squeezehttp/squeeze/internal/testtool"
)

// Every command README.md, BENCHMARKS.md, example/README.md and docs/ show (but
// docs/perf-history.md, which records the commands of their time) can run
// as written from the repository's root: each program is a go subcommand,
// a script of the repository or a tool the CI installs; each directory it
// changes to, each package and each path it names exists; each -bench and
// -run pattern selects a benchmark or a test of the package it runs in.
// The commands that talk to the demo also run, in example/readme_test.go.
func TestDocumentedCommandsNameWhatExists(t *testing.T) {
	for _, doc := range []string{"README.md", "BENCHMARKS.md", "docs/reference.md", "docs/internals.md", "docs/migration.md", "example/README.md"} {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, script := range docScripts(string(text)) {
			dir := "."
			for _, line := range script {
				for _, words := range shellCommands(line) {
					cmd := strings.Join(words, " ")
					for len(words) > 0 && regexp.MustCompile(`^[A-Z_]+=`).MatchString(words[0]) {
						words = words[1:] // an environment assignment
					}
					if len(words) == 0 {
						continue
					}
					n++
					if err := checkCommand(&dir, words); err != "" {
						t.Errorf("%s: %s: %s", doc, strings.TrimSpace(cmd), err)
					}
				}
			}
		}
		if n == 0 && !strings.HasPrefix(doc, "docs/") {
			t.Errorf("%s: no command found", doc)
		}
		t.Logf("%s: %d commands", doc, n)
	}
}

// docScripts returns the shell commands of text: each code block without
// a language or marked sh, as one script of lines (a line ending in \
// joined to the next), and each inline code span that runs go, a script
// or cd, as a script of one line.
func docScripts(text string) [][]string {
	var scripts [][]string
	var block []string
	fence, shell := false, false
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\n")
		switch trimmed := strings.TrimSpace(line); {
		case !fence && strings.HasPrefix(trimmed, "```"):
			lang := strings.TrimPrefix(trimmed, "```")
			fence, shell, block = true, lang == "" || lang == "sh", nil
		case fence && trimmed == "```":
			fence = false
			if shell {
				scripts = append(scripts, block)
			}
		case fence && len(block) > 0 && strings.HasSuffix(block[len(block)-1], `\`):
			block[len(block)-1] = strings.TrimSuffix(block[len(block)-1], `\`) + " " + trimmed
		case fence:
			block = append(block, testtool.ShellCommand(line))
		default:
			for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(line, -1) {
				span := m[1]
				if regexp.MustCompile(`^(cd |go (test|run|tool|vet|get) |[A-Z_]+=\S* *)*(go (test|run|tool|vet|get) |bench/\S+\.sh|cd \S+ &&)`).MatchString(span) {
					scripts = append(scripts, []string{span})
				}
			}
		}
	}
	return scripts
}

// shellCommands splits a line into its simple commands (at &&, ||, ;
// and |) and each into words, honouring quotes.
func shellCommands(line string) [][]string {
	var cmds [][]string
	var words []string
	var w strings.Builder
	var quote byte
	inWord := false
	endWord := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			w.WriteByte(c)
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			endWord()
		case c == '&' || c == '|' || c == ';':
			endWord()
			if len(words) > 0 {
				cmds = append(cmds, words)
			}
			words = nil
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	endWord()
	if len(words) > 0 {
		cmds = append(cmds, words)
	}
	return cmds
}

// docTools are the programs the commands may run besides go and the
// repository's scripts: the ones the CI installs or every system has.
var docTools = []string{"bash", "curl", "gzip", "zstd", "brotli", "grep", "head", "tail", "chromium", "wrk", "cat", "echo", "redis-server", "redis-benchmark"}

// checkCommand checks one simple command run in *dir, and follows a cd.
// It returns what is wrong, or "".
func checkCommand(dir *string, words []string) string {
	switch prog := words[0]; {
	case prog == "cd":
		if len(words) != 2 {
			return "cd needs one directory"
		}
		next := filepath.Clean(filepath.Join(*dir, words[1]))
		if fi, err := os.Stat(next); err != nil || !fi.IsDir() {
			return "no directory " + next
		}
		*dir = next
		return ""
	case prog == "go":
		return checkGo(*dir, words[1:])
	case strings.Contains(prog, "/"):
		fi, err := os.Stat(filepath.Join(*dir, prog))
		if err != nil || fi.Mode()&0o111 == 0 {
			return "no executable " + filepath.Join(*dir, prog)
		}
		return ""
	case slices.Contains(docTools, prog):
		return ""
	}
	return "runs " + words[0] + ", which is neither go, a script of the repository nor a tool the CI installs"
}

// checkGo checks a go command run in dir.
func checkGo(dir string, args []string) string {
	if len(args) == 0 {
		return "go without a subcommand"
	}
	sub, args := args[0], args[1:]
	var pkgs []string
	flags := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if name, ok := strings.CutPrefix(a, "-"); ok {
			if name, value, ok := strings.Cut(name, "="); ok {
				flags[name] = value
			} else if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && !slices.Contains([]string{"v", "race", "benchmem", "short", "diff", "quick"}, name) {
				flags[name] = args[i+1]
				i++
			}
			continue
		}
		pkgs = append(pkgs, a)
	}
	switch sub {
	case "test", "vet", "run", "build":
	default:
		return "" // go get, go tool, go mod: nothing in the repository to check
	}
	if len(pkgs) == 0 {
		pkgs = []string{"."}
	}
	for _, pkg := range pkgs {
		if strings.HasSuffix(pkg, "...") {
			continue
		}
		p := filepath.Join(dir, pkg)
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() && !strings.HasSuffix(p, ".go") {
			return "no package " + p
		}
		if sub != "test" {
			continue
		}
		for flag, prefix := range map[string]string{"bench": "Benchmark", "run": "Test"} {
			pattern, ok := flags[flag]
			if !ok || pattern == "^$" || pattern == "XXX" {
				continue
			}
			if !selectsAny(p, prefix, pattern) {
				return "-" + flag + " " + pattern + " selects nothing in " + p
			}
		}
	}
	return ""
}

// selectsAny reports whether the first element of the -bench or -run
// pattern (the part before a top-level slash) matches a top-level
// function with the prefix in the _test.go files of dir.
func selectsAny(dir, prefix, pattern string) bool {
	first := pattern
	depth := 0
	for i, c := range pattern {
		switch c {
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case '/':
			if depth == 0 {
				first = pattern[:i]
			}
		}
		if first != pattern {
			break
		}
	}
	re, err := regexp.Compile(first)
	if err != nil {
		return false
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	decl := regexp.MustCompile(`(?m)^func (` + prefix + `\w*)\(`)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
			if re.MatchString(m[1]) {
				return true
			}
		}
	}
	return false
}

// Every relative link in README.md, BENCHMARKS.md, docs/ and
// example/README.md names a file or directory of the repository and, with a
// #fragment, a heading of that Markdown file (GitHub's anchors: lower case,
// punctuation but - and _ dropped, spaces as -).
func TestDocumentedLinksResolve(t *testing.T) {
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{"README.md", "BENCHMARKS.md", "example/README.md"}, docs...)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, doc := range docs {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, fragment, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), file)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s links to %s: no such file", doc, target)
					continue
				}
			}
			if fragment == "" {
				continue
			}
			if !slices.Contains(markdownAnchors(t, path), fragment) {
				t.Errorf("%s links to %s: %s has no heading with that anchor", doc, target, path)
			}
		}
	}
}

// markdownAnchors returns the anchors GitHub gives the headings of the
// Markdown file path, outside code blocks.
func markdownAnchors(t *testing.T, path string) []string {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var anchors []string
	seen := map[string]int{}
	fence := false
	for line := range strings.Lines(string(text)) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
		}
		heading, ok := strings.CutPrefix(line, "#")
		if fence || !ok {
			continue
		}
		heading = strings.TrimSpace(strings.TrimLeft(heading, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(heading) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		anchor := b.String()
		if n := seen[anchor]; n > 0 {
			anchors = append(anchors, fmt.Sprintf("%s-%d", anchor, n))
		} else {
			anchors = append(anchors, anchor)
		}
		seen[anchor]++
	}
	return anchors
}
