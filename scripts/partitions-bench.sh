#!/usr/bin/env bash
# partitions-bench.sh: issue 15's goals 5 (many partitions) and 6 (memory).
# It builds actorlog, starts one host (replication factor 1, --pprof on
# --http) and runs, on that host:
#
#   partitions (PARTITIONS=1): a PARTS-partition (1,000) and a 3-partition
#       topic; ROUNDS alternating rounds (round r starts with the other
#       topic than round r-1) of `actorlog perf produce --producers
#       PRODUCERS --keys KEYS --record-size SIZE --num-records N` (4
#       producers, each its own client, keyed 100 B records, murmur2 over
#       all partitions; defaults otherwise: acks=all, idempotent) against
#       each, then the same producers at LAT_RATE (20000) records/s in
#       all for LAT_N (200000) records; records/s, p99 (as perf prints it,
#       whole ms) of both, the ratio many/3 of the medians (goal: >= 0.50),
#       and the host's RSS at the start of each run, its peak during it
#       (VmHWM, reset at the start where the kernel allows) and its open
#       files (sampled every 0.5 s). Go keeps freed heap for a while, so
#       the RSS at a run's start is partly the previous run's.
#   memory (MEMORY=1): on a fresh host, a 3-partition topic and `perf
#       produce --record-size 1024 --num-records MEM_N` at full speed: the
#       host's peak RSS (VmHWM; goal <= 256 MiB); then on another fresh
#       host a steady run of STEADY (10m) at STEADY_RATE (2000) records/s
#       of 1 KiB, sampling the host's RSS every STEADY_SAMPLE (10) seconds:
#       first, last, max and the least-squares slope (MiB per minute) over
#       the samples after the first minute (goal: no growth).
#
#   scripts/partitions-bench.sh                      # both, about 20 min
#   MEMORY=0 scripts/partitions-bench.sh             # goal 5 only
#   PARTITIONS=0 STEADY=2m scripts/partitions-bench.sh   # goal 6, quicker
#
# Settings (environment): KEEP_DATA (0: the hosts' data directories are
# removed at the end; 1 keeps them), OUT (/tmp/actorlog-partitions-bench), ROUNDS (3),
# N (500000), SIZE (100), PARTS (1000), PRODUCERS (4), KEYS (100000),
# LAT_RATE (20000), LAT_N (200000; 0 skips the fixed-rate runs),
# PARTITIONS (1), MEMORY (1), MEM_N (500000), STEADY (10m; Go-style s/m/h),
# STEADY_RATE (2000), STEADY_SAMPLE (10), STEADY_TOPIC_FLAGS (none; e.g.
# "--config segment.bytes=33554432" so segments roll during the run: the
# active segment's index, the one kept in memory, grows until its segment
# rolls), BASE_PORT (19960; the host uses
# BASE_PORT..+3).
#
# RSS and descriptors come from /proc/PID/status (VmRSS, VmHWM, RssAnon,
# RssFile) and /proc/PID/fd of the host. Only the host and the samplers it
# started are stopped (by pid). The numbers mean something only on an
# otherwise idle machine: check `uptime` (printed before each run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="${PATH}:/usr/local/go/bin"

OUT="${OUT:-/tmp/actorlog-partitions-bench}"
ROUNDS="${ROUNDS:-3}"
N="${N:-500000}"
SIZE="${SIZE:-100}"
PARTS="${PARTS:-1000}"
PRODUCERS="${PRODUCERS:-4}"
KEYS="${KEYS:-100000}"
PARTITIONS="${PARTITIONS:-1}"
MEMORY="${MEMORY:-1}"
MEM_N="${MEM_N:-500000}"
STEADY="${STEADY:-10m}"
STEADY_RATE="${STEADY_RATE:-2000}"
STEADY_SAMPLE="${STEADY_SAMPLE:-10}"
STEADY_TOPIC_FLAGS="${STEADY_TOPIC_FLAGS:-}"
LAT_RATE="${LAT_RATE:-20000}"
LAT_N="${LAT_N:-200000}"
BP="${BASE_PORT:-19960}"
listen="127.0.0.1:${BP}"
http="127.0.0.1:$((BP + 3))"

