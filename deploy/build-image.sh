#!/usr/bin/env bash
# build-image.sh: build the actorlog host image (actorlog:dev by default)
# FROM scratch, from a static Go binary.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tag="${1:-actorlog:dev}"
ctx="$(mktemp -d)"
trap 'rm -rf "${ctx}"' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${ctx}/actorlog" ./cmd/actorlog
cp deploy/Dockerfile "${ctx}/Dockerfile"
docker build -q -t "${tag}" "${ctx}"
echo "built ${tag}"
