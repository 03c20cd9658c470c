#!/usr/bin/env bash
# test.sh: the project's test command (README's "run the tests").
# Runs every package's tests with the race detector. Extra arguments go to
# `go test`, e.g. scripts/test.sh -run TestSIGKILL ./storage/
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [[ $# -eq 0 ]]; then
	set -- ./...
fi
exec go test -race -count=1 -timeout 20m "$@"
