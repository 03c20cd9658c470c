#!/usr/bin/env bash
# test.sh: the project's test command (README's "run the tests").
# Runs every package's tests with the race detector. Extra arguments go to
# `go test`, e.g. scripts/test.sh -run TestSIGKILL ./storage/
#
# With no arguments the packages that run real multi-host clusters
# (cmd/actorlog: host processes on loopback; deploy: the Docker compose
# cluster) each run alone, after the rest: on a 2-core machine two etcd
# clusters plus the other packages' tests starve the etcd members enough
# to make leases lapse, which tests failure handling, not the code.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/install-tools.sh
if [[ $# -gt 0 ]]; then
	exec go test -race -count=1 -timeout 20m "$@"
fi
mapfile -t rest < <(go list ./... | grep -v -e '/cmd/actorlog$' -e '/deploy$')
# A package that failed only by protoactor's Remote.Start race (see
# scripts/known-race.awk: a write inside protoactor to grpc's global logger,
# which several remotes in one test process can hit) runs once more; any
# other failure, or that race again, fails.
log="$(mktemp)"
trap 'rm -f "${log}"' EXIT
rc=0
go test -race -count=1 -timeout 20m "${rest[@]}" 2>&1 | tee "${log}" || rc=$?
if [[ ${rc} -ne 0 ]]; then
	mapfile -t failed < <(awk -F '\t' '/^FAIL\t/ { print $2 }' "${log}" | sort -u)
	mapfile -t known < <(awk -f scripts/known-race.awk "${log}" | sort -u)
	if [[ ${#failed[@]} -eq 0 || "${failed[*]}" != "${known[*]}" ]]; then
		exit "${rc}"
	fi
	echo "== failed only by protoactor's Remote.Start race (grpclog.SetLoggerV2), once more: ${failed[*]}" >&2
	go test -race -count=1 -timeout 20m "${failed[@]}"
fi
# The end-to-end test binary itself runs without -race: its in-process
# clients each start a protoactor remote, and protoactor's Remote.Start
# swaps grpc's global logger while other connections' goroutines read it
# (a race inside the libraries). The host processes it starts are still
# race-built; the client library's own tests run with -race above.
ACTORLOG_E2E_RACE_HOSTS=1 go test -count=1 -timeout 30m ./cmd/actorlog
go test -race -count=1 -timeout 20m ./deploy
# A host on a slow disk (100 write IOPS, through a cgroup) creates 1,000
# partitions and must keep its lease: until 2026-12-06 such a create fenced
# the host over and over. Needs root and a cgroup I/O controller; where
# either is missing (exit 2) it is skipped, and says so.
slow=0
scripts/slow-disk.sh || slow=$?
if [[ ${slow} -eq 2 ]]; then
	echo "== slow-disk check skipped: needs root and a cgroup I/O controller" >&2
elif [[ ${slow} -ne 0 ]]; then
	exit "${slow}"
fi
