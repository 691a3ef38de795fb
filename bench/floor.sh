#!/usr/bin/env bash
# floor.sh times squeeze, and gzhttp beside it, against the pooled-encoder
# floor (BenchmarkVersusFloor) in PROCS separate processes, and prints the
# paired table of cmd/targets over the rounds of all of them.
#
#   bench/floor.sh [PATTERN]     default: the 2, 16 and 64 KiB bodies, serial
#
# Why separate processes: each process builds its own encoders, and where an
# encoder's tables and window land in memory moves its speed by a few
# percent for as long as the process lives (measured with perf: the same
# fastEncL5.Encode took 3-4% longer for one pool's encoder than another's in
# one process). Without help the layout is the same in every process of one
# build, so benchVersusFloor allocates a random gap before each
# implementation's encoder is built. Rounds of one process (-count) share
# one layout; rounds of separate processes do not, so their median is the
# figure to quote, and the one to compare two builds by.
#
# Environment: PROCS (6), BENCHTIME (1s), CPU (1).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
pattern=${1:-'VersusFloor/coding=.*/body=(html-2K|json-2K|html-16K|json-16K|js-16K|html-64K)/mode=serial'}
procs=${PROCS:-6} benchtime=${BENCHTIME:-1s} cpu=${CPU:-1}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/bench.test" .
for i in $(seq "$procs"); do
	printf 'process %d of %d\n' "$i" "$procs" >&2
	"$tmp/bench.test" -test.run '^$' -test.bench "$pattern" -test.benchtime "$benchtime" \
		-test.count 1 -test.cpu "$cpu" >>"$tmp/floor.txt"
done
go run ./cmd/targets "$tmp/floor.txt"
