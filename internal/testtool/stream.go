package testtool

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
)

// OpenStream GETs url through c with Accept-Encoding coding alone, fails
// the test unless the response has that Content-Encoding, and returns its
// body decoded (see NewReader) as a reader of lines: for a test that reads
// a stream a piece at a time while the handler waits for it. The body is
// closed when the test ends.
func OpenStream(t testing.TB, c *http.Client, url, coding string) *bufio.Reader {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", coding)
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	t.Cleanup(func() { _ = res.Body.Close() })
	if ce := res.Header.Get("Content-Encoding"); ce != coding {
		t.Fatalf("GET %s: Content-Encoding %q, want %q", url, ce, coding)
	}
	dec, err := NewReader(coding, res.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	t.Cleanup(func() { _ = dec.Close() })
	return bufio.NewReader(dec)
}

// ReadEvent reads one server-sent event from lines: its lines up to and
// including the blank line that ends it. At an error it returns what it
// read with the error.
func ReadEvent(lines *bufio.Reader) (string, error) {
	var event strings.Builder
	for {
		line, err := lines.ReadString('\n')
		event.WriteString(line)
		if err != nil || line == "\n" {
			return event.String(), err
		}
	}
}
