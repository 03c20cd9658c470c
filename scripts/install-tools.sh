#!/usr/bin/env bash
# install-tools.sh: installs the external tools the tests drive, when they
# are missing, from Debian packages (apt-get; run as root or with sudo):
#   - kcat (librdkafka's command-line client), which the Kafka listener's
#     tests run against real hosts;
#   - gcc, which cgo needs to link confluent-kafka-go's bundled librdkafka
#     2.11 into the Kafka compatibility tests (cmd/actorlog).
# scripts/test.sh calls it; tests that need a tool still skip when it is
# absent, so a machine without apt-get runs everything else.
set -euo pipefail

install_deb() {
	local tool="$1" pkg="$2"
	command -v "${tool}" >/dev/null 2>&1 && return 0
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "install-tools: ${tool} not found and apt-get is unavailable; its tests will skip" >&2
		return 0
	fi
	echo "install-tools: installing ${tool} (Debian package ${pkg})" >&2
	local sudo=()
	if [[ "$(id -u)" -ne 0 ]]; then sudo=(sudo); fi
	"${sudo[@]}" apt-get update -qq || { echo "install-tools: apt-get update failed" >&2; return 1; }
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${pkg}" >/dev/null ||
		{ echo "install-tools: apt-get install ${pkg} failed" >&2; return 1; }
}

install_deb kcat kcat
install_deb gcc gcc
