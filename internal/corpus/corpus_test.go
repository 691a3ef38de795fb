package corpus_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/squeezehttp/squeeze/internal/corpus"
)

func TestDocumentsAreWhatTheirNamesSay(t *testing.T) {
	for _, d := range corpus.All(t) {
		t.Run(d.Name, func(t *testing.T) {
			if len(d.Data) < 16<<10 {
				t.Fatalf("%d bytes, want at least 16 KiB for the allocation tests", len(d.Data))
			}
			switch d.Name {
			case "html":
				if !bytes.Contains(d.Data, []byte("<h2")) || !bytes.Contains(d.Data, []byte("<p>")) {
					t.Errorf("does not look like HTML: %q", d.Data[:64])
				}
			case "json":
				if !json.Valid(d.Data) {
					t.Error("not valid JSON")
				}
			case "js":
				if !bytes.Contains(d.Data, []byte("function")) {
					t.Errorf("does not look like JavaScript: %q", d.Data[:64])
				}
			}
		})
	}
}

func TestReturnedSlicesAreTheCallersOwn(t *testing.T) {
	a := corpus.HTML(t)
	a[0] ^= 0xff
	if b := corpus.HTML(t); b[0] == a[0] {
		t.Fatal("a second call saw the first caller's write")
	}
}
