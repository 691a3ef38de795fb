// Command hello is the complete program in squeeze's README: a JSON API and
// an upload endpoint behind the middleware, with the defaults.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"

	"github.com/squeezehttp/squeeze"
)

func main() {
	m, err := squeeze.New() // defaults: zstd, br, gzip; bodies of 1 KiB and more
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/items", listItems)
	mux.HandleFunc("POST /upload", upload)
	log.Fatal(http.ListenAndServe("127.0.0.1:8081", m.Handler(mux)))
}

// listItems answers with a JSON list of about 2 KiB, enough to be compressed.
func listItems(w http.ResponseWriter, r *http.Request) {
	items := make([]string, 200)
	for i := range items {
		items[i] = fmt.Sprintf("item %d", i)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(items) // an error means the client went away
}

// upload reads the request body, which squeeze has already decoded if it
// came with a Content-Encoding, and answers with its size.
func upload(w http.ResponseWriter, r *http.Request) {
	n, err := io.Copy(io.Discard, r.Body)
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		_, _ = fmt.Fprintf(w, "received %d bytes\n", n)
	case errors.As(err, &tooBig):
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
	case errors.Is(err, squeeze.ErrInvalidBody):
		http.Error(w, "body is not valid for its Content-Encoding", http.StatusBadRequest)
	case errors.Is(err, squeeze.ErrDecoderBusy):
		w.Header().Set("Retry-After", "1")
		http.Error(w, "busy", http.StatusServiceUnavailable)
	default:
		http.Error(w, "reading the body failed", http.StatusBadRequest)
	}
}
