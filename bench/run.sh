#!/usr/bin/env bash
# run.sh runs squeeze's comparative benchmarks and prints the tables that
# docs/perf-history.md quotes: squeeze against the pooled-encoder floor and the peer
# middlewares, request decoding, heap per in-flight stream, and load over
# loopback with wrk against the example server.
#
#   bench/run.sh          full run (about 20 minutes on 2 cores), results in bench/results/
#   bench/run.sh -quick   every benchmark once (-benchtime 1x) plus the round-trip
#                         checks and a 1 s wrk smoke test; prints its tables, then
#                         removes its temp dir (set BENCH_OUT to keep the files)
#
# Of bench/results/, git tracks what docs/perf-history.md quotes: tables.txt,
# targets.md, wrk.md and machine.txt. The raw benchmark output (bench.txt,
# allocs.txt, inflight.txt) stays on disk for re-running phases and
# recomputing tables, and is ignored (bench/results/.gitignore).
#
# Environment (full run): COUNT (10), BENCHTIME (100ms), CPUS (1,2),
# STREAMS (1000; 100 for the peers' defaults, which can hold 19 MB a stream),
# WRK_DURATION (5s), BENCH_OUT (bench/results), PHASES ("bench allocs inflight
# wrk tables": a subset re-runs only those phases over the results already in
# BENCH_OUT).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$here"

mode=full
case "${1:-}" in
"") ;;
-quick | --quick) mode=quick ;;
*)
	echo "usage: $0 [-quick]" >&2
	exit 2
	;;
esac

tmp=$(mktemp -d)
server_pid=""
cleanup() {
	if [[ -n $server_pid ]]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

if [[ $mode == quick ]]; then
	count=1 benchtime=1x cpus=1,2 streams=50 default_streams=20 wrk_duration=1s
	out=${BENCH_OUT:-$tmp/results}
else
	count=${COUNT:-10} benchtime=${BENCHTIME:-100ms} cpus=${CPUS:-1,2}
	streams=${STREAMS:-1000} default_streams=${DEFAULT_STREAMS:-100} wrk_duration=${WRK_DURATION:-5s}
	out=${BENCH_OUT:-$here/results}
fi
mkdir -p "$out"

step() { printf '\n== %s\n' "$*" >&2; }
phases=${PHASES:-bench allocs inflight wrk tables}
phase() { [[ " $phases " == *" $1 "* ]]; }

step "vet and round-trip checks"
go vet ./...
go test -count=1 ./...

step "machine"
phase bench && : >"$out/machine.txt"
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "nproc: $(nproc)"
	echo "cpu: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "go: $(go version)"
	echo "kernel: $(uname -sr)"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "command: bench/run.sh $* (count=$count benchtime=$benchtime cpus=$cpus streams=$streams/$default_streams wrk=$wrk_duration phases=$phases)"
} | tee -a "$out/machine.txt" >&2

go test -c -o "$tmp/bench.test" .

# Each round runs every benchmark once, so that slow drift in machine load
# spreads over all implementations instead of landing on whichever ran last.
# The peers-at-defaults and request-decoding benchmarks run at GOMAXPROCS 1
# only, to keep the full run near 20 minutes on 2 cores.
phase bench && step "benchmarks: $count rounds, -benchtime $benchtime, -cpu $cpus" && : >"$out/bench.txt"
phase bench && for i in $(seq "$count"); do
	echo "round $i/$count" >&2
	"$tmp/bench.test" -test.run '^$' -test.bench '^Benchmark(Response|ResponseParallel|VersusFloor)$' \
		-test.benchtime "$benchtime" -test.cpu "$cpus" -test.benchmem >>"$out/bench.txt"
	"$tmp/bench.test" -test.run '^$' -test.bench '^Benchmark(Defaults|Request)$' \
		-test.benchtime "$benchtime" -test.cpu 1 -test.benchmem >>"$out/bench.txt"
done

