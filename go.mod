module github.com/squeezehttp/squeeze

go 1.26.8

require (
	github.com/andybalholm/brotli v1.3.0 // indirect
	github.com/go-chi/chi/v5 v5.5.0 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	golang.org/x/sync v0.24.0 // indirect
)
