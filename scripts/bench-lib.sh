# shellcheck shell=bash
# bench-lib.sh: what the benchmark scripts (bench.sh, cleaner-bench.sh,
# kafka-bench.sh) share. Sourced, not run.

# machine_info OUT [GIT-PATHS...]: what the numbers were measured on (time,
# load, cores, Go, commit, and local changes under GIT-PATHS), to stdout
# and OUT/machine.txt.
machine_info() {
	local out="$1"
	shift
	{
		echo "== machine"
		date -u
		uptime
		nproc
		go version
		git rev-parse HEAD 2>/dev/null || true
		if [[ $# -gt 0 ]]; then
			git status --short -- "$@" 2>/dev/null | head -20 || true
		fi
	} | tee "${out}/machine.txt"
}

# wait_healthy HTTP-ADDR LOG [PID]: waits (up to 60 s) for the host's
# /healthz, giving up early when PID (if given) has exited; on failure it
# prints the end of LOG and exits the script.
wait_healthy() {
	for _ in $(seq 1 300); do
		if curl -sf "http://$1/healthz" >/dev/null; then
			return 0
		fi
		if [[ -n "${3:-}" ]] && ! kill -0 "$3" 2>/dev/null; then
			break
		fi
		sleep 0.2
	done
	echo "host at $1 not healthy; log $2:" >&2
	tail -30 "$2" >&2
	exit 1
}

# host_pid and stop_host: a script's one host at a time (started by the
# script, which sets host_pid); stop_host stops it (SIGTERM) and waits.
host_pid=""
stop_host() {
	if [[ -n "${host_pid}" ]]; then
		kill -TERM "${host_pid}" 2>/dev/null || true
		wait "${host_pid}" 2>/dev/null || true
		host_pid=""
	fi
}

# perf produce's summary: "N records sent, R records/sec (M MB/sec), A ms
# avg latency, X ms max latency, P ms 50th, P ms 95th, P ms 99th, P ms
# 99.9th." -> "R P99". After a warm-up (--warmup-records) the last line is
# the steady state's ("N steady state records sent, ..."), which it reads.
perf_summary() { # FILE
	grep '99th' "$1" | tail -1 | sed 's/ steady state records/ records/' | awk '{ gsub(/[(),]/, ""); print $4, $22 }'
}

# pids and stop_pids: a script's several background processes (hosts);
# stop_pids stops them all (SIGTERM) and waits for them.
pids=()
stop_pids() {
	for p in "${pids[@]}"; do
		kill -TERM "${p}" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "${p}" 2>/dev/null || true
	done
	pids=()
}

# data_dirs and drop_data: the hosts' data directories a script made,
# removed at its end (several GiB after a run at 1 KiB; KEEP_DATA=1 keeps
# them). The logs and results beside them stay.
data_dirs=()
drop_data() {
	if [[ "${KEEP_DATA:-0}" == 1 ]]; then
		return
	fi
	local d
	for d in "${data_dirs[@]}"; do
		rm -rf "${d}"
	done
}

# median_values: the median of the numbers on stdin, one per line (0 when
# there are none).
median_values() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
