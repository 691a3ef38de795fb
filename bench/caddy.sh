#!/usr/bin/env bash
# caddy.sh measures Caddy with squeeze against Caddy with its own encode and
# prints BENCHMARKS.md's Caddy section (bench/stamp.sh appends it; alone:
# bench/caddy.sh >> BENCHMARKS.md after removing the old section).
#
# It builds caddy/cmd/caddy-squeeze, then runs two Caddies on loopback, each
# with file_server over Underscore.js 1.13.6 and 1.13.7 (example/static/lib)
# and Cache-Control: max-age: one with `squeeze { dictionary ... }`, one with
# `encode zstd gzip`. Each gets 1.13.7 requested as Chromium requests it
# while holding 1.13.6 as a dictionary (Accept-Encoding gzip, deflate, br,
# zstd, dcb, dcz and its Available-Dictionary); squeeze is first sent 1.13.6
# once, so that it remembers the dictionary. Bytes per response come from
# curl; requests per second from wrk (one thread, CONNS connections,
# DURATION each), the two servers measured in alternation ROUNDS times,
# each figure the median of its rounds and the ratio taken per round.
#
# Environment: ROUNDS (3), DURATION (5s), CONNS (4). Needs curl and wrk.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
rounds=${ROUNDS:-3} duration=${DURATION:-5s} conns=${CONNS:-4}

tmp=$(mktemp -d)
pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

load=$(cut -d' ' -f1 /proc/loadavg)
echo "caddy: building cmd/caddy-squeeze" >&2
(cd "$root/caddy" && go build -o "$tmp/caddy" ./cmd/caddy-squeeze)
mkdir -p "$tmp/site/lib"
v1=/lib/underscore-1.13.6.min.js v2=/lib/underscore-1.13.7.min.js
cp "$root/example/static$v1" "$root/example/static$v2" "$tmp/site/lib/"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# start NAME HANDLERS: runs a Caddy whose site ends with HANDLERS; prints
# its URL once it answers.
start() {
	local name=$1 handlers=$2 port
	port=$(free_port)
	mkdir -p "$tmp/$name"
	cat >"$tmp/$name/Caddyfile" <<-CADDYFILE
		{
			admin off
			auto_https off
			persist_config off
		}
		http://127.0.0.1:$port {
			root * $tmp/site
			header Cache-Control "max-age=3600"
			$handlers
		}
	CADDYFILE
	HOME=$tmp/$name XDG_CONFIG_HOME=$tmp/$name XDG_DATA_HOME=$tmp/$name \
		"$tmp/caddy" run --config "$tmp/$name/Caddyfile" --adapter caddyfile >"$tmp/$name/log" 2>&1 &
	pids+=($!)
	for _ in $(seq 200); do
		curl -fso /dev/null "http://127.0.0.1:$port$v1" && break
		sleep 0.05
	done
	echo "http://127.0.0.1:$port"
}

declare -A url
url[squeeze]=$(start squeeze "squeeze {
		dictionary /lib/underscore-*.js
	}
	file_server")
url[cached]=$(start cached "squeeze {
		dictionary /lib/underscore-*.js
		cache 64MiB
	}
	file_server")
url[encode]=$(start encode "encode zstd gzip
	file_server")
names=(squeeze cached encode)
# The dictionary squeeze remembers: 1.13.6, as a browser received it.
for name in squeeze cached; do
	curl -fso /dev/null -H 'Accept-Encoding: gzip, deflate, br, zstd' "${url[$name]}$v1"
done
dict=":$(openssl dgst -sha256 -binary "$tmp/site$v1" | base64 -w0):"
headers=(-H 'Accept-Encoding: gzip, deflate, br, zstd, dcb, dcz' -H "Available-Dictionary: $dict" -H 'Sec-Fetch-Site: same-origin')

# measure NAME URL: the response's coding and size, then one wrk run.
declare -A coding bytes
for name in "${names[@]}"; do
	read -r coding[$name] bytes[$name] < <(curl -fs -o /dev/null "${headers[@]}" -w '%header{content-encoding} %{size_download}\n' "${url[$name]}$v2")
done
cat >"$tmp/headers.lua" <<LUA
wrk.headers["Accept-Encoding"] = "gzip, deflate, br, zstd, dcb, dcz"
wrk.headers["Available-Dictionary"] = "$dict"
wrk.headers["Sec-Fetch-Site"] = "same-origin"
LUA
rps() { wrk -t1 -c"$conns" -d"$duration" -s "$tmp/headers.lua" "$1$v2" | awk '/^Requests\/sec/ {print $2}'; }
declare -A runs ratios
for i in $(seq "$rounds"); do
	echo "caddy: round $i of $rounds" >&2
	declare -A r=()
	for name in "${names[@]}"; do
		r[$name]=$(rps "${url[$name]}")
		runs[$name]+="${r[$name]} "
	done
	for name in squeeze cached; do
		ratios[$name]+="$(awk -v s="${r[$name]}" -v e="${r[encode]}" 'BEGIN {printf "%.2f", s / e}') "
	done
done
median() { printf '%s\n' $1 | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

commit=$(git -C "$root" rev-parse --short HEAD)
if [[ -n $(git -C "$root" status --porcelain --untracked-files=no) ]]; then
	commit="$commit plus uncommitted changes"
fi
size2=$(stat -c %s "$tmp/site$v2")
cat <<MD

## Caddy: squeeze against encode

<!-- Written by bench/caddy.sh (bench/stamp.sh appends it); do not edit by hand. -->

Measured at commit \`$commit\` on $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $("$tmp/caddy" version | cut -d' ' -f1), load average $load at the start, by \`bench/caddy.sh\`: Caddy built from \`caddy/cmd/caddy-squeeze\` with \`file_server\`, serving Underscore.js 1.13.7 ($size2 bytes) to a client that holds 1.13.6 as a dictionary and says so as Chromium does. squeeze: \`squeeze { dictionary /lib/underscore-*.js }\`, and with \`cache 64MiB\` added; encode: \`encode zstd gzip\`. Requests per second: wrk, one thread, $conns connections, $duration per run, the three in alternation, $rounds rounds; medians, and the median of the per-round ratios.

| Caddy | Content-Encoding | bytes per response | requests/s | rounds |
| --- | --- | ---: | ---: | --- |
| squeeze | ${coding[squeeze]} | ${bytes[squeeze]} | $(median "${runs[squeeze]}") | ${runs[squeeze]}|
| squeeze, cache 64MiB | ${coding[cached]} | ${bytes[cached]} | $(median "${runs[cached]}") | ${runs[cached]}|
| encode zstd gzip | ${coding[encode]} | ${bytes[encode]} | $(median "${runs[encode]}") | ${runs[encode]}|

squeeze sends $(awk -v s="${bytes[squeeze]}" -v e="${bytes[encode]}" 'BEGIN {printf "%.1f", e / s}')x fewer bytes than encode. Requests per second against encode's, median of the per-round ratios: squeeze $(median "${ratios[squeeze]}")x (per round: ${ratios[squeeze]% }), squeeze with its cache $(median "${ratios[cached]}")x (${ratios[cached]% }). Without the cache both encode every response, squeeze a delta against the dictionary, encode zstd at its default level; with it squeeze encodes the delta once (and re-encodes it at the best level once it is hit a few times, so the cached run's bytes per response can be fewer than the first response's shown here). wrk and the Caddies share $(nproc) cores with whatever else runs (load average $(cut -d' ' -f1 /proc/loadavg) at the end): the rates move with the load, and so, less, do the per-round ratios; compare their spread before the medians.
MD
