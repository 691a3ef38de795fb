package squeeze_test

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"time"

	"github.com/squeezehttp/squeeze"
)

// A search route whose pages share a template: squeeze samples eight of
// them, learns a dictionary in the background, links it from HTML, and
// sends the next page to a client holding it as a dcz delta.
func ExampleWithLearnedDictionary() {
	m, err := squeeze.New(squeeze.WithLearnedDictionary("/search/*",
		squeeze.LearnedSamples(8), squeeze.LearnedInterval(time.Minute)))
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler(searchHandler("shop")))
	defer srv.Close()
	get := func(path string, header ...string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			log.Fatal(err)
		}
		return res
	}
	for i := range 8 {
		res := get("/search/"+strconv.Itoa(i), "Accept-Encoding", "br")
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}

	// The dictionary is trained in the background: a page links it once
	// it is published.
	link := regexp.MustCompile(`<([^>]+)>; rel="compression-dictionary"`)
	var dict []byte
	for try := 0; dict == nil && try < 100; try++ {
		res := get("/search/100", "Accept-Encoding", "br")
		res.Body.Close()
		if l := link.FindStringSubmatch(res.Header.Get("Link")); l != nil {
			d := get(l[1])
			dict, _ = io.ReadAll(d.Body)
			d.Body.Close()
			fmt.Println("Use-As-Dictionary names", regexp.MustCompile(`match="[^"]*"`).FindString(d.Header.Get("Use-As-Dictionary")))
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}

	sum := sha256.Sum256(dict)
	res := get("/search/101", "Accept-Encoding", "dcz, br",
		"Available-Dictionary", ":"+base64.StdEncoding.EncodeToString(sum[:])+":")
	res.Body.Close()
	fmt.Println("the next page goes out as", res.Header.Get("Content-Encoding"))
	// Output:
	// Use-As-Dictionary names match="/search/*"
	// the next page goes out as dcz
}
