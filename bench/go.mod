module github.com/squeezehttp/squeeze/bench

go 1.26.0

replace github.com/squeezehttp/squeeze => ../

require (
	github.com/CAFxX/httpcompression v0.0.8
	github.com/NYTimes/gziphandler v1.1.1
	github.com/andybalholm/brotli v1.3.0
	github.com/go-chi/chi/v5 v5.5.0
	github.com/klauspost/compress v1.20.4
	github.com/maypok86/otter/v2 v2.4.0
	github.com/molecule-man/go-brrr v1.3.1
	github.com/squeezehttp/squeeze v0.0.0
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da
)

require (
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)

tool golang.org/x/perf/cmd/benchstat
