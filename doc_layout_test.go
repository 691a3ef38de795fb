package squeeze_test

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// testFileConventions are the test files Go's conventions name for what
// they hold rather than for one source file: package-level examples, the
// exports to the external tests, shared helpers and the race-detector
// switch.
var testFileConventions = []string{
	"example_test.go", "export_test.go", "export_fleet_test.go", "helpers_test.go",
	"race_on_test.go", "race_off_test.go",
}

// Each test file of the package sorts beside the source file it tests: its
// name is a source file's name (without .go) then _ and the behaviour it
// pins, or just _test.go; the conventional files aside.
func TestTestFilesAreNamedForTheirSourceFile(t *testing.T) {
	sources, tests := packageFiles(t)
	for _, test := range tests {
		if slices.Contains(testFileConventions, test) {
			continue
		}
		stem := strings.TrimSuffix(test, "_test.go")
		if !slices.ContainsFunc(sources, func(src string) bool {
			s := strings.TrimSuffix(src, ".go")
			return stem == s || strings.HasPrefix(stem, s+"_")
		}) {
			t.Errorf("%s is named for no source file of the package", test)
		}
	}
}

// The Layout table of docs/internals.md names every source file of the
// package, by name or by a pattern (fileserver_stat_*.go).
func TestLayoutNamesEverySourceFile(t *testing.T) {
	text, err := os.ReadFile("docs/internals.md")
	if err != nil {
		t.Fatal(err)
	}
	_, layout, _ := strings.Cut(string(text), "\n## Layout\n")
	layout, _, _ = strings.Cut(layout, "\n## ")
	var named []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(layout, -1) {
		named = append(named, m[1])
	}
	sources, _ := packageFiles(t)
	for _, src := range sources {
		if !slices.ContainsFunc(named, func(pattern string) bool {
			ok, _ := path.Match(pattern, src)
			return ok
		}) {
			t.Errorf("docs/internals.md's Layout does not name %s", src)
		}
	}
}

// packageFiles returns the names of the package's source files and test
// files.
func packageFiles(t *testing.T) (sources, tests []string) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			tests = append(tests, f)
		} else {
			sources = append(sources, f)
		}
	}
	if len(sources) == 0 || len(tests) == 0 {
		t.Fatalf("found %d source and %d test files", len(sources), len(tests))
	}
	return sources, tests
}

// readmeMaxLines is how long README.md may grow: it holds the recipes, and
// every detail goes to docs/.
const readmeMaxLines = 300

// README.md stays a page of recipes, at most readmeMaxLines lines.
func TestReadmeStaysWithinItsLength(t *testing.T) {
	text, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(text), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move details to docs/reference.md or docs/internals.md", n, readmeMaxLines)
	}
}
