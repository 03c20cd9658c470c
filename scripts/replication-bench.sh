#!/usr/bin/env bash
# replication-bench.sh: issue 15's goal 4. Builds actorlog, starts three
# hosts on loopback (one etcd cluster of three voters), creates a
# 3-partition topic with replication factor 1 and one with replication
# factor 3 (min.insync.replicas 2), and runs ROUNDS alternating rounds
# (round r starts with the other topic than round r-1) of `actorlog perf
# produce --num-records N --record-size SIZE` (defaults otherwise: acks=all,
# idempotent) against each; then LAT_N records at LAT_RATE records/s to the
# replication-factor-3 topic, the first LAT_WARMUP of them a warm-up
# (--warmup-records, as Kafka's tool: a new client process connects to
# every host, and each host back to it, while the first records wait).
# Prints every run, the medians, the ratio RF=3 / RF=1 (goal >= 0.50),
# the fixed-rate p99 of the steady state (goal <= 10 ms) and of the whole
# run, the share of the machine's CPU busy meanwhile, and
# the CPU time the three hosts spent per record in each (from
# /proc/PID/stat): with every host on the same cores, RF=3's share of
# them bounds the ratio once the hosts keep the cores busy. Beside the
# fixed-rate run, cmd/stallprobe counts the machine's own pauses. Then
# (FLOOR=1) cmd/replfloor measures the same ratio for bare replication —
# loopback sockets, CRC, pwrite, nothing of actorlog — with the leader
# shipping its file to the followers by sendfile (Kafka's way) and by
# pread (actorlog's): what this machine allows any implementation.
#
#   scripts/replication-bench.sh              # about 3 minutes
#
# Settings (environment): OUT (/tmp/actorlog-replication-bench), ROUNDS (3),
# N (1000000), SIZE (100), LAT_RATE (50000), LAT_N (500000; 0 skips it),
# LAT_WARMUP (LAT_RATE: the first second),
# BASE_PORT (29000: host i listens on BASE_PORT+100*i, its etcd on +1 and
# +2, its HTTP on +80), KEEP_DATA (0: the hosts' data directories, ~6 GiB
# at SIZE=1024, are removed at the end), FLOOR (1), FLOOR_DURATION (5s per
# replfloor run). Only the hosts it started are
# stopped (by pid).
# The numbers mean something only on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="${PATH}:/usr/local/go/bin"

OUT="${OUT:-/tmp/actorlog-replication-bench}"
ROUNDS="${ROUNDS:-3}"
N="${N:-1000000}"
SIZE="${SIZE:-100}"
LAT_RATE="${LAT_RATE:-50000}"
LAT_N="${LAT_N:-500000}"
LAT_WARMUP="${LAT_WARMUP:-${LAT_RATE}}"
BASE_PORT="${BASE_PORT:-29000}"
FLOOR="${FLOOR:-1}"
FLOOR_DURATION="${FLOOR_DURATION:-5s}"

rm -rf "${OUT}"
mkdir -p "${OUT}"
bin="${OUT}/actorlog"

echo "== build"
go build -o "${bin}" ./cmd/actorlog
go build -o "${OUT}/stallprobe" ./cmd/stallprobe
go build -o "${OUT}/replfloor" ./cmd/replfloor

# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh

trap 'stop_pids; drop_data' EXIT

port() { echo $((BASE_PORT + 100 * $1 + $2)); }
cluster=""
for i in 1 2 3; do
	cluster+="${cluster:+,}host${i}=http://127.0.0.1:$(port "${i}" 1)"
done
for i in 1 2 3; do
	data_dirs+=("${OUT}/host-${i}")
	"${bin}" --log-level warn host --name "host${i}" --data-dir "${OUT}/host-${i}" \
		--listen "127.0.0.1:$(port "${i}" 0)" --http "127.0.0.1:$(port "${i}" 80)" --kafka-listen "" \
		--etcd-peer "127.0.0.1:$(port "${i}" 1)" --etcd-client "127.0.0.1:$(port "${i}" 2)" \
		--initial-cluster "${cluster}" >"${OUT}/host-${i}.log" 2>&1 &
	pids+=("$!")
done
for i in 1 2 3; do
	wait_healthy "127.0.0.1:$(port "${i}" 80)" "${OUT}/host-${i}.log" "${pids[$((i - 1))]}"
done

machine_info "${OUT}" cmd/actorlog storage actors/replica actors/producer actors/client

al() { "${bin}" --bootstrap "127.0.0.1:$(port 1 0),127.0.0.1:$(port 2 0)" "$@"; }
al topics create rf1 --partitions 3 --replication-factor 1 >/dev/null
al topics create rf3 --partitions 3 --replication-factor 3 --config min.insync.replicas=2 >/dev/null

# hosts_cpu: CPU time (user + system) of the three hosts, in clock ticks.
hosts_cpu() {
	local t=0 p
	for p in "${pids[@]}"; do
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/${p}/stat")))
	done
	echo "${t}"
}
hz="$(getconf CLK_TCK)"