# Allocation figures from a fixed, larger iteration count: at 100ms a 286 KiB
# brotli response runs a handful of times, and one encoder rebuilt after a
# collection emptied sync.Pool then dominates B/op.
alloc_iters=100x
[[ $mode == quick ]] && alloc_iters=1x
phase allocs && step "allocations: BenchmarkResponse at -benchtime $alloc_iters" &&
	"$tmp/bench.test" -test.run '^$' -test.bench '^BenchmarkResponse$' -test.benchtime "$alloc_iters" \
		-test.cpu 1 -test.benchmem >"$out/allocs.txt"

inflight_count=3
[[ $mode == quick ]] && inflight_count=1
phase inflight && step "heap per in-flight stream: $streams streams ($default_streams for the peers' defaults)" &&
	"$tmp/bench.test" -test.run '^$' -test.bench '^BenchmarkInflight' -test.benchtime 1x \
	-test.count "$inflight_count" -test.benchmem -streams "$streams" -default-streams "$default_streams" >"$out/inflight.txt"

run_wrk() {
	if ! command -v wrk >/dev/null; then
		if [[ ${CI:-} == true ]]; then
			echo "wrk not installed (apt-get install wrk)" >&2
			return 1
		fi
		echo "wrk not installed: skipping the load test" >&2
		echo "wrk not installed" >"$out/wrk.md"
		return 0
	fi
	(cd "$root" && go build -o "$tmp/example" ./example)
	local server_cpu="" client_cpu=""
	if [[ $(nproc) -ge 2 ]] && command -v taskset >/dev/null; then
		# Server and load generator on separate cores, so neither steals
		# the other's CPU; the server then runs with GOMAXPROCS 1.
		server_cpu="taskset -c 1" client_cpu="taskset -c 0"
	fi
	$server_cpu "$tmp/example" -addr 127.0.0.1:0 >"$tmp/example.log" 2>&1 &
	server_pid=$!
	local url=""
	for _ in $(seq 100); do
		url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$tmp/example.log" | head -1 || true)
		[[ -n $url ]] && break
		sleep 0.1
	done
	if [[ -z $url ]]; then
		echo "example server did not start:" >&2
		cat "$tmp/example.log" >&2
		return 1
	fi
	local routes=(/ /api/products) codings=(identity gzip br zstd)
	[[ $mode == quick ]] && routes=(/api/products)
	{
		echo "wrk $wrk_duration per row, 1 thread, 16 connections, ${server_cpu:+server pinned to CPU 1 and wrk to CPU 0, }against \`example -addr 127.0.0.1:0\` ($url)."
		echo
		echo "| route | Accept-Encoding | body bytes | requests/s | latency p50 | latency p99 | transfer/s |"
		echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"
	} >"$out/wrk.md"
	for route in "${routes[@]}"; do
		curl -sf -H 'Accept-Encoding: identity' -o "$tmp/plain" "$url$route"
		for coding in "${codings[@]}"; do
			# Check the response round-trips before timing it.
			curl -sf -H "Accept-Encoding: $coding" -D "$tmp/headers" -o "$tmp/body" "$url$route"
			local ce
			ce=$(tr -d '\r' <"$tmp/headers" | awk -F': ' 'tolower($1)=="content-encoding"{print $2}')
			case $coding in
			identity) [[ -z $ce ]] && cp "$tmp/body" "$tmp/decoded" ;;
			gzip) [[ $ce == gzip ]] && gzip -dc <"$tmp/body" >"$tmp/decoded" ;;
			br) [[ $ce == br ]] && brotli -dc <"$tmp/body" >"$tmp/decoded" ;;
			zstd) [[ $ce == zstd ]] && zstd -qdc <"$tmp/body" >"$tmp/decoded" ;;
			esac || {
				echo "$route with Accept-Encoding $coding: Content-Encoding '$ce' or undecodable body" >&2
				return 1
			}
			if ! cmp -s "$tmp/plain" "$tmp/decoded"; then
				echo "$route with Accept-Encoding $coding does not decode to the identity body" >&2
				return 1
			fi
			$client_cpu wrk -t1 -c16 -d"$wrk_duration" --latency -H "Accept-Encoding: $coding" "$url$route" >"$tmp/wrk.txt"
			awk -v route="$route" -v coding="$coding" -v size="$(wc -c <"$tmp/body")" '
				/^ +50%/ { p50 = $2 }
				/^ +99%/ { p99 = $2 }
				/^Requests\/sec:/ { rps = $2 }
				/^Transfer\/sec:/ { tps = $2 }
				/Non-2xx or 3xx/ { bad = $NF }
				/Socket errors/ { bad = bad " socket errors: " $0 }
				END {
					if (bad != "") { print route " " coding ": " bad > "/dev/stderr"; exit 1 }
					printf "| %s | %s | %d | %.0f | %s | %s | %s |\n", route, coding, size, rps, p50, p99, tps
				}' "$tmp/wrk.txt" >>"$out/wrk.md"
		done
	done
	kill "$server_pid"
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
}
phase wrk && step "load over loopback: wrk against the example server" && run_wrk

