#!/usr/bin/env bash
# cleaner-bench.sh: what the log cleaner costs producers (issue 14). One
# actorlog host, a compacted topic (3 partitions, 1 MiB segments,
# min.cleanable.dirty.ratio 0.1) and `actorlog perf produce` of N records of
# SIZE bytes over KEYS keys at RATE records/s, in alternating rounds:
#   on:  the host runs with --log-cleaner-threads 1 --log-cleaner-backoff 1s
#        and no I/O bound, so it cleans as the segments close;
#   off: --log-cleaner-backoff 1h (--log-cleaner-threads 0 means the default
#        1 thread, so the cleaner cannot be turned off; its first look finds
#        an empty host and the next comes after the round).
# Every round starts a fresh host on a fresh data dir. Per round it prints
# perf's throughput, average and p99 latency, the host's CPU seconds and
# data dir size at the end, and for cleaner-on rounds the host's
# actorlog_log_cleaner_bytes_cleaned_total and _seconds_total (cleaning
# MB/s = bytes / seconds); then the medians: p99 on vs off and their ratio,
# throughput on vs off, cleaner MB/s.
#
#   scripts/cleaner-bench.sh               # 3 rounds of each
#   ROUNDS=1 N=100000 scripts/cleaner-bench.sh
#
# Settings (environment): OUT (/tmp/cleaner-bench), ROUNDS (3), N (500000
# records a round), SIZE (1024), KEYS (10000), RATE (20000), BASE_PORT
# (19800; the host uses BASE_PORT..+3), HOST_FLAGS (more host flags for
# both modes, e.g. --log-cleaner-dedupe-buffer-size 16777216). Only the host it started is
# stopped (by pid). The numbers mean something only on an otherwise idle
# machine: check `uptime` first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="${PATH}:/usr/local/go/bin"

OUT="${OUT:-/tmp/cleaner-bench}"
ROUNDS="${ROUNDS:-3}"
N="${N:-500000}"
SIZE="${SIZE:-1024}"
KEYS="${KEYS:-10000}"
RATE="${RATE:-20000}"
BP="${BASE_PORT:-19800}"
HOST_FLAGS="${HOST_FLAGS:-}"
listen="127.0.0.1:${BP}"
http="127.0.0.1:$((BP + 3))"

rm -rf "${OUT}"
mkdir -p "${OUT}"
bin="${OUT}/actorlog"
echo "== build"
go build -o "${bin}" ./cmd/actorlog

# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
trap stop_host EXIT

start_host() { # NAME CLEANER-FLAGS...
	local name="$1"
	shift
	# shellcheck disable=SC2086 # HOST_FLAGS is split on purpose
	"${bin}" --log-level warn host --data-dir "${OUT}/${name}.data" --listen "${listen}" \
		--http "${http}" --kafka-listen "" --unsafe-min-segment-bytes 1048576 "$@" ${HOST_FLAGS} \
		>"${OUT}/${name}.host.log" 2>&1 &
	host_pid="$!"
	wait_healthy "${http}" "${OUT}/${name}.host.log" "${host_pid}"
}

metric() { # NAME -> value of an unlabelled metric on the host's /metrics
	curl -sf "http://${http}/metrics" | awk -v m="$1" '$1 == m { print $2 }'
}

cpu_seconds() { # PID -> user+system CPU seconds
	awk '{ sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / 100 }' "/proc/$1/stat"
}

machine_info "${OUT}"

# results.txt: one line per round: mode round records/s MB/s avg p99 cleaned-bytes cleaner-seconds host-cpu data-MiB
: >"${OUT}/results.txt"
round() { # MODE R
	local mode="$1" r="$2" name="$1-$2" flags
	if [[ "${mode}" == on ]]; then
		flags=(--log-cleaner-threads 1 --log-cleaner-backoff 1s)
	else
		flags=(--log-cleaner-threads 1 --log-cleaner-backoff 1h)
	fi
	start_host "${name}" "${flags[@]}"
	"${bin}" --bootstrap "${listen}" topics create bench --partitions 3 \
		--config cleanup.policy=compact --config segment.bytes=1048576 \
		--config min.cleanable.dirty.ratio=0.1 >/dev/null
	"${bin}" --bootstrap "${listen}" perf produce --topic bench --num-records "${N}" \
		--record-size "${SIZE}" --keys "${KEYS}" --throughput "${RATE}" | tee "${OUT}/${name}.perf.txt"
	local summary bytes secs cpu mib
	summary="$(grep '99th' "${OUT}/${name}.perf.txt" | tail -1)"
	bytes="$(metric actorlog_log_cleaner_bytes_cleaned_total)"
	secs="$(metric actorlog_log_cleaner_seconds_total)"
	cpu="$(cpu_seconds "${host_pid}")"
	mib="$(du -sm "${OUT}/${name}.data" | cut -f1)"
	stop_host
	rm -rf "${OUT}/${name}.data" # 0.6 GiB a cleaner-off round
	# "N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency, P ms 50th, P ms 95th, P ms 99th, P ms 99.9th."
	echo "${summary}" | awk -v mode="${mode}" -v r="${r}" -v b="${bytes:-0}" -v s="${secs:-0}" -v cpu="${cpu}" -v mib="${mib}" '{
		gsub(/[(),]/, "")
		printf "%s %d %s %s %s %s %.0f %.3f %s %s\n", mode, r, $4, $6, $8, $22, b, s, cpu, mib
	}' | tee -a "${OUT}/results.txt" | awk '{
		printf "-- round %d cleaner %s: %s records/s (%s MB/s), avg %s ms, p99 %s ms; host CPU %s s, data %s MiB", $2, $1, $3, $4, $5, $6, $9, $10
		if ($1 == "on") printf "; cleaned %.1f MiB in %.2f s (%.1f MB/s)", $7 / 1048576, $8, ($8 > 0 ? $7 / $8 / 1e6 : 0)
		printf "\n"
	}'
}

for r in $(seq 1 "${ROUNDS}"); do
	if ((r % 2 == 1)); then
		order=(on off)
	else
		order=(off on)
	fi
	for mode in "${order[@]}"; do
		echo "== round ${r}, cleaner ${mode} (N=${N} SIZE=${SIZE} KEYS=${KEYS} RATE=${RATE})"
		round "${mode}" "${r}"
	done
done

median() { # MODE FIELD -> median of FIELD over MODE's rounds
	awk -v m="$1" -v f="$2" '$1 == m { print $f }' "${OUT}/results.txt" | median_values
}
cleaner_mbs() { # median over the cleaner-on rounds of bytes/seconds
	awk '$1 == "on" && $8 > 0 { print $7 / $8 / 1e6 }' "${OUT}/results.txt" | median_values
}
{
	echo "== medians over ${ROUNDS} rounds each (${OUT}/results.txt)"
	p99_on="$(median on 6)"
	p99_off="$(median off 6)"
	echo "p99 latency: cleaner on ${p99_on} ms, off ${p99_off} ms, on/off $(awk -v a="${p99_on}" -v b="${p99_off}" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')"
	echo "avg latency: cleaner on $(median on 5) ms, off $(median off 5) ms"
	echo "throughput: cleaner on $(median on 3) records/s, off $(median off 3) records/s"
	echo "host CPU: cleaner on $(median on 9) s, off $(median off 9) s; data dir: on $(median on 10) MiB, off $(median off 10) MiB"
	echo "cleaner: $(cleaner_mbs) MB/s of segments cleaned (bytes_cleaned_total / seconds_total, median of the on rounds)"
} | tee "${OUT}/summary.txt"