# STEADY in seconds.
case "${STEADY}" in
*h) steady_s=$((${STEADY%h} * 3600)) ;;
*m) steady_s=$((${STEADY%m} * 60)) ;;
*s) steady_s="${STEADY%s}" ;;
*) steady_s="${STEADY}" ;;
esac
if ! [[ "${steady_s}" =~ ^[0-9]+$ ]] || ((steady_s < 1)); then
	echo "STEADY=${STEADY}: want a whole number of seconds, minutes or hours (90s, 10m, 1h)" >&2
	exit 2
fi

rm -rf "${OUT}"
mkdir -p "${OUT}"
bin="${OUT}/actorlog"
echo "== build"
go build -o "${bin}" ./cmd/actorlog

# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh

sampler_pid=""
stop_sampler() {
	if [[ -n "${sampler_pid}" ]]; then
		kill "${sampler_pid}" 2>/dev/null || true
		wait "${sampler_pid}" 2>/dev/null || true
		sampler_pid=""
	fi
}
trap 'stop_sampler; stop_host; drop_data' EXIT

# start_host NAME: a fresh host (its own data directory) in the
# background, its log OUT/NAME.log; the memory runs each get one, so
# their peaks are not the earlier runs' heap.
start_host() {
	data_dirs+=("${OUT}/$1.data")
	"${bin}" --log-level warn host --data-dir "${OUT}/$1.data" --listen "${listen}" \
		--http "${http}" --kafka-listen "" --pprof >"${OUT}/$1.log" 2>&1 &
	host_pid="$!"
	wait_healthy "${http}" "${OUT}/$1.log" "${host_pid}"
}
start_host host

machine_info "${OUT}" cmd/actorlog storage actors/replica actors/producer

al() { "${bin}" --bootstrap "${listen}" "$@"; }

# mem_line: the host's "ELAPSED_S RSS_KIB HWM_KIB ANON_KIB FILE_KIB FDS".
mem_t0=0
mem_line() {
	local s
	s="$(awk '/^(VmRSS|VmHWM|RssAnon|RssFile):/ { v[$1] = $2 }
		END { print v["VmRSS:"], v["VmHWM:"], v["RssAnon:"], v["RssFile:"] }' "/proc/${host_pid}/status")"
	echo "$(($(date +%s) - mem_t0)) ${s} $(find "/proc/${host_pid}/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)"
}

# start_sampler FILE SECONDS: mem_line every SECONDS into FILE until
# stop_sampler. The host's peak (VmHWM) is reset first where the kernel
# allows it (clear_refs 5), so it is this run's.
start_sampler() {
	echo 5 >"/proc/${host_pid}/clear_refs" 2>/dev/null || true
	mem_t0="$(date +%s)"
	: >"$1"
	(
		while kill -0 "${host_pid}" 2>/dev/null; do
			mem_line >>"$1"
			sleep "$2"
		done
	) &
	sampler_pid="$!"
}

# mem_summary FILE: "RSS at the start MiB, peak (VmHWM) MiB, max open
# files" of a sampler's file.
mem_summary() {
	awk 'NR == 1 { r = $2 } { if ($3 > h) h = $3; if ($6 > f) f = $6 }
		END { printf "%.1f %.1f %d", r / 1024, h / 1024, f }' "$1"
}

# end_sampler FILE: a last sample (the peak so far) and stop_sampler.
end_sampler() {
	mem_line >>"$1"
	stop_sampler
}

results="${OUT}/results.txt"
: >"${results}"
record() { # WORKLOAD TARGET ROUND VALUE
	echo "$1 $2 $3 $4" >>"${results}"
	printf '%-16s %-12s round %d: %s\n' "$1" "$2" "$3" "$4"
}

# median WORKLOAD TARGET: the median of results.txt's values.
median() {
	awk -v w="$1" -v t="$2" '$1 == w && $2 == t { print $4 }' "${results}" | sort -g |
		awk '{ v[++n] = $1 } END { if (n == 0) print "-"; else if (n % 2) print v[(n + 1) / 2]; else print (v[n / 2] + v[n / 2 + 1]) / 2 }'
}

