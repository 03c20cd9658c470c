#!/usr/bin/env bash
# bench.sh: the producer/consumer defaults benchmark of issue 15. Checks
# that `actorlog perf produce` and `perf consume` with their default
# settings keep up with franz-go (kgo, its own defaults) against franz-go's
# kfake in disk mode, on the same machine in the same run, and that the
# default producer stays fast at low rates. It builds actorlog and
# cmd/kafkabench, starts one actorlog host (replication factor 1), and for
# each SIZES record size runs ROUNDS alternating rounds (round r starts with
# the other target than round r-1) of:
#   actorlog: a fresh 3-partition topic, `actorlog perf produce
#             --num-records N --record-size S` (defaults otherwise:
#             acks=all, idempotent, default batch size and linger), then
#             `actorlog perf consume --messages N` of it;
#   kfake:    `kafkabench --kfake` (a fresh in-process disk-mode kfake, a
#             3-partition topic, kgo's defaults) producing N records of S
#             bytes, then a fresh kgo consumer reading them;
#   kfake-proc (KFAKE_PROC=1, the default): the same, but the fresh kfake
#             runs in a process of its own (`kafkabench --serve-kfake`)
#             and kgo in another (`kafkabench --target`), as actorlog's
#             host and perf tools do: broker and client do not share one
#             Go heap and scheduler, and the client starts cold;
#   kfake-live (KFAKE_LIVE=1, the default): as kfake, with kafkabench's
#             64 MiB value pool kept reachable while kgo consumes
#             (`--payload-live`), as every kfake run did until
#             2026-12-06: a GC ballast that set the consumer's heap goal
#             at ~134 MB (kafkabench now drops the pool before a consumer
#             runs, as a consuming service holds no producer's test data);
#             kept for comparison with the figures measured that way;
#   actorlog-inproc (INPROC=1, the default): `actorlog perf inprocess`, a
#             fresh host started in the perf tool's own process (a new
#             data directory, 3 partitions) and the same produce and
#             consume code as actorlog's, so that host and client share
#             one Go heap and scheduler as kgo and the in-process kfake do:
#             the like-for-like counterpart of the kfake column;
#   kgo-actorlog (KGO_ACTORLOG=1, the default): kgo in a process of its
#             own (`kafkabench --target`, kgo's defaults) against the same
#             actorlog host's Kafka listener: what a real Kafka client
#             gets from the host, set up as kfake-proc is (broker and
#             client separate processes), for telling the host's share
#             of a figure from the client's and from the set-up's;
#   actorlog-reuse (REUSE=1, the default): consume only, `actorlog perf
#             consume --reuse-buffers` of the actorlog target's topic
#             (the consumer's Config.ReuseBuffers: records valid only
#             inside the handler, fetch buffers given back and reused),
#             before or after actorlog's own consume, alternating;
#   old (OLD=1): as actorlog with the previous defaults' batching,
#             `--batch-size 16384 --linger 5ms`;
#   before (BEFORE_BIN=PATH): as actorlog, but `perf produce` and `perf
#             consume` are another actorlog binary's (an older build,
#             e.g. of `git archive HEAD`), with its own defaults, against
#             the same host; with BEFORE_HOST=1 against a second host
#             of that binary too (a change on both sides of the remote,
#             e.g. its transport settings, is measured whole);
# then, alternating too, the latency run: `actorlog perf produce
# --throughput RATE` for LAT_N records of LAT_SIZE bytes (p99 as perf
# prints it, whole ms; also with BEFORE_BIN) and kgo at the same rate
# against kfake (kgo's default linger), each beside cmd/stallprobe, which
# counts the machine's own pauses (wake-ups > 10 ms late) during that run. It prints every run, then the medians and each
# target's ratio to kfake (and to kfake-proc) as a markdown table. Goal: ratio >= 1.00 for
# produce at every size, and actorlog's p99 <= 5 ms at 1,000 records/s.
#
#   scripts/bench.sh                        # full run, about 5 minutes
#   ROUNDS=1 N=200000 scripts/bench.sh      # quicker
#   OLD=1 scripts/bench.sh                  # also the previous batching
#   git archive HEAD | tar -x -C /tmp/head && (cd /tmp/head && go build -o /tmp/actorlog-head ./cmd/actorlog)
#   BEFORE_BIN=/tmp/actorlog-head scripts/bench.sh   # also HEAD's client
#   BEFORE_HOST=1 BEFORE_BIN=/tmp/actorlog-head scripts/bench.sh   # HEAD's client and host
#
# Settings (environment): KEEP_DATA (0: the hosts' data directories are
# removed at the end; 1 keeps them), OUT (/tmp/actorlog-bench), ROUNDS (3), N
# (1000000 records per throughput run), SIZES (100,1024), RATE (1000),
# LAT_N (10000 records, so 10 s at 1,000/s), LAT_SIZE (100), OLD (0),
# BEFORE_BIN (none), BEFORE_HOST (0; 1: BEFORE_BIN's own host on
# BASE_PORT+10..+13),
# CONSUME (1), LATENCY (1), KFAKE_PROC (1), KFAKE_LIVE (1), INPROC (1), KGO_ACTORLOG (1), REUSE (1), BATCH_SIZE (none:
# every target's producer batch size in bytes, for goal 3's small-batch
# comparison, e.g. BATCH_SIZE=16384 SIZES=1024 CONSUME=0 LATENCY=0: kgo gets
# ProducerBatchMaxBytes, actorlog --batch-size), BASE_PORT (19940;
# the host uses BASE_PORT..+4 (its Kafka listener +4), actorlog-inproc's BASE_PORT+20..+22).
#
# Only the host it started is stopped (by pid) on exit. The numbers mean
# something only on an otherwise idle machine: check `uptime` first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="${PATH}:/usr/local/go/bin"

