module github.com/squeezehttp/squeeze

go 1.26.0

require (
	github.com/andybalholm/brotli v1.3.0
	github.com/klauspost/compress v1.20.4
	github.com/maypok86/otter/v2 v2.4.0
	github.com/molecule-man/go-brrr v1.3.1
	go.uber.org/goleak v1.3.0
	golang.org/x/sync v0.24.0
	golang.org/x/time v0.16.0
)

require golang.org/x/tools v0.49.0 // indirect
