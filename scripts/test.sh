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
if [[ $# -gt 0 ]]; then
	exec go test -race -count=1 -timeout 20m "$@"
fi
mapfile -t rest < <(go list ./... | grep -v -e '/cmd/actorlog$' -e '/deploy$')
go test -race -count=1 -timeout 20m "${rest[@]}"
go test -race -count=1 -timeout 20m ./cmd/actorlog
go test -race -count=1 -timeout 20m ./deploy