OUT="${OUT:-/tmp/actorlog-bench}"
ROUNDS="${ROUNDS:-3}"
N="${N:-1000000}"
SIZES="${SIZES:-100,1024}"
RATE="${RATE:-1000}"
LAT_N="${LAT_N:-10000}"
LAT_SIZE="${LAT_SIZE:-100}"
OLD="${OLD:-0}"
BEFORE_BIN="${BEFORE_BIN:-}"
BEFORE_HOST="${BEFORE_HOST:-0}"
CONSUME="${CONSUME:-1}"
KFAKE_PROC="${KFAKE_PROC:-1}"
KFAKE_LIVE="${KFAKE_LIVE:-1}"
INPROC="${INPROC:-1}"
KGO_ACTORLOG="${KGO_ACTORLOG:-1}"
REUSE="${REUSE:-1}"
LATENCY="${LATENCY:-1}"
BATCH_SIZE="${BATCH_SIZE:-}"
BP="${BASE_PORT:-19940}"
listen="127.0.0.1:${BP}"
http="127.0.0.1:$((BP + 3))"
kafka_listen="127.0.0.1:$((BP + 4))"

# batch: every target's producer batch size flag when BATCH_SIZE is set
# (actorlog's and kafkabench's flags have the same name).
batch=()
[[ -n "${BATCH_SIZE}" ]] && batch=(--batch-size "${BATCH_SIZE}")

rm -rf "${OUT}"
mkdir -p "${OUT}"
bin="${OUT}/actorlog"
kb="${OUT}/kafkabench"
echo "== build"
go build -o "${bin}" ./cmd/actorlog
go build -o "${kb}" ./cmd/kafkabench
go build -o "${OUT}/stallprobe" ./cmd/stallprobe

# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
trap 'stop_host; stop_pids; drop_data' EXIT
data_dirs+=("${OUT}/host.data" "${OUT}/before-host.data")

"${bin}" --log-level warn host --data-dir "${OUT}/host.data" --listen "${listen}" \
	--http "${http}" --kafka-listen "${kafka_listen}" >"${OUT}/host.log" 2>&1 &
host_pid="$!"
wait_healthy "${http}" "${OUT}/host.log" "${host_pid}"

# before_listen: where the before target's runs go (its own host with
# BEFORE_HOST=1, else the same host).
before_listen="${listen}"
if [[ -n "${BEFORE_BIN}" && "${BEFORE_HOST}" == 1 ]]; then
	before_listen="127.0.0.1:$((BP + 10))"
	"${BEFORE_BIN}" --log-level warn host --data-dir "${OUT}/before-host.data" --listen "${before_listen}" \
		--http "127.0.0.1:$((BP + 13))" --kafka-listen "" >"${OUT}/before-host.log" 2>&1 &
	pids+=("$!")
	wait_healthy "127.0.0.1:$((BP + 13))" "${OUT}/before-host.log" "$!"
fi

machine_info "${OUT}" actors/producer cmd/actorlog cmd/kafkabench

target_listen="${listen}" # the host the next runs go to (see BEFORE_HOST)
al() { "${bin}" --bootstrap "${target_listen}" "$@"; }
client="${bin}"  # the binary whose perf produce/consume runs (see BEFORE_BIN)
cl() { "${client}" --bootstrap "${target_listen}" "$@"; }

