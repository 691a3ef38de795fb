package squeeze_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/squeezehttp/squeeze"
)

// CacheTrustedETags lets the Cache serve streams by their strong ETag, and
// trusts the handler's tag as much as a shared cache would: a handler that
// keeps one tag over output that differs per user sends the first user's
// body to the next one. Use it only where every strong tag changes with the
// bytes it stands for.
func ExampleCacheTrustedETags() {
	cache, err := squeeze.NewCache(16 << 20)
	if err != nil {
		log.Fatal(err)
	}
	defer cache.Close()
	m := squeeze.MustNew(squeeze.WithCache(cache, squeeze.CacheTrustedETags()),
		squeeze.WithEncodings(squeeze.Gzip), squeeze.WithBufferSize(4096))

	// A report streamed in pieces, longer than the buffer, whose tag names
	// the data's version but whose greeting names the user: a mistake that
	// only CacheTrustedETags turns into a leak.
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("ETag", `"report-v7"`)
		fmt.Fprintf(w, "Hello %s\n", r.Header.Get("X-User"))
		for i := range 1000 {
			fmt.Fprintf(w, "row %d\n", i)
		}
	}))

	for _, user := range []string{"alice", "bob"} {
		req := httptest.NewRequest("GET", "/report", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		req.Header.Set("X-User", user)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		res := rec.Result()
		body, err := io.ReadAll(res.Body) // httptest's Result does not decode
		if err != nil {
			log.Fatal(err)
		}
		plain := gunzip(body)
		fmt.Printf("%s: ETag %s, first line %q\n", user, res.Header.Get("ETag"), plain[:strings.IndexByte(plain, '\n')])
	}
	st := cache.Stats()
	fmt.Println("hits:", st.Hits, "stores:", st.Stores)
	// Output:
	// alice: ETag "report-v7-gzip", first line "Hello alice"
	// bob: ETag "report-v7-gzip", first line "Hello alice"
	// hits: 1 stores: 1
}

// WithoutContentTypes with WithContentTypes("*/*") compresses by exclusion,
// as gzhttp does: every type but the ones listed, application/octet-stream
// included.
func ExampleWithoutContentTypes() {
	m := squeeze.MustNew(
		squeeze.WithContentTypes("*/*"),
		squeeze.WithoutContentTypes("image/*", "video/*", "audio/*", "application/zip"),
	)
	payload := strings.Repeat("squeeze ", 512)
	for _, ct := range []string{"application/octet-stream", "application/x-custom", "image/png", "application/zip"} {
		h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			io.WriteString(w, payload)
		}))
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Printf("%s: Content-Encoding %q\n", ct, rec.Header().Get("Content-Encoding"))
	}

	_, err := squeeze.New(squeeze.WithoutContentTypes())
	fmt.Println(err)
	// Output:
	// application/octet-stream: Content-Encoding "gzip"
	// application/x-custom: Content-Encoding "gzip"
	// image/png: Content-Encoding ""
	// application/zip: Content-Encoding ""
	// squeeze: WithoutContentTypes(): needs at least one pattern (leave the option out to exclude none)
}

func gunzip(b []byte) string {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		log.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		log.Fatal(err)
	}
	return string(plain)
}

// mapStore is a SharedStore in a map, for the example below; a fleet uses
// Redis through github.com/squeezehttp/squeeze/redisstore.
type mapStore struct {
	mu     sync.Mutex
	values map[string][]byte
}

func (s *mapStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.values)
}

func (s *mapStore) Get(_ context.Context, key string, limit int) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.values[key]
	return v, ok && len(v) <= limit, nil
}

func (s *mapStore) Set(_ context.Context, key string, value []byte, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values[key] = bytes.Clone(value)
	return nil
}

func (s *mapStore) Claim(_ context.Context, key string, value []byte, _ time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.values[key]; ok {
		return false, nil
	}
	s.values[key] = bytes.Clone(value)
	return true, nil
}

// SharedWriteBudget bounds what a replica writes to the fleet's
// store, whatever its clients send: here a page that echoes its query, on
// a dictionary path, is asked for under 20 queries, each by a client that
// then names it as its dictionary (all it takes for a body to earn a
// write), and the replica writes 5.
func ExampleSharedWriteBudget() {
	store := &mapStore{values: map[string][]byte{}}
	m := squeeze.MustNew(
		squeeze.WithDictionaryMatch("/search"),
		squeeze.WithSharedStore(store, squeeze.SharedMaxValue(64<<10), squeeze.SharedWriteBudget(5, 1<<20)), // a minute
	)
	page := func(q string) []byte {
		return []byte("<!doctype html><title>" + q + "</title>" + strings.Repeat("<p>results for "+q+"</p>", 200))
	}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Cache-Control", "max-age=60") // a browser keeps only a fresh dictionary
		_, _ = w.Write(page(r.URL.RawQuery))
	}))
	for i := range 20 {
		q := fmt.Sprintf("q=%d", i)
		for _, dict := range []string{"", q} {
			req := httptest.NewRequest("GET", "/search?"+q, nil)
			req.Header.Set("Accept-Encoding", "zstd, dcz")
			if dict != "" {
				sum := sha256.Sum256(page(dict))
				req.Header.Set("Available-Dictionary", ":"+base64.StdEncoding.EncodeToString(sum[:])+":")
			}
			h.ServeHTTP(httptest.NewRecorder(), req)
		}
	}
	// The writes are made in the background: wait for them.
	for deadline := time.Now().Add(5 * time.Second); store.len() < 5 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("written:", store.len())
	// Output:
	// written: 5
}