if [[ "${PARTITIONS}" == 1 ]]; then
	many="many-$(date +%s)"
	few="few-$(date +%s)"
	t0="$(date +%s.%N)"
	al topics create "${many}" --partitions "${PARTS}" >/dev/null
	# The host opens the partitions' logs after create returns: wait
	# until its open files stop changing (3 s alike, up to 120 s), so no
	# run pays for the creation.
	prev=-1 same=0
	for _ in $(seq 1 120); do
		n="$(find "/proc/${host_pid}/fd" -mindepth 1 -maxdepth 1 | wc -l)"
		if [[ "${n}" == "${prev}" ]]; then
			same=$((same + 1))
			((same >= 3)) && break
		else
			same=0
		fi
		prev="${n}"
		sleep 1
	done
	echo "created ${many} (${PARTS} partitions), settled after $(awk -v a="${t0}" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s; host now: $(mem_line | awk '{ printf "RSS %.1f MiB, %d open files", $2 / 1024, $6 }')"
	al topics create "${few}" --partitions 3 >/dev/null
	echo "== partitions (${PARTS} vs 3 partitions, ${PRODUCERS} producers, ${N} keyed ${SIZE} B records, ${KEYS} keys, ROUNDS=${ROUNDS})"
	for r in $(seq 1 "${ROUNDS}"); do
		order=("${PARTS}p" 3p)
		((r % 2 == 0)) && order=(3p "${PARTS}p")
		for t in "${order[@]}"; do
			topic="${few}"
			[[ "${t}" == 3p ]] || topic="${many}"
			f="${OUT}/partitions-${t}-${r}"
			echo "-- ${t} round ${r}; $(uptime)"
			start_sampler "${f}.mem.txt" 0.5
			al perf produce --topic "${topic}" --num-records "${N}" --record-size "${SIZE}" \
				--producers "${PRODUCERS}" --keys "${KEYS}" >"${f}.produce.txt"
			end_sampler "${f}.mem.txt"
			read -r rps p99 <<<"$(perf_summary "${f}.produce.txt")"
			read -r rss hwm fds <<<"$(mem_summary "${f}.mem.txt")"
			record "rec/s" "${t}" "${r}" "${rps}"
			record "p99ms" "${t}" "${r}" "${p99}"
			record "rssMiB-start" "${t}" "${r}" "${rss}"
			record "hwmMiB" "${t}" "${r}" "${hwm}"
			record "fds-max" "${t}" "${r}" "${fds}"
			if ((LAT_N > 0)); then
				al perf produce --topic "${topic}" --num-records "${LAT_N}" --record-size "${SIZE}" \
					--producers "${PRODUCERS}" --keys "${KEYS}" --throughput "${LAT_RATE}" >"${f}.latency.txt"
				read -r lrps lp99 <<<"$(perf_summary "${f}.latency.txt")"
				record "p99ms@rate" "${t}" "${r}" "${lp99}"
				record "rec/s@rate" "${t}" "${r}" "${lrps}"
			fi
		done
	done
	{
		echo
		echo "| ${PRODUCERS} producers, ${SIZE} B keyed | records/s | p99 ms | p99 ms at ${LAT_RATE}/s | host RSS at start (MiB) | host peak, VmHWM (MiB) | host open files (max) |"
		echo "|---|---|---|---|---|---|---|"
		for t in 3p "${PARTS}p"; do
			echo "| ${t%p} partitions | $(median rec/s "${t}") | $(median p99ms "${t}") | $(median p99ms@rate "${t}") | $(median rssMiB-start "${t}") | $(median hwmMiB "${t}") | $(median fds-max "${t}") |"
		done
		echo
		echo "(medians of ${ROUNDS} rounds; both topics exist throughout, so the open files are the host's for both)"
		echo
		awk -v a="$(median rec/s "${PARTS}p")" -v b="$(median rec/s 3p)" \
			'BEGIN { printf "ratio %s/3 partitions (medians of %d rounds): %.2f (goal >= 0.50)\n", "'"${PARTS}"'", '"${ROUNDS}"', a / b }'
	} | tee "${OUT}/partitions.md"
	al topics delete "${many}" >/dev/null
	al topics delete "${few}" >/dev/null