# results.txt: one line per run: WORKLOAD TARGET ROUND VALUE, VALUE in
# records/s, or p99 in ms for latency workloads.
results="${OUT}/results.txt"
: >"${results}"
record() { # WORKLOAD TARGET ROUND VALUE
	echo "$1 $2 $3 $4" >>"${results}"
	printf '%-22s %-9s round %d: %s\n' "$1" "$2" "$3" "$4"
}

seq_topic=0
new_topic() {
	seq_topic=$((seq_topic + 1))
	local t
	t="bench-$(date +%s)-${seq_topic}"
	al topics create "${t}" --partitions 3 >/dev/null
	echo "${t}"
}

# actorlog_run NAME SIZE ROUND PERF-FLAGS...: produce and consume N records.
actorlog_run() {
	local name="$1" size="$2" r="$3"
	shift 3
	local topic f
	topic="$(new_topic)"
	f="${OUT}/${name}-${size}-${r}"
	cl perf produce --topic "${topic}" --num-records "${N}" --record-size "${size}" "${batch[@]}" "$@" >"${f}.produce.txt"
	record "produce-${size}B" "${name}" "${r}" "$(perf_summary "${f}.produce.txt" | cut -d' ' -f1)"
	if [[ "${CONSUME}" == 1 ]]; then
		local runs=("${name}")
		if [[ "${name}" == actorlog && "${REUSE}" == 1 ]]; then
			runs=(actorlog actorlog-reuse)
			((r % 2 == 0)) && runs=(actorlog-reuse actorlog)
		fi
		local run reuse
		for run in "${runs[@]}"; do
			reuse=()
			[[ "${run}" == actorlog-reuse ]] && reuse=(--reuse-buffers)
			cl perf consume --topic "${topic}" --messages "${N}" "${reuse[@]}" >"${f}.${run}.consume.txt"
			# start.time, end.time, MB, MB.sec, nMsg, nMsg.sec
			record "consume-${size}B" "${run}" "${r}" "$(tail -1 "${f}.${run}.consume.txt" | awk -F', ' '{ printf "%.1f", $6 }')"
		done
	fi
	al topics delete "${topic}" >/dev/null
}

# record_kafkabench FILE TARGET SIZE ROUND [AS]: records the produce and
# consume figures (records/s) a one-round kafkabench run printed for
# TARGET, under the name AS (default TARGET).
record_kafkabench() {
	local f="$1" t="$2" size="$3" r="$4" as="${5:-$2}" w v
	for w in produce consume; do
		v="$(awk -v t="${t}" -v w="${w}" '$1 == t && $2 == w { for (i = 1; i <= NF; i++) if ($i == "rec/s") print $(i - 1) }' "${f}")"
		[[ -n "${v}" ]] && record "${w}-${size}B" "${as}" "${r}" "${v}"
	done
	return 0
}

# kfake_run SIZE ROUND [NAME]: kgo with its defaults against a fresh
# disk-mode kfake; NAME kfake-live keeps kafkabench's 64 MiB value pool
# reachable while kgo consumes (--payload-live).
kfake_run() {
	local size="$1" r="$2" name="${3:-kfake}" f skip=() live=()
	f="${OUT}/${name}-${size}-${r}.txt"
	[[ "${CONSUME}" == 1 ]] || skip=(--skip consume)
	[[ "${name}" == kfake-live ]] && live=(--payload-live)
	"${kb}" --kfake --n "${N}" --sizes "${size}" --rounds 1 --rate 0 "${batch[@]}" "${skip[@]}" "${live[@]}" >"${f}"
	record_kafkabench "${f}" kfake "${size}" "${r}" "${name}"
}

# kfake_proc_run SIZE ROUND: as kfake_run, with the fresh kfake in a
# process of its own and kgo in another (see kfake-proc above).
kfake_proc_run() {
	local size="$1" r="$2" f addr srv skip=()
	f="${OUT}/kfake-proc-${size}-${r}.txt"
	addr="${OUT}/kfake-proc.addr"
	rm -f "${addr}"
	"${kb}" --serve-kfake "${addr}" >"${f}.serve.log" 2>&1 &
	srv="$!"
	pids+=("${srv}")
	for _ in $(seq 1 100); do
		[[ -s "${addr}" ]] && break
		sleep 0.1
	done
	if [[ ! -s "${addr}" ]]; then
		echo "kfake (own process) did not start; see ${f}.serve.log" >&2
		return 1
	fi
	[[ "${CONSUME}" == 1 ]] || skip=(--skip consume)
	"${kb}" --target "kfake-proc=$(cat "${addr}")" --n "${N}" --sizes "${size}" --rounds 1 --rate 0 "${batch[@]}" "${skip[@]}" >"${f}"
	kill -TERM "${srv}"
	wait "${srv}" 2>/dev/null || true
	record_kafkabench "${f}" kfake-proc "${size}" "${r}"
}

