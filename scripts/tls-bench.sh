#!/usr/bin/env bash
# tls-bench.sh: what TLS costs (issue 16). Two hosts run side by side on
# this machine, one plain and one with TLS (`--remote-tls` and a TLS Kafka
# listener, certificates from `actorlog certs init`), and the same
# workloads run against each, alternating within every round:
#
#   actor remote: `actorlog perf produce` N records of SIZE bytes into a
#                 fresh 3-partition topic (defaults: 1 MiB batches,
#                 acks=all), then `actorlog perf consume` of them; the
#                 TLS runs with a client certificate
#   Kafka:        cmd/kafkabench (franz-go with its defaults) against each
#                 host's Kafka listener, the TLS one over TLS
#
# It prints every run, the medians and TLS/plain ratios. Environment: N
# (records per run, default 500000), SIZES (default 100,1024), ROUNDS
# (default 3), OUT (default /tmp/actorlog-tls-bench), BASE_PORT.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="${PATH}:/usr/local/go/bin"

N="${N:-500000}"
SIZES="${SIZES:-100,1024}"
ROUNDS="${ROUNDS:-3}"
OUT="${OUT:-/tmp/actorlog-tls-bench}"
BP="${BASE_PORT:-19840}"

rm -rf "${OUT}"
mkdir -p "${OUT}"
bin="${OUT}/actorlog"
kb="${OUT}/kafkabench"
echo "== build"
go build -o "${bin}" ./cmd/actorlog
go build -o "${kb}" ./cmd/kafkabench

# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh

certs="${OUT}/certs"
"${bin}" certs init --dir "${certs}" --hosts tls-host --clients bench >/dev/null

plain_listen="127.0.0.1:${BP}" plain_kafka="127.0.0.1:$((BP + 5))"
tls_listen="127.0.0.1:$((BP + 10))" tls_kafka="127.0.0.1:$((BP + 15))"
"${bin}" --log-level warn host --name plain-host --data-dir "${OUT}/plain.data" --listen "${plain_listen}" \
	--http "127.0.0.1:$((BP + 3))" --kafka-listen "${plain_kafka}" >"${OUT}/plain.log" 2>&1 &
plain_pid="$!"
"${bin}" --log-level warn host --name tls-host --data-dir "${OUT}/tls.data" --listen "${tls_listen}" \
	--http "127.0.0.1:$((BP + 13))" --kafka-listen "${tls_kafka}" --remote-tls \
	--tls-cert "${certs}/tls-host.crt" --tls-key "${certs}/tls-host.key" --tls-ca "${certs}/ca.crt" >"${OUT}/tls.log" 2>&1 &
tls_pid="$!"
stop_both() {
	kill -TERM "${plain_pid}" "${tls_pid}" 2>/dev/null || true
	wait "${plain_pid}" "${tls_pid}" 2>/dev/null || true
}
trap stop_both EXIT
wait_healthy "127.0.0.1:$((BP + 3))" "${OUT}/plain.log" "${plain_pid}"
wait_healthy "127.0.0.1:$((BP + 13))" "${OUT}/tls.log" "${tls_pid}"

machine_info "${OUT}" internal/tlsconf actors/client kafka

client_tls=(--tls-cert "${certs}/bench.crt" --tls-key "${certs}/bench.key" --tls-ca "${certs}/ca.crt")
al() { # TARGET ARGS...: the CLI against the plain or the TLS host
	local target="$1"
	shift
	if [[ "${target}" == tls ]]; then
		"${bin}" --bootstrap "${tls_listen}" "${client_tls[@]}" "$@"
	else
		"${bin}" --bootstrap "${plain_listen}" "$@"
	fi
}

results="${OUT}/results.txt"
: >"${results}"
record() { # WORKLOAD TARGET ROUND VALUE
	echo "$1 $2 $3 $4" >>"${results}"
	printf '%-22s %-6s round %d: %s\n' "$1" "$2" "$3" "$4"
}

seq_topic=0
run() { # TARGET SIZE ROUND
	local target="$1" size="$2" r="$3" topic f
	seq_topic=$((seq_topic + 1))
	topic="tls-bench-${seq_topic}"
	f="${OUT}/${target}-${size}-${r}"
	al "${target}" topics create "${topic}" --partitions 3 >/dev/null
	al "${target}" perf produce --topic "${topic}" --num-records "${N}" --record-size "${size}" >"${f}.produce.txt"
	record "remote-produce-${size}B" "${target}" "${r}" "$(grep '99th' "${f}.produce.txt" | tail -1 | awk '{ gsub(/[(),]/, ""); print $4 }')"
	al "${target}" perf consume --topic "${topic}" --messages "${N}" >"${f}.consume.txt"
	record "remote-consume-${size}B" "${target}" "${r}" "$(tail -1 "${f}.consume.txt" | awk -F', ' '{ printf "%.1f", $6 }')"
	al "${target}" topics delete "${topic}" >/dev/null
}

echo "== actor remote (N=${N} SIZES=${SIZES} ROUNDS=${ROUNDS})"
for size in ${SIZES//,/ }; do
	for r in $(seq 1 "${ROUNDS}"); do
		if ((r % 2)); then order=(plain tls); else order=(tls plain); fi
		for target in "${order[@]}"; do
			run "${target}" "${size}" "${r}"
		done
	done
done

echo "== Kafka listener (kafkabench, franz-go defaults)"
"${kb}" --target "plain=${plain_kafka}" --target "tls=${tls_kafka}" --tls-target tls --tls-ca "${certs}/ca.crt" \
	--n "${N}" --sizes "${SIZES}" --rounds "${ROUNDS}" --rate 0 | tee "${OUT}/kafkabench.txt"

echo "== medians (records/s) and TLS/plain"
awk '
	{ v[$1 " " $2] = v[$1 " " $2] " " $4; w[$1] = 1 }
	function median(s,   a, n, i, j, t) {
		n = split(s, a, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	END {
		for (k in w) {
			p = median(v[k " plain"]); t = median(v[k " tls"])
			printf "%-24s plain %12.0f  tls %12.0f  tls/plain %.2f\n", k, p, t, (p > 0 ? t / p : 0)
		}
	}' "${results}" | sort | tee "${OUT}/summary.txt"
