package squeeze

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// standaloneDictionary is a dictionary of WithDictionary and what serves it.
type standaloneDictionary struct {
	d                        *dictionary
	etag, useAs, contentType string
	s                        *dictStore // for its reports
	route                    *dictRoute // for registrable's log
}

// ServeHTTP answers a GET or HEAD for a WithDictionary path, through
// the middleware like any response, with the dictionary's strong ETag and
// Use-As-Dictionary, and "public, " dictionaryCacheControl unless the
// handler in front set a Cache-Control (dictionaryHeaders); one that keeps
// a browser from registering it drops Use-As-Dictionary, counted.
func (sd *standaloneDictionary) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h["Content-Type"] = []string{sd.contentType}
	// Bytes learned from responses, or chosen by the operator, are no
	// page: a browser must not sniff them into one (a learned dictionary
	// holds text of HTML responses).
	h["X-Content-Type-Options"] = []string{"nosniff"}
	h["Etag"] = []string{sd.etag}
	// The same bytes for every client, chosen by the operator or learned
	// from public responses only: a shared cache may keep them, and a
	// browser that sends a cookie still stores them.
	useAs := sd.useAs
	if !sd.s.registrable(h, "public, "+dictionaryCacheControl, r, sd.route) {
		// The handler in front set caching headers no browser keeps a
		// dictionary under: it goes out as bytes, counted.
		useAs = ""
	}
	dictionaryHeaders(h, false, useAs, "public, "+dictionaryCacheControl, nil)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(sd.d.data))
}

// standaloneFor returns the handler of the WithDictionary dictionary at the
// request's path, or nil. Only GET and HEAD are answered.
func (s *dictStore) standaloneFor(r *http.Request) http.Handler {
	if s == nil || len(s.standalone) == 0 && len(s.learner.routes) == 0 || r.Method != http.MethodGet && r.Method != http.MethodHead {
		return nil
	}
	if sd := s.standalone[r.URL.Path]; sd != nil {
		return sd
	}
	return s.learner.server(r.Context(), r.URL.Path)
}

// standaloneConfig is one WithDictionary.
type standaloneConfig struct {
	path, match string
	data        []byte
}

// WithDictionaryMatch turns on Compression Dictionary Transport (RFC 9842)
// for the paths matching patterns. Each pattern is a path starting with "/"
// in which "*" matches any run of characters, "/" included, such as
// "/static/app.*.js" or "/api/*"; the other special characters of
// URLPattern ( "(){}:\?+#" ) are errors.
//
// A public GET 200 response to a matching path, of a type
// [WithContentTypes] allows, carries Use-As-Dictionary and is remembered
// (see [WithDictionaryStoreSize]); a private one (Cache-Control private or
// no-store, Set-Cookie, Vary: *, or credentials without Cache-Control:
// public) is neither remembered nor sent as a delta against a remembered
// dictionary. A later request naming that body in Available-Dictionary and
// [DCZ] or [DCB] in Accept-Encoding gets a delta, from the same origin or,
// in CORS mode, one the response's Access-Control-Allow-Origin allows;
// never from another site. Details: docs/reference.md ("Dictionaries").
//
// Calls add up: two calls match the patterns of both (a pattern an earlier
// call gave counts once); within one call a pattern listed twice is an
// error.
//
// Do not use it for responses that mix secrets with input an attacker can
// choose: like any compression of such responses, a delta's size can leak
// the secret.
func WithDictionaryMatch(patterns ...string) Option {
	return func(c *config) error {
		call := fmt.Sprintf("WithDictionaryMatch(%s)", quoteList(patterns))
		list, err := canonicalList(call, "pattern", patterns, func(p string) (string, error) {
			return parseMatchPattern(call, p)
		})
		if err != nil {
			return err
		}
		for _, p := range list {
			if !slices.Contains(c.dictMatch, p) {
				c.dictMatch = append(c.dictMatch, p)
			}
		}
		return nil
	}
}

// WithDictionaryStoreSize sets the byte budget of the dictionaries
// remembered from responses (see [WithDictionaryMatch]); the least recently
// used go first when it is exceeded, and a body larger than a quarter of it
// is not remembered. The default is 64 MiB; n must be
// positive. Dictionaries of [WithDictionary], and the state built for them,
// do not count.
//
// The budget counts all the store holds for a remembered dictionary, the
// dcb tables built for it included (charged before they are built; when
// they do not fit, the client gets dcz or no delta); docs/internals.md
// ("The dictionary store") says what else is held beyond it.
func WithDictionaryStoreSize(n int64) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("squeeze: WithDictionaryStoreSize(%d): size must be positive", n)
		}
		c.dictStoreSize = n
		return nil
	}
}

// WithDictionary registers a standalone dictionary, such as one trained on
// API responses with klauspost/compress's dictionary builder. squeeze
// answers GET and HEAD for path itself, with data, a strong ETag, a
// Cache-Control keeping it a day and Use-As-Dictionary: match="<match>";
// every text/html response squeeze handles carries
// Link: <path>; rel="compression-dictionary", so that a browser fetches it
// when idle. Responses to paths matching match are then sent as deltas
// against data to clients holding it, as with [WithDictionaryMatch].
//
// path must start with "/" and hold no character a URL path cannot hold
// unescaped; match is a pattern as in WithDictionaryMatch. Empty data and a
// path registered twice are errors. data is copied.
func WithDictionary(path, match string, data []byte) Option {
	return func(c *config) error {
		call := fmt.Sprintf("WithDictionary(%q, %q, %d bytes)", path, match, len(data))
		if len(data) == 0 {
			return fmt.Errorf("squeeze: %s: the dictionary is empty", call)
		}
		if err := checkDictionaryPath(path); err != nil {
			return fmt.Errorf("squeeze: %s: path %w", call, err)
		}
		if _, err := parseMatchPattern(call, match); err != nil {
			return err
		}
		for _, sd := range c.standalone {
			if sd.path == path {
				return fmt.Errorf("squeeze: %s: path %q has a dictionary already", call, path)
			}
		}
		c.standalone = append(c.standalone, standaloneConfig{path: path, match: match, data: bytes.Clone(data)})
		return nil
	}
}

// checkDictionaryPath checks a WithDictionary path: an absolute path with
// no character that would need escaping in a URL or a Link field.
func checkDictionaryPath(p string) error {
	if !strings.HasPrefix(p, "/") {
		return errors.New("must start with /")
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c >= 0x7f || strings.IndexByte(`<>"\?#`, c) >= 0 {
			return fmt.Errorf("has %q, which a URL path cannot hold unescaped", c)
		}
	}
	return nil
}