# kgo_actorlog_run SIZE ROUND: kgo in its own process against the host's
# Kafka listener (kafkabench creates and deletes its topic there).
kgo_actorlog_run() {
	local size="$1" r="$2" f skip=()
	f="${OUT}/kgo-actorlog-${size}-${r}.txt"
	[[ "${CONSUME}" == 1 ]] || skip=(--skip consume)
	"${kb}" --target "kgo-actorlog=${kafka_listen}" --n "${N}" --sizes "${size}" --rounds 1 --rate 0 "${batch[@]}" "${skip[@]}" >"${f}"
	record_kafkabench "${f}" kgo-actorlog "${size}" "${r}"
}

# inproc_run SIZE ROUND: actorlog's host and perf tools in one process.
inproc_run() {
	local size="$1" r="$2" f
	f="${OUT}/actorlog-inproc-${size}-${r}.txt"
	"${bin}" --log-level warn perf inprocess --num-records "${N}" --record-size "${size}" "${batch[@]}" \
		--consume="$([[ "${CONSUME}" == 1 ]] && echo true || echo false)" \
		--listen "127.0.0.1:$((BP + 20))" --data-dir "${OUT}/inproc-${size}-${r}.data" >"${f}"
	rm -rf "${OUT}/inproc-${size}-${r}.data"
	record "produce-${size}B" actorlog-inproc "${r}" "$(perf_summary "${f}" | cut -d' ' -f1)"
	if [[ "${CONSUME}" == 1 ]]; then
		# start.time, end.time, MB, MB.sec, nMsg, nMsg.sec (its last line)
		record "consume-${size}B" actorlog-inproc "${r}" "$(tail -1 "${f}" | awk -F', ' '{ printf "%.1f", $6 }')"
	fi
}

targets=(actorlog kfake)
[[ "${KFAKE_PROC}" == 1 ]] && targets+=(kfake-proc)
[[ "${KFAKE_LIVE}" == 1 && "${CONSUME}" == 1 ]] && targets+=(kfake-live)
[[ "${INPROC}" == 1 ]] && targets+=(actorlog-inproc)
[[ "${KGO_ACTORLOG}" == 1 ]] && targets+=(kgo-actorlog)
[[ "${OLD}" == 1 ]] && targets+=(old)
[[ -n "${BEFORE_BIN}" ]] && targets+=(before)

echo "== throughput (N=${N} SIZES=${SIZES} ROUNDS=${ROUNDS})"
for size in ${SIZES//,/ }; do
	for r in $(seq 1 "${ROUNDS}"); do
		k=${#targets[@]}
		for i in $(seq 0 $((k - 1))); do
			t="${targets[$(((r + i) % k))]}"
			case "${t}" in
			actorlog) actorlog_run actorlog "${size}" "${r}" ;;
			old) actorlog_run old "${size}" "${r}" --batch-size 16384 --linger 5ms ;;
			before)
				client="${BEFORE_BIN}" target_listen="${before_listen}"
				actorlog_run before "${size}" "${r}"
				client="${bin}" target_listen="${listen}"
				;;
			kfake) kfake_run "${size}" "${r}" ;;
			kfake-live) kfake_run "${size}" "${r}" kfake-live ;;
			kfake-proc) kfake_proc_run "${size}" "${r}" ;;
			actorlog-inproc) inproc_run "${size}" "${r}" ;;
			kgo-actorlog) kgo_actorlog_run "${size}" "${r}" ;;
			esac
		done
	done
done

# Go's duration strings (950µs, 4.2ms, 1.5s) in ms.
to_ms() {
	awk -v d="$1" 'BEGIN {
		if (d ~ /µs$/) { sub(/µs$/, "", d); printf "%.2f", d / 1000 }
		else if (d ~ /ms$/) { sub(/ms$/, "", d); printf "%.2f", d }
		else if (d ~ /s$/) { sub(/s$/, "", d); printf "%.2f", d * 1000 }
		else printf "%s", d
	}'
}

