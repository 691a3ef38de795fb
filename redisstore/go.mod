module github.com/squeezehttp/squeeze/redisstore

go 1.26.0

replace github.com/squeezehttp/squeeze => ../

require (
	github.com/redis/go-redis/v9 v9.23.0
	github.com/squeezehttp/squeeze v0.0.0
)

require (
	github.com/andybalholm/brotli v1.3.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/maypok86/otter/v2 v2.4.0 // indirect
	github.com/molecule-man/go-brrr v1.3.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)