: >"${OUT}/results.txt"
for r in $(seq 1 "${ROUNDS}"); do
	order="rf1 rf3"
	if ((r % 2 == 0)); then
		order="rf3 rf1"
	fi
	for topic in ${order}; do
		echo "-- ${topic} round ${r}; $(uptime)"
		c0="$(hosts_cpu)"
		al perf produce --topic "${topic}" --num-records "${N}" --record-size "${SIZE}" >"${OUT}/${topic}-${r}.txt"
		c1="$(hosts_cpu)"
		read -r rps p99 <<<"$(perf_summary "${OUT}/${topic}-${r}.txt")"
		us="$(awk -v t="$((c1 - c0))" -v hz="${hz}" -v n="${N}" 'BEGIN { printf "%.2f", t / hz * 1e6 / n }')"
		echo "${topic} ${rps} ${p99} ${us}" | tee -a "${OUT}/results.txt"
	done
done

median() { # TOPIC
	awk -v t="$1" '$1 == t { print $2 }' "${OUT}/results.txt" | median_values
}
m1="$(median rf1)"
m3="$(median rf3)"
cpu_median() { # TOPIC: hosts' CPU microseconds per record
	awk -v t="$1" '$1 == t { print $4 }' "${OUT}/results.txt" | median_values
}
u1="$(cpu_median rf1)"
u3="$(cpu_median rf3)"

lat=""
lat_all=""
busy=""
stalls=""
if [[ "${LAT_N}" -gt 0 ]]; then
	# The rounds above left gigabytes of dirty page cache: let the kernel
	# write them back first, as scripts/bench.sh does.
	sync
	sleep 2
	echo "-- rf3 at ${LAT_RATE} records/s; $(uptime)"
	# A process that only sleeps 1 ms at a time, beside the run: wake-ups
	# more than 10 ms late are the machine pausing (cmd/stallprobe), which
	# the p99 then includes.
	"${OUT}/stallprobe" --duration "$(((LAT_N + LAT_RATE - 1) / LAT_RATE + 1))s" --list >"${OUT}/stallprobe.txt" &
	probe=$!
	stat0="$(head -1 /proc/stat)"
	al perf produce --topic rf3 --num-records "${LAT_N}" --record-size "${SIZE}" \
		--throughput "${LAT_RATE}" --warmup-records "${LAT_WARMUP}" >"${OUT}/rf3-rate.txt"
	stat1="$(head -1 /proc/stat)"
	wait "${probe}"
	lat="$(grep '99th' "${OUT}/rf3-rate.txt" | tail -1)"
	lat_all="$(grep ' records sent.*99th' "${OUT}/rf3-rate.txt" | grep -v 'steady state' | tail -1)"
	stalls="$(head -1 "${OUT}/stallprobe.txt")"
	# The machine's busy share of its cores over the run (/proc/stat:
	# user, nice, system, irq, softirq, steal against those and idle, iowait).
	busy="$(echo "${stat0} ${stat1}" | awk '{ b0 = $2 + $3 + $4 + $7 + $8 + $9; t0 = b0 + $5 + $6;
		b1 = $13 + $14 + $15 + $18 + $19 + $20; t1 = b1 + $16 + $17; printf "%.0f %%", 100 * (b1 - b0) / (t1 - t0) }')"
fi

floors=()
if [[ "${FLOOR}" == 1 ]]; then
	for how in sendfile pread; do
		echo "-- replfloor, followers read by ${how}; $(uptime)"
		"${OUT}/replfloor" --dir "${OUT}/floor" --rounds "${ROUNDS}" --duration "${FLOOR_DURATION}" \
			--record-size "${SIZE}" --follower-read "${how}" | tee "${OUT}/replfloor-${how}.txt"
		floors+=("$(tail -1 "${OUT}/replfloor-${how}.txt")")
	done
fi

{
	echo
	echo "| 3 hosts, 3 partitions, ${SIZE} B, acks=all | records/s (median of ${ROUNDS}) | hosts' CPU per record (all three) |"
	echo "|---|---|---|"
	echo "| replication factor 1 | ${m1} | ${u1} µs |"
	echo "| replication factor 3, min.insync.replicas 2 | ${m3} | ${u3} µs |"
	echo
	awk -v a="${m3}" -v b="${m1}" 'BEGIN { printf "ratio RF=3 / RF=1: %.2f (goal >= 0.50)\n", a / b }'
	awk -v a="${u3}" -v b="${u1}" 'BEGIN { printf "hosts CPU per record RF=3 / RF=1: %.2f (on shared cores, busy, the ratio above tends to its inverse, %.2f)\n", a / b, b / a }'
	if [[ -n "${lat}" ]]; then
		echo "RF=3 at ${LAT_RATE} records/s, after ${LAT_WARMUP} records of warm-up: ${lat} (goal: p99 <= 10 ms)"
		echo "the whole run, warm-up included: ${lat_all}"
		echo "meanwhile the machine's $(nproc) cores were ${busy} busy (three hosts, the client, the probe), and ${stalls}"
	fi
	for f in "${floors[@]}"; do
		echo "bare replication on this machine (cmd/replfloor), ${f}"
	done
} | tee "${OUT}/summary.md"
echo "== done; results in ${OUT}"