if [[ "${LATENCY}" == 1 ]]; then
	echo "== latency (${RATE} records/s, ${LAT_N} records of ${LAT_SIZE} B)"
	# The throughput runs left gigabytes of dirty page cache: let the
	# kernel write them back first, or its writeback stalls the host's
	# appends in the latency runs (a 360 ms p99 seen once).
	sync
	sleep 2
	secs=$(((LAT_N + RATE - 1) / RATE))
	for r in $(seq 1 "${ROUNDS}"); do
		order=(actorlog kfake)
		((r % 2 == 0)) && order=(kfake actorlog)
		[[ -n "${BEFORE_BIN}" ]] && order+=(before)
		for t in "${order[@]}"; do
			# Beside each latency run, a process that only sleeps 1 ms at a
			# time counts the machine's own pauses (cmd/stallprobe): wake-ups
			# more than 10 ms late, which that run's p99 then includes.
			"${OUT}/stallprobe" --duration "$((secs + 1))s" >"${OUT}/stalls-${t}-${r}.txt" &
			probe=$!
			if [[ "${t}" != kfake ]]; then
				client="${bin}" target_listen="${listen}"
				[[ "${t}" == before ]] && client="${BEFORE_BIN}" target_listen="${before_listen}"
				topic="$(new_topic)"
				f="${OUT}/latency-${t}-${r}.txt"
				cl perf produce --topic "${topic}" --num-records "${LAT_N}" --record-size "${LAT_SIZE}" \
					--throughput "${RATE}" >"${f}"
				read -r rps p99 <<<"$(perf_summary "${f}")"
				record "p99ms@${RATE}/s" "${t}" "${r}" "${p99}"
				record "rate@${RATE}/s" "${t}" "${r}" "${rps}"
				al topics delete "${topic}" >/dev/null
				client="${bin}" target_listen="${listen}"
			else
				f="${OUT}/latency-kfake-${r}.txt"
				"${kb}" --kfake --skip produce --rate "${RATE}" --duration "${secs}s" \
					--latency-size "${LAT_SIZE}" --latency-linger default --rounds 1 >"${f}"
				line="$(awk '$1 == "kfake" && $2 == "latency"' "${f}")"
				p99="$(awk '{ for (i = 1; i <= NF; i++) if ($i == "p99") print $(i + 1) }' <<<"${line}")"
				rps="$(awk '{ for (i = 1; i <= NF; i++) if ($i == "rec/s") print $(i - 1) }' <<<"${line}")"
				record "p99ms@${RATE}/s" kfake "${r}" "$(to_ms "${p99}")"
				record "rate@${RATE}/s" kfake "${r}" "${rps}"
			fi
			wait "${probe}"
			record "stalls>10ms@${RATE}/s" "${t}" "${r}" \
				"$(sed -n 's/.*late: \([0-9]*\) times.*/\1/p' "${OUT}/stalls-${t}-${r}.txt")"
		done
	done
fi

echo
echo "== medians (${ROUNDS} rounds; ratio = target / kfake, and / kfake-proc; p99 in ms, perf prints whole ms)"
{
	echo "| workload | target | runs | median | ratio | ratio to kfake-proc |"
	echo "|---|---|---|---|---|---|"
	# Sort by workload, target, value; then take each group's median.
	sort -k1,1 -k2,2 -k4,4g "${results}" | awk '
	function flush() {
		if (n == 0) return
		m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
		med[w, t] = m; runs[w, t] = n
		if (!((w) in seenw)) { seenw[w] = 1; ws[++nw] = w }
		if (!((w, t) in seent)) { seent[w, t] = 1; ts[w, ++nt[w]] = t }
		n = 0
	}
	{ if ($1 != w || $2 != t) { flush(); w = $1; t = $2 } v[++n] = $4 }
	END {
		flush()
		for (i = 1; i <= nw; i++) {
			w = ws[i]
			for (j = 1; j <= nt[w]; j++) {
				t = ts[w, j]
				ratio = "-"; ratioProc = "-"
				if (w !~ /^(p99|stalls)/ && ((w, "kfake") in med) && med[w, "kfake"] > 0) ratio = sprintf("%.2fx", med[w, t] / med[w, "kfake"])
				if (w !~ /^(p99|stalls)/ && ((w, "kfake-proc") in med) && med[w, "kfake-proc"] > 0) ratioProc = sprintf("%.2fx", med[w, t] / med[w, "kfake-proc"])
				printf "| %s | %s | %d | %.1f | %s | %s |\n", w, t, runs[w, t], med[w, t], ratio, ratioProc
			}
		}
	}'
} | tee "${OUT}/summary.md"
kill -0 "${host_pid}" 2>/dev/null || echo "warning: the actorlog host exited during the run" >&2
echo "== done; results in ${OUT} (results.txt, summary.md, per-run outputs)"
