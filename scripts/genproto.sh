#!/usr/bin/env bash
# genproto.sh regenerates messages/*.pb.go from messages/*.proto.
#
# It installs what it needs when missing:
#   - protoc from Debian's protobuf-compiler package (apt-get; run as root);
#   - protoc-gen-go from the Go module proxy, at the version of
#     google.golang.org/protobuf required in go.mod, into the repo-local bin/
#     (gitignored), so the pinned plugin is always the one used.
#
# Output must be byte-for-byte reproducible, because CI regenerates and fails
# on any diff (scripts/verify-genproto.sh). protoc-gen-go writes protoc's
# version into every generated header and has no option to leave it out, so
# the protoc version is pinned too: the script stops with a clear error when
# the protoc on PATH is not PROTOC_VERSION (Debian bookworm's package).
#
# Usage: scripts/genproto.sh   (from anywhere; it works from the repo root)
set -euo pipefail

# The protoc release generated files are made with (Debian 12 protobuf-compiler).
readonly PROTOC_VERSION="3.21.12"

die() {
	echo "genproto: $*" >&2
	exit 1
}

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

# --- protoc ---------------------------------------------------------------
if ! command -v protoc >/dev/null 2>&1; then
	command -v apt-get >/dev/null 2>&1 ||
		die "protoc not found and apt-get is unavailable; install protoc ${PROTOC_VERSION}"
	echo "genproto: installing protoc (Debian package protobuf-compiler)" >&2
	if [[ "$(id -u)" -eq 0 ]]; then SUDO=(); else SUDO=(sudo); fi
	"${SUDO[@]}" apt-get update -qq ||
		die "apt-get update failed"
	DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq protobuf-compiler >/dev/null ||
		die "apt-get install protobuf-compiler failed"
fi
have_protoc="$(protoc --version | awk '{print $2}')"
if [[ "${have_protoc}" != "${PROTOC_VERSION}" ]]; then
	die "protoc ${have_protoc} found at $(command -v protoc), but generated code is pinned to protoc ${PROTOC_VERSION}
(protoc-gen-go records the protoc version in every generated header, so another version makes CI's diff check fail).
Install protoc ${PROTOC_VERSION} (Debian 12: apt-get install protobuf-compiler) and put it first on PATH."
fi

# --- protoc-gen-go --------------------------------------------------------
PB_VERSION="$(go list -m -f '{{.Version}}' google.golang.org/protobuf)" ||
	die "cannot read the google.golang.org/protobuf version from go.mod"
[[ -n "${PB_VERSION}" ]] || die "google.golang.org/protobuf is not required in go.mod"

BIN="${ROOT}/bin"
PROTOC_GEN_GO="${BIN}/protoc-gen-go"
have_gen=""
if [[ -x "${PROTOC_GEN_GO}" ]]; then
	have_gen="$("${PROTOC_GEN_GO}" --version 2>/dev/null | awk '{print $2}')" || have_gen=""
fi
if [[ "${have_gen}" != "${PB_VERSION}" ]]; then
	echo "genproto: installing protoc-gen-go ${PB_VERSION} into bin/" >&2
	mkdir -p "${BIN}"
	GOBIN="${BIN}" go install "google.golang.org/protobuf/cmd/protoc-gen-go@${PB_VERSION}" ||
		die "go install protoc-gen-go@${PB_VERSION} failed"
	have_gen="$("${PROTOC_GEN_GO}" --version | awk '{print $2}')"
	[[ "${have_gen}" == "${PB_VERSION}" ]] ||
		die "installed protoc-gen-go reports ${have_gen}, want ${PB_VERSION}"
fi

# --- generate -------------------------------------------------------------
shopt -s nullglob
protos=(messages/*.proto)
shopt -u nullglob
((${#protos[@]} > 0)) || die "no .proto files in messages/"

# Remove stale output first, so a deleted .proto also deletes its .pb.go.
rm -f messages/*.pb.go

# Sorted input and relative paths keep the output independent of the caller's
# locale and working directory.
mapfile -t protos < <(printf '%s\n' "${protos[@]}" | LC_ALL=C sort)
protoc \
	--plugin=protoc-gen-go="${PROTOC_GEN_GO}" \
	--proto_path=. \
	--go_out=. \
	--go_opt=paths=source_relative \
	"${protos[@]}" ||
	die "protoc failed"

echo "genproto: generated $(printf '%s ' messages/*.pb.go)with protoc ${PROTOC_VERSION}, protoc-gen-go ${PB_VERSION}" >&2
