#!/usr/bin/env bash
# kafka-bench.sh: the Kafka-listener benchmark of issue 13, end to end and
# reproducible on one machine. It builds actorlog and cmd/kafkabench, starts
#   - one actorlog host (RF=1, --pprof on its HTTP port),
#   - a 3-host actorlog cluster (every host an etcd voter; topics RF=3),
# and runs kafkabench against them and its own in-process disk-mode kfake,
# the targets measured alternately, ratios to kfake. Then it times kcat
# (`kcat -P` of KCAT_N seq lines, `kcat -C -e` reading them back) against
# the 1-host actorlog and a disk-mode kfake (`kafkabench --serve-kfake`),
# and with PROFILE=1 takes CPU profiles of the hosts under load
# (`go tool pprof -top`). Everything is written under OUT.
#
#   scripts/kafka-bench.sh                      # full run
#   N=200000 ROUNDS=1 scripts/kafka-bench.sh    # quicker
#
# Settings (environment): KEEP_DATA (0: the hosts' data directories are
# removed at the end; 1 keeps them), OUT (/tmp/kafka-bench), N (1000000 records per
# throughput run), SIZES (100,1024), ROUNDS (2), RATE (50000), DURATION
# (10s), KCAT_N (1000000), KCAT_ROUNDS (2), BENCH (1), KCAT (1), PROFILE
# (1), IDLE_SECONDS (5), THREE (1: also
# the 3-host cluster), BASE_PORT (19700; the script uses BASE_PORT..+140),
# EXTRA (more kafkabench flags).
#
# Only the processes it started are stopped (by pid) on exit. The numbers
# mean something only on an otherwise idle machine: check `uptime` first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

OUT="${OUT:-/tmp/kafka-bench}"
N="${N:-1000000}"
SIZES="${SIZES:-100,1024}"
ROUNDS="${ROUNDS:-2}"
RATE="${RATE:-50000}"
DURATION="${DURATION:-10s}"
KCAT_N="${KCAT_N:-1000000}"
KCAT_ROUNDS="${KCAT_ROUNDS:-2}"
PROFILE="${PROFILE:-1}"
THREE="${THREE:-1}"
BP="${BASE_PORT:-19700}"
EXTRA="${EXTRA:-}"

rm -rf "${OUT}"
mkdir -p "${OUT}"
bin="${OUT}/actorlog"
kb="${OUT}/kafkabench"
echo "== build"
go build -o "${bin}" ./cmd/actorlog
go build -o "${kb}" ./cmd/kafkabench

# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
trap 'stop_pids; drop_data' EXIT
data_dirs+=("${OUT}/one" "${OUT}/three-1" "${OUT}/three-2" "${OUT}/three-3")

# The 1-host target: listen BP, etcd BP+1/+2, HTTP BP+3, Kafka BP+4.
one_http="127.0.0.1:$((BP + 3))"
one_kafka="127.0.0.1:$((BP + 4))"
"${bin}" --log-level warn host --data-dir "${OUT}/one" --listen "127.0.0.1:${BP}" \
	--http "${one_http}" --kafka-listen "${one_kafka}" --pprof >"${OUT}/one.log" 2>&1 &
pids+=("$!")
one_pid="$!"

# The 3-host target: host i listens on BP+100+10i, etcd +1/+2, HTTP +3, Kafka +4.
three_kafka=""
three_http=()
three_pids=""
if [[ "${THREE}" == 1 ]]; then
	ic=""
	for i in 1 2 3; do
		ic+="${ic:+,}host${i}=http://127.0.0.1:$((BP + 100 + 10 * i + 1))"
	done
	for i in 1 2 3; do
		b=$((BP + 100 + 10 * i))
		"${bin}" --log-level warn host --name "host${i}" --data-dir "${OUT}/three-${i}" \
			--listen "127.0.0.1:${b}" --etcd-peer "127.0.0.1:$((b + 1))" --etcd-client "127.0.0.1:$((b + 2))" \
			--http "127.0.0.1:$((b + 3))" --kafka-listen "127.0.0.1:$((b + 4))" --pprof \
			--initial-cluster "${ic}" >"${OUT}/three-${i}.log" 2>&1 &
		pids+=("$!")
		three_pids+="${three_pids:+,}$!"
		three_http+=("127.0.0.1:$((b + 3))")
		three_kafka+="${three_kafka:+,}127.0.0.1:$((b + 4))"
	done
fi
wait_healthy "${one_http}" "${OUT}/one.log"
for i in "${!three_http[@]}"; do
	wait_healthy "${three_http[$i]}" "${OUT}/three-$((i + 1)).log"
done

# --pid: kafkabench also reports the hosts' CPU time per record.
targets=(--target "actorlog=${one_kafka}" --pid "actorlog=${one_pid}")
if [[ "${THREE}" == 1 ]]; then
	targets+=(--target "actorlog-3/3=${three_kafka}" --pid "actorlog-3=${three_pids}")
fi

machine_info "${OUT}" kafka host cmd

