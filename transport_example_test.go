package squeeze_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/squeezehttp/squeeze"
)

// A client whose Transport asks for zstd, br or gzip, decodes the answer
// under a size cap, and compresses its uploads. The server here is squeeze
// too: it picks zstd from the client's Accept-Encoding and decodes the
// upload before the handler reads it.
func ExampleTransport() {
	m, err := squeeze.New()
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body) // decoded by squeeze
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "uploaded %d bytes; %s", n, strings.Repeat("squeeze ", 1000))
	})))
	defer srv.Close()

	tr := &squeeze.Transport{
		MaxDecompressedSize: 1 << 20,
		RequestEncoding:     squeeze.Zstd,
		RequestMinSize:      1024,
	}
	client := &http.Client{Transport: tr}
	defer client.CloseIdleConnections()

	upload := bytes.Repeat([]byte("a compressible upload "), 500)
	resp, err := client.Post(srv.URL, "text/plain", bytes.NewReader(upload))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		log.Fatalf("response over %d bytes once decoded", tooBig.Limit)
	case errors.Is(err, squeeze.ErrInvalidBody):
		log.Fatal("response is not valid for its Content-Encoding")
	case err != nil:
		log.Fatal(err)
	}
	fmt.Println(string(body[:20]))
	fmt.Println("decoded:", resp.Uncompressed, len(body), "bytes")
	// Output:
	// uploaded 11000 bytes
	// decoded: true 8022 bytes
}
