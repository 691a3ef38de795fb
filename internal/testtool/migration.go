package testtool

import (
	"os"
	"strings"
	"testing"
)

// Helpers of the adapters' migration tests (echo/, gin/), which run the rows
// of docs/migration.md that need a framework, as the root's
// migration_test.go runs the others.

// MigrationCase is one response a migration row is tried with: its content
// type, body size and the client's Accept-Encoding.
type MigrationCase struct {
	ContentType string
	Size        int
	AE          string
}

// MigrationCases returns the cases: types a peer that compresses every type
// and squeeze treat alike and differently, sizes around squeeze's minimum,
// clients that accept gzip alone, squeeze's codings, or neither.
func MigrationCases() []MigrationCase {
	var cases []MigrationCase
	for _, ct := range []string{"text/html; charset=utf-8", "application/json", "text/css", "application/octet-stream", "image/png", "application/zip"} {
		for _, size := range []int{200, 1200, 4096} {
			for _, ae := range []string{"gzip", "zstd", "br", "gzip, deflate, br, zstd", "deflate", ""} {
				cases = append(cases, MigrationCase{ct, size, ae})
			}
		}
	}
	return cases
}

// FirstAccepted returns the first of offered that the Accept-Encoding list
// ae names, or "".
func FirstAccepted(ae string, offered ...string) string {
	for _, coding := range offered {
		for v := range strings.SplitSeq(ae, ",") {
			if strings.TrimSpace(v) == coding {
				return coding
			}
		}
	}
	return ""
}

// CheckMigrationRow fails t unless the table of docs/migration.md (at doc)
// has code in a cell and the test file src runs it as written.
func CheckMigrationRow(t *testing.T, doc, src, code string) {
	t.Helper()
	table, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(table), "`"+code+"`") {
		t.Errorf("%s's table has no `%s`", doc, code)
	}
	if !strings.Contains(string(self), code) {
		t.Errorf("%s does not run the row's code %s", src, code)
	}
}
