#!/usr/bin/env bash
# caddy.sh measures Caddy with squeeze against Caddy with its own encode on
# real JavaScript bundles and prints BENCHMARKS.md's Caddy section
# (bench/stamp.sh appends it; alone: bench/caddy.sh >> BENCHMARKS.md after
# removing the old section).
#
# It builds caddy/cmd/caddy-squeeze (or runs CADDY, a binary built from it),
# fetches three bundles in two releases each with npm pack (the published
# files, about 2 KB, 100 KB and 490 KB: js-cookie, axios, Vue), and runs four
# Caddies on loopback, each with file_server over the six files and
# Cache-Control: max-age:
#   encode   encode zstd gzip
#   squeeze  squeeze { dictionary ... } (one pattern per bundle)
#   cache    the same with cache 64MiB
#   trusted  the same with cache 64MiB and trusted_etags
# Each gets the newer release of each bundle requested two ways: "full", as
# a browser without a dictionary asks (Accept-Encoding: gzip, deflate, br,
# zstd), and "delta", as Chromium asks while holding the older release as a
# dictionary (dcb, dcz and its Available-Dictionary); squeeze is first sent
# the older release once, so that it remembers it. Bytes per response come
# from curl; requests per second from wrk (one thread, CONNS connections,
# DURATION each), the four servers measured in alternation on each request
# ROUNDS times, each figure the median of its rounds and each ratio to
# encode's the median of the per-round ratios; each Caddy's CPU per
# response comes from /proc. It ends with results/caddy-profile.md, the
# findings of a CPU profile, written by hand.
#
# Environment: ROUNDS (3), DURATION (5s), CONNS (4), CADDY (build one),
# NPM_CACHE (where the bundles are kept: ~/.cache/squeeze-bench). Needs
# curl, wrk, npm and openssl.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
rounds=${ROUNDS:-3} duration=${DURATION:-5s} conns=${CONNS:-4}
npmcache=${NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/squeeze-bench}

tmp=$(mktemp -d)
pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

load=$(cut -d' ' -f1 /proc/loadavg)
caddy=${CADDY:-}
if [[ -z $caddy ]]; then
	echo "caddy: building cmd/caddy-squeeze" >&2
	(cd "$root/caddy" && go build -o "$tmp/caddy" ./cmd/caddy-squeeze)
	caddy=$tmp/caddy
fi

# The bundles: name, older and newer release, the file in the package.
bundles=(
	"js-cookie 3.0.1 3.0.5 dist/js.cookie.min.js"
	"axios 1.7.7 1.7.8 dist/esm/axios.js"
	"vue 3.4.20 3.4.21 dist/vue.esm-browser.js"
)
mkdir -p "$tmp/site/lib" "$npmcache"
echo ok >"$tmp/site/ping.txt"
names=() patterns=""
for b in "${bundles[@]}"; do
	read -r name old new file <<<"$b"
	for v in "$old" "$new"; do
		tgz=$npmcache/$name-$v.tgz
		if [[ ! -s $tgz ]]; then
			echo "caddy: npm pack $name@$v" >&2
			(cd "$npmcache" && npm pack --silent "$name@$v" >/dev/null)
		fi
		tar -xzf "$tgz" -O "package/$file" >"$tmp/site/lib/$name-$v.js"
	done
	names+=("$name")
	patterns+=" /lib/$name-*.js"
done

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# start NAME HANDLERS: runs a Caddy whose site ends with HANDLERS, in this
# shell (so that cleanup stops it), and sets url[NAME] and pid[NAME] once it
# answers.
declare -A url pid
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
		"$caddy" run --config "$tmp/$name/Caddyfile" --adapter caddyfile >"$tmp/$name/log" 2>&1 &
	pids+=($!)
	pid[$name]=$!
	url[$name]="http://127.0.0.1:$port"
	for _ in $(seq 200); do
		curl -fso /dev/null "${url[$name]}/ping.txt" && return
		sleep 0.05
	done
	echo "caddy: $name did not answer: $(cat "$tmp/$name/log")" >&2
	exit 1
}

servers=(encode squeeze cache trusted)
start encode "encode zstd gzip
	file_server"
start squeeze "squeeze {
		dictionary$patterns
	}
	file_server"
start cache "squeeze {
		dictionary$patterns
		cache 64MiB
	}
	file_server"
start trusted "squeeze {
		dictionary$patterns
		cache 64MiB
		trusted_etags
	}
	file_server"

# The dictionaries squeeze remembers: each older release, as a browser
# received it.
for b in "${bundles[@]}"; do
	read -r name old new file <<<"$b"
	for s in squeeze cache trusted; do
		curl -fso /dev/null -H 'Accept-Encoding: gzip, deflate, br, zstd' "${url[$s]}/lib/$name-$old.js"
	done
done

# headers MODE NAME OLD: the request's header lines, one a line.
headers() {
	local mode=$1 name=$2 old=$3
	if [[ $mode == full ]]; then
		echo "Accept-Encoding: gzip, deflate, br, zstd"
	else
		echo "Accept-Encoding: gzip, deflate, br, zstd, dcb, dcz"
		echo "Available-Dictionary: :$(openssl dgst -sha256 -binary "$tmp/site/lib/$name-$old.js" | base64 -w0):"
		echo "Sec-Fetch-Site: same-origin"
	fi
}

