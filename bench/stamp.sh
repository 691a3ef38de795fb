#!/usr/bin/env bash
# stamp.sh measures squeeze at the checked-out commit and prints the whole of
# BENCHMARKS.md, with the commit, the date and the machine stamped into it:
#
#   bench/stamp.sh > BENCHMARKS.md     4 to 6 minutes on 2 shared cores
#
# In each of ROUNDS rounds, one process times the floor (the bare pooled
# encoder), squeeze and gzhttp in alternation (BenchmarkVersusFloor), and
# another the floor and every peer (BenchmarkPeersVersusFloor); each round
# is a fresh process, so each draws its own memory layout. Every ratio is
# paired, response by response, and of the thread's CPU time, which a busy
# machine's waits for a core do not inflate. Then one
# fixed-iteration pass counts allocations per response, and the root's
# TestSteadyStateAllocations gives squeeze's exact count. The Fleet
# section comes from a few fixed iterations of the root's
# BenchmarkSharedUpgradeTake (a shared hit against encoding again) and
# BenchmarkDeltaLevels (delta sizes at the default and best levels), and of
# redisstore's BenchmarkStore when redis-server is installed (the section
# says so when it is not). cmd/benchtable turns the raw output into the
# tables; bench/caddy.sh appends the Caddy section, and bench/measured/*.md
# the sections measured by hand. Progress goes to stderr.
#
# Environment: ROUNDS (5), BENCHTIME (200ms, per VersusFloor benchmark),
# PEERTIME (300ms, per PeersVersusFloor benchmark), FLEETN (3, iterations
# per Fleet encode), HITN (50, per shared hit), REDISN (300, per Redis
# call), BODIES (a -bench
# regexp of body names), KEEP (a directory to keep the raw output in).
# bench/run.sh is the long run (every benchmark, the in-flight heap, wrk);
# bench/floor.sh the floor comparison alone, with more processes.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$here"

rounds=${ROUNDS:-5} benchtime=${BENCHTIME:-200ms} peertime=${PEERTIME:-300ms}
fleetn=${FLEETN:-3} hitn=${HITN:-50} redisn=${REDISN:-300}
bodies=${BODIES:-'(html-2K|json-2K|html-16K|json-16K|js-16K|html-64K)'}
peer_bodies='(html-2K|html-16K|json-16K)'
start=$(date +%s)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=${KEEP:-$tmp}
mkdir -p "$out"
: >"$out/versus.txt"
: >"$out/peers.txt"

commit=$(git -C "$root" rev-parse --short HEAD)
if [[ -n $(git -C "$root" status --porcelain --untracked-files=no) ]]; then
	commit="$commit plus uncommitted changes"
fi
machine="$(nproc) cores of $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(go env GOVERSION), load average $(cut -d' ' -f1 /proc/loadavg) at the start"

echo "building the benchmarks" >&2
go test -c -o "$tmp/bench.test" .
for i in $(seq "$rounds"); do
	echo "round $i of $rounds" >&2
	"$tmp/bench.test" -test.run '^$' -test.bench "^BenchmarkVersusFloor\$/coding=.*/body=$bodies\$/mode=serial" \
		-test.benchtime "$benchtime" -test.count 1 -test.cpu 1 >>"$out/versus.txt"
	"$tmp/bench.test" -test.run '^$' -test.bench "^BenchmarkPeersVersusFloor\$" \
		-test.benchtime "$peertime" -test.count 1 -test.cpu 1 >>"$out/peers.txt"
done
echo "allocations" >&2
"$tmp/bench.test" -test.run '^$' -test.bench "^BenchmarkResponse\$/coding=.*/body=$peer_bodies\$" \
	-test.benchtime 200x -test.count 1 -test.cpu 1 -test.benchmem >"$out/allocs.txt"
(cd "$root" && go test -count=1 -run '^TestSteadyStateAllocations$' -v .) >"$out/exact.txt"
echo "fleet" >&2
# The encodes at the best level take up to a second each, so few; the
# shared hits take a millisecond or less, so more.
# Three runs, as one -bench pattern cannot pick leaves at different depths
# (a benchmark that matches only a prefix of its levels reports nothing).
(cd "$root" && go test -count=1 -run '^$' -bench '^BenchmarkSharedUpgradeTake$/././encode-' \
	-benchtime "${fleetn}x" -cpu 1 . &&
	go test -count=1 -run '^$' -bench '^BenchmarkDeltaLevels$' -benchtime "${fleetn}x" -cpu 1 . &&
	go test -count=1 -run '^$' -bench '^BenchmarkSharedUpgradeTake$/././shared-hit$' \
		-benchtime "${hitn}x" -cpu 1 .) >"$out/fleet.txt"
redis=()
if command -v redis-server >/dev/null; then
	echo "redis" >&2
	(cd "$root/redisstore" && go test -count=1 -run '^$' -bench '^BenchmarkStore$' \
		-benchtime "${redisn}x" -cpu 1 .) >"$out/redis.txt"
	redis=(-redis "$out/redis.txt")
else
	echo "redis-server not found: the Fleet section says Redis was not measured" >&2
fi

# Learned dictionaries on real pages: cmd/learned when both corpora are
# installed (git-doc, and cldr-numbers-full unpacked under CLDR), else the
# section of the last run that had them, kept in results/learned.md.
cldr=${CLDR:-/tmp/cldr/package/main}
if [ -d /usr/share/doc/git-doc ] && [ -d "$cldr" ]; then
	echo "learned dictionaries on git-doc and $cldr" >&2
	go run ./cmd/learned -json "$cldr" >"$out/learned.md"
	cp "$out/learned.md" results/learned.md
else
	echo "git-doc or $cldr missing: the learned dictionaries section is results/learned.md's" >&2
fi

elapsed=$(($(date +%s) - start))
go run ./cmd/benchtable -commit "$commit" -date "$(date -u '+%Y-%m-%d %H:%M UTC')" \
	-machine "$machine" -rounds "$rounds" -elapsed "$((elapsed / 60)) min $((elapsed % 60)) s" \
	-versus "$out/versus.txt" -peers "$out/peers.txt" -allocs "$out/allocs.txt" -exact "$out/exact.txt" \
	-fleet "$out/fleet.txt" "${redis[@]}" -learned results/learned.md
# The Caddy section: Caddy with squeeze against Caddy's encode, over
# loopback with wrk (bench/caddy.sh, about 2 minutes with the build).
if command -v wrk >/dev/null && command -v curl >/dev/null; then
	bash "$here/caddy.sh"
else
	printf '\n## Caddy: squeeze against encode\n\nNot measured: bench/caddy.sh needs wrk and curl.\n'
fi
# Sections measured by hand (a soak, an attack, a comparison on corpora
# that are slow to fetch), each dated and with the command that made it:
# bench/measured/*.md, in name order, after the sections measured here.
for f in "$here"/measured/*.md; do
	[[ -e $f ]] || continue
	printf '\n'
	cat "$f"
done