phase tables || exit 0
step "tables"
{
	for b in Response ResponseParallel; do
		for c in zstd br gzip; do
			echo "### $b, $c: wall and CPU time per response (vs floor)"
			go tool benchstat -filter ".name:$b /coding:$c (.unit:sec/op OR .unit:cpu-sec/op)" -table /gomaxprocs -row /body -col /impl "$out/bench.txt"
			if [[ $b == Response ]]; then
				echo "### $b, $c: allocations and bytes per response (-benchtime $alloc_iters)"
				go tool benchstat -filter "/coding:$c (.unit:allocs/op OR .unit:B/op)" -row /body -col /impl "$out/allocs.txt"
			else
				echo "### $b, $c: allocations and bytes per response"
				go tool benchstat -filter ".name:$b /coding:$c (.unit:allocs/op OR .unit:B/op)" -table /gomaxprocs -row /body -col /impl "$out/bench.txt"
			fi
		done
	done
	echo "### Squeeze against the floor, paired (x-floor = floor time / squeeze time)"
	go tool benchstat -filter ".name:VersusFloor (.unit:x-floor OR .unit:floor-sec/op OR .unit:squeeze-sec/op)" -row /coding,/body,/mode -col /gomaxprocs "$out/bench.txt"
	for c in zstd br gzip; do
		echo "### Defaults, $c: time and wire bytes per response (vs squeeze)"
		go tool benchstat -filter ".name:Defaults /coding:$c -/gomaxprocs:2 (.unit:sec/op OR .unit:cpu-sec/op OR .unit:wire-B/op OR .unit:allocs/op)" -row /body -col /impl "$out/bench.txt"
	done
	for c in zstd br gzip; do
		echo "### Request decoding, $c (vs floor)"
		go tool benchstat -filter ".name:Request /coding:$c (.unit:sec/op OR .unit:cpu-sec/op OR .unit:allocs/op OR .unit:B/op)" -row /body -col /impl "$out/bench.txt"
	done
	echo "### Heap per in-flight stream"
	go tool benchstat -filter "(.unit:live-B/stream OR .unit:inuse-B/stream)" -table .name -row /impl -col /coding "$out/inflight.txt"
} >"$out/tables.txt"
go run ./cmd/targets -allocs "$out/allocs.txt" "$out/bench.txt" "$out/inflight.txt" >"$out/targets.md"

# Print the summary in both modes: a quick run's results live in a temporary
# directory that the EXIT trap removes, so this is the only place they show.
cat "$out/tables.txt" "$out/wrk.md" "$out/targets.md"
if [[ $mode == quick ]]; then
	echo "quick run OK: every benchmark ran once and every path round-tripped (one iteration each: the figures above are no measurement)" >&2
	exit 0
fi
echo "results in $out" >&2