declare -A coding bytes runs ratios
cases=()
for b in "${bundles[@]}"; do
	read -r name old new file <<<"$b"
	for mode in full delta; do
		c="$name $mode"
		cases+=("$c")
		mapfile -t hs < <(headers "$mode" "$name" "$old")
		curlh=() lua="$tmp/$name-$mode.lua"
		: >"$lua"
		for h in "${hs[@]}"; do
			curlh+=(-H "$h")
			printf 'wrk.headers["%s"] = "%s"\n' "${h%%: *}" "${h#*: }" >>"$lua"
		done
		for s in "${servers[@]}"; do
			# Twice: the second is what a cache serves.
			curl -fso /dev/null "${curlh[@]}" "${url[$s]}/lib/$name-$new.js"
			read -r ce n < <(curl -fs -o /dev/null "${curlh[@]}" -w '%header{content-encoding} %{size_download}\n' "${url[$s]}/lib/$name-$new.js")
			coding[$c,$s]=$ce bytes[$c,$s]=$n
		done
	done
done

# ticks NAME: the CPU time the Caddy NAME has used, in clock ticks.
ticks() { awk '{print $14 + $15}' "/proc/${pid[$1]}/stat"; }
# measure NAME URL LUA: one wrk run; prints requests/s and the Caddy's CPU
# microseconds per request.
measure() {
	local before after out reqs rps
	before=$(ticks "$1")
	out=$(wrk -t1 -c"$conns" -d"$duration" -s "$3" "$2")
	after=$(ticks "$1")
	reqs=$(awk '/requests in/ {print $1}' <<<"$out")
	rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
	awk -v rps="$rps" -v t=$((after - before)) -v n="$reqs" -v hz="$(getconf CLK_TCK)" \
		'BEGIN {printf "%s %.1f\n", rps, t / hz * 1e6 / n}'
}
declare -A cpu cpuratios
for i in $(seq "$rounds"); do
	echo "caddy: round $i of $rounds" >&2
	for c in "${cases[@]}"; do
		read -r name mode <<<"$c"
		for b in "${bundles[@]}"; do
			read -r n old new file <<<"$b"
			[[ $n == "$name" ]] && break
		done
		declare -A r=() u=()
		for s in "${servers[@]}"; do
			read -r r[$s] u[$s] < <(measure "$s" "${url[$s]}/lib/$name-$new.js" "$tmp/$name-$mode.lua")
			runs[$c,$s]+="${r[$s]} "
			cpu[$c,$s]+="${u[$s]} "
		done
		for s in squeeze cache trusted; do
			ratios[$c,$s]+="$(awk -v s="${r[$s]}" -v e="${r[encode]}" 'BEGIN {printf "%.2f", s / e}') "
			cpuratios[$c,$s]+="$(awk -v s="${u[$s]}" -v e="${u[encode]}" 'BEGIN {printf "%.2f", e / s}') "
		done
	done
done
median() { printf '%s\n' $1 | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

commit=$(git -C "$root" rev-parse --short HEAD)
if [[ -n $(git -C "$root" status --porcelain --untracked-files=no) ]]; then
	commit="$commit plus uncommitted changes"
fi
files=""
for b in "${bundles[@]}"; do
	read -r name old new file <<<"$b"
	files+="${files:+, }$name $new \`$file\` ($(stat -c %s "$tmp/site/lib/$name-$new.js") bytes, dictionary: $old)"
done
cat <<MD

## Caddy: squeeze against encode

<!-- Written by bench/caddy.sh (bench/stamp.sh appends it); do not edit by hand. -->

Measured at commit \`$commit\` on $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $("$caddy" version | cut -d' ' -f1), load average $load at the start, by \`bench/caddy.sh\`: Caddy built from \`caddy/cmd/caddy-squeeze\` with \`file_server\` over the published files of three npm packages, each in two releases: $files. encode: \`encode zstd gzip\`; squeeze: \`squeeze { dictionary$patterns }\`; cache: the same with \`cache 64MiB\`; trusted: with \`cache 64MiB\` and \`trusted_etags\`. full: a request as a browser without a dictionary sends it; delta: as Chromium sends it holding the older release. Requests per second: wrk, one thread, $conns connections, $duration per run, the four servers in alternation on each request, $rounds rounds; encode's median, and each squeeze's median of the per-round ratios to encode (the rounds in brackets). Bytes: the second response's, Content-Encoding beside them.

Requests per second against encode's:

| file | request | encode req/s | bytes: encode | squeeze | cache | trusted | squeeze / encode | cache / encode | trusted / encode |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
MD
for c in "${cases[@]}"; do
	read -r name mode <<<"$c"
	row="| $name | $mode | $(median "${runs[$c,encode]}")"
	for s in "${servers[@]}"; do row+=" | ${bytes[$c,$s]} ${coding[$c,$s]}"; done
	for s in squeeze cache trusted; do row+=" | $(median "${ratios[$c,$s]}")x (${ratios[$c,$s]% })"; done
	echo "$row |"
done
cat <<MD

Requests per CPU second against encode's: each Caddy's CPU time (/proc, user and system) over the requests it served in the run, encode's divided by squeeze's, so above 1 means squeeze spends less CPU per response. On a loaded machine this moves less than the requests per second, which follow the share of the cores each Caddy got.

| file | request | encode µs CPU per response | squeeze | cache | trusted |
| --- | --- | ---: | ---: | ---: | ---: |
MD
for c in "${cases[@]}"; do
	read -r name mode <<<"$c"
	row="| $name | $mode | $(median "${cpu[$c,encode]}")"
	for s in squeeze cache trusted; do row+=" | $(median "${cpuratios[$c,$s]}")x (${cpuratios[$c,$s]% })"; done
	echo "$row |"
done
cat <<MD

wrk and the Caddies share $(nproc) cores with whatever else runs (load average $(cut -d' ' -f1 /proc/loadavg) at the end): the rates move with the load, and so, less, do the per-round ratios; compare their spread before the medians.
MD
# The profile's findings, written by hand (bench/results/caddy-profile.md).
echo
cat "$here/results/caddy-profile.md"
