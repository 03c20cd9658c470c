#!/usr/bin/env bash
# loopback-cluster.sh: run a 3-host actorlog cluster on this machine's
# loopback interface, without Docker. Each host is an etcd voter.
#
#   deploy/loopback-cluster.sh start [DATA_ROOT]   # default ./data/loopback
#   deploy/loopback-cluster.sh stop
#
# Clients bootstrap from any host:
#   actorlog --bootstrap 127.0.0.1:9100,127.0.0.1:9200,127.0.0.1:9300 cluster describe
# Kafka clients too (each host's Kafka listener is on port 9<i>92):
#   kcat -b 127.0.0.1:9192,127.0.0.1:9292,127.0.0.1:9392 -L
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cmd="${1:-start}"
root="${2:-./data/loopback}"
bin="./bin/actorlog"
ic="host1=http://127.0.0.1:9101,host2=http://127.0.0.1:9201,host3=http://127.0.0.1:9301"

case "${cmd}" in
start)
	go build -o "${bin}" ./cmd/actorlog
	mkdir -p "${root}"
	for i in 1 2 3; do
		"${bin}" host --name "host${i}" --data-dir "${root}/host-${i}" \
			--listen "127.0.0.1:9${i}00" --http "127.0.0.1:9${i}80" \
			--kafka-listen "127.0.0.1:9${i}92" \
			--etcd-peer "127.0.0.1:9${i}01" --etcd-client "127.0.0.1:9${i}02" \
			--initial-cluster "${ic}" >"${root}/host-${i}.log" 2>&1 &
		echo "$!" >"${root}/host-${i}.pid"
	done
	for i in 1 2 3; do
		for _ in $(seq 1 100); do
			curl -sf "http://127.0.0.1:9${i}80/healthz" >/dev/null && break
			sleep 0.2
		done
	done
	"${bin}" --bootstrap 127.0.0.1:9100 cluster describe
	;;
stop)
	for i in 1 2 3; do
		if [[ -f "${root}/host-${i}.pid" ]]; then
			kill -TERM "$(cat "${root}/host-${i}.pid")" 2>/dev/null || true
			rm -f "${root}/host-${i}.pid"
		fi
	done
	;;
*)
	echo "usage: $0 start|stop [DATA_ROOT]" >&2
	exit 2
	;;
esac