# The hosts' idle CPU (etcd, leases, timers) is part of every "host CPU"
# figure: measure it over IDLE_SECONDS (5) before any load.
ticks() { # PID,PID... -> user+system clock ticks
	local t=0 p
	for p in ${1//,/ }; do
		t=$((t + $(awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/${p}/stat")))
	done
	echo "${t}"
}
idle_s="${IDLE_SECONDS:-5}"
one_t0="$(ticks "${one_pid}")"
three_t0="$(ticks "${three_pids}")"
sleep "${idle_s}"
echo "idle host CPU (ms per second): actorlog $((($(ticks "${one_pid}") - one_t0) * 10 / idle_s))," \
	"actorlog-3 (3 hosts) $((($(ticks "${three_pids}") - three_t0) * 10 / idle_s))" | tee -a "${OUT}/machine.txt"

if [[ "${BENCH:-1}" == 1 ]]; then
	echo "== kafkabench (N=${N} SIZES=${SIZES} ROUNDS=${ROUNDS} RATE=${RATE} DURATION=${DURATION})"
	# shellcheck disable=SC2086 # EXTRA is split on purpose
	"${kb}" --kfake "${targets[@]}" --n "${N}" --sizes "${SIZES}" --rounds "${ROUNDS}" \
		--rate "${RATE}" --duration "${DURATION}" --json "${OUT}/results.json" ${EXTRA} | tee "${OUT}/bench.txt"
fi

if [[ "${KCAT:-1}" == 1 ]]; then
	echo "== kcat (KCAT_N=${KCAT_N}, ${KCAT_ROUNDS} rounds)"
	"${kb}" --serve-kfake "${OUT}/kfake.addr" --kfake-dir "${OUT}/kcat-kfake" &
	pids+=("$!")
	for _ in $(seq 1 100); do
		[[ -s "${OUT}/kfake.addr" ]] && break
		sleep 0.1
	done
	kfake_addr="$(cat "${OUT}/kfake.addr")"
	seq 1 "${KCAT_N}" >"${OUT}/lines.txt"
	now() { date +%s.%N; }
	{
		printf '| round | target | kcat -P %s lines (s) | lines/s | kcat -C -e (s) | lines/s |\n' "${KCAT_N}"
		printf '|---|---|---|---|---|---|\n'
	} >"${OUT}/kcat.md"
	for r in $(seq 1 "${KCAT_ROUNDS}"); do
		order=(kfake actorlog)
		if ((r % 2 == 0)); then order=(actorlog kfake); fi
		for name in "${order[@]}"; do
			addr="${kfake_addr}"
			[[ "${name}" == actorlog ]] && addr="${one_kafka}"
			topic="kcat-${r}-${name}-$(date +%s)"
			"${kb}" --target "${name}=${addr}" --create-topic "${topic}" >/dev/null
			t0="$(now)"
			kcat -P -b "${addr}" -t "${topic}" <"${OUT}/lines.txt"
			t1="$(now)"
			got="$(kcat -C -b "${addr}" -t "${topic}" -o beginning -e -q | wc -l)"
			t2="$(now)"
			if [[ "${got}" != "${KCAT_N}" ]]; then
				echo "kcat -C on ${name}: ${got} lines, want ${KCAT_N}" >&2
				exit 1
			fi
			awk -v r="${r}" -v n="${name}" -v c="${KCAT_N}" -v a="${t0}" -v b="${t1}" -v d="${t2}" \
				'BEGIN { printf "| %d | %s | %.2f | %.0f | %.2f | %.0f |\n", r, n, b-a, c/(b-a), d-b, c/(d-b) }' >>"${OUT}/kcat.md"
		done
	done
	cat "${OUT}/kcat.md"
fi

if [[ "${PROFILE}" == 1 ]]; then
	# A CPU profile of a host over one produce+consume run of each size
	# (and, separately, the fixed-rate run) against it alone.
	profile() { # NAME HTTP-ADDR SECONDS KAFKABENCH-ARGS...
		local name="$1" http="$2" secs="$3"
		shift 3
		curl -sf -o "${OUT}/${name}.pprof" "http://${http}/debug/pprof/profile?seconds=${secs}" &
		local c="$!"
		sleep 0.3
		# Keep the host busy for the whole window.
		while kill -0 "${c}" 2>/dev/null; do
			"${kb}" "$@" >>"${OUT}/${name}.bench.txt"
		done
		wait "${c}"
		go tool pprof -top -nodecount=45 "${bin}" "${OUT}/${name}.pprof" >"${OUT}/${name}.top.txt" 2>&1
		go tool pprof -top -cum -nodecount=60 "${bin}" "${OUT}/${name}.pprof" >"${OUT}/${name}.cum.txt" 2>&1
		echo "== profile ${name} (${OUT}/${name}.top.txt, .cum.txt)"
		head -30 "${OUT}/${name}.top.txt"
	}
	for size in ${SIZES//,/ }; do
		profile "one-throughput-${size}" "${one_http}" 20 --target "actorlog=${one_kafka}" --n "${N}" --sizes "${size}" --rounds 1 --rate 0
	done
	profile one-latency "${one_http}" 10 --target "actorlog=${one_kafka}" --rounds 1 --rate "${RATE}" --duration 5s --skip produce --latency-linger 0
	if [[ "${THREE}" == 1 ]]; then
		# host1 of the cluster leads about a third of the partitions.
		profile three-throughput "${three_http[0]}" 20 --target "actorlog-3/3=${three_kafka}" --n "${N}" --sizes 100 --rounds 1 --rate 0
	fi
fi
echo "== done; results in ${OUT} (bench.txt, results.json, kcat.md, *.top.txt)"
kill -0 "${one_pid}" 2>/dev/null || echo "warning: the 1-host actorlog exited during the run" >&2