fi

if [[ "${MEMORY}" == 1 ]]; then
	echo "== memory: ${MEM_N} records of 1 KiB at full speed, 3 partitions; $(uptime)"
	stop_host
	start_host memory
	topic="mem-$(date +%s)"
	al topics create "${topic}" --partitions 3 >/dev/null
	start_sampler "${OUT}/memory-1k.mem.txt" 0.5
	al perf produce --topic "${topic}" --num-records "${MEM_N}" --record-size 1024 >"${OUT}/memory-1k.produce.txt"
	end_sampler "${OUT}/memory-1k.mem.txt"
	read -r rps p99 <<<"$(perf_summary "${OUT}/memory-1k.produce.txt")"
	read -r rss hwm fds <<<"$(mem_summary "${OUT}/memory-1k.mem.txt")"
	al topics delete "${topic}" >/dev/null
	steady_n=$((steady_s * STEADY_RATE))
	echo "== memory: steady ${STEADY} at ${STEADY_RATE} records/s of 1 KiB (${steady_n} records), 3 partitions, a sample every ${STEADY_SAMPLE} s; $(uptime)"
	stop_host
	start_host steady
	topic="steady-$(date +%s)"
	# shellcheck disable=SC2086 # STEADY_TOPIC_FLAGS is a list of flags
	al topics create "${topic}" --partitions 3 ${STEADY_TOPIC_FLAGS} >/dev/null
	start_sampler "${OUT}/steady.mem.txt" "${STEADY_SAMPLE}"
	al perf produce --topic "${topic}" --num-records "${steady_n}" --record-size 1024 \
		--throughput "${STEADY_RATE}" >"${OUT}/steady.produce.txt"
	end_sampler "${OUT}/steady.mem.txt"
	read -r srps sp99 <<<"$(perf_summary "${OUT}/steady.produce.txt")"
	al topics delete "${topic}" >/dev/null
	# first, last, max RSS; slope (MiB/min) of RSS and of RssAnon after
	# the first minute.
	read -r first last smax slope aslope nsamp <<<"$(awk '
		NR == 1 { first = $2 }
		{ last = $2; if ($2 > mx) mx = $2 }
		$1 >= 60 { n++; x = $1 / 60; sx += x; sxx += x * x; sy += $2 / 1024; sxy += x * $2 / 1024; sa += $4 / 1024; sxa += x * $4 / 1024 }
		END {
			d = n * sxx - sx * sx
			s = (n > 1 && d != 0) ? (n * sxy - sx * sy) / d : 0
			a = (n > 1 && d != 0) ? (n * sxa - sx * sa) / d : 0
			printf "%.1f %.1f %.1f %.2f %.2f %d", first / 1024, last / 1024, mx / 1024, s, a, NR
		}' "${OUT}/steady.mem.txt")"
	{
		echo
		echo "| memory run | records/s | p99 ms | host RSS (MiB) | open files (max) |"
		echo "|---|---|---|---|---|"
		echo "| 1 KiB, ${MEM_N} records, full speed (fresh host) | ${rps} | ${p99} | at start ${rss}, peak (VmHWM) ${hwm} (goal <= 256) | ${fds} |"
		echo "| 1 KiB, steady ${STEADY} at ${STEADY_RATE}/s (fresh host) | ${srps} | ${sp99} | first ${first}, last ${last}, max ${smax}; slope after 1 min ${slope} MiB/min (anon ${aslope}), ${nsamp} samples | $(awk '{ if ($6 > f) f = $6 } END { print f }' "${OUT}/steady.mem.txt") |"
	} | tee "${OUT}/memory.md"
fi
kill -0 "${host_pid}" 2>/dev/null || echo "warning: the actorlog host exited during the run" >&2
echo "== done; results in ${OUT} (results.txt, partitions.md, memory.md, *.mem.txt: ELAPSED_S VmRSS VmHWM RssAnon RssFile FDS in KiB)"
