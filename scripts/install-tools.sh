#!/usr/bin/env bash
# install-tools.sh: installs the external tools the tests drive, when they
# are missing, from Debian packages (apt-get; run as root or with sudo):
#   - kcat (librdkafka's command-line client), which the Kafka listener's
#     tests run against real hosts;
#   - gcc, which cgo needs to link confluent-kafka-go's bundled librdkafka
#     2.11 into the Kafka compatibility tests (cmd/actorlog);
#   - chromium, which the web console's browser test (cmd/actorlog
#     TestConsoleBrowser, through chromedp) drives headless (on a Debian
#     12 VM: 61 s with apt-get update, 229 packages, 140 MB; its
#     Recommends, 204 of those packages but 16 MB, are installed too: a
#     headless run needs none of them, but only this way was tried on a
#     clean machine).
# scripts/test.sh calls it; tests that need a tool still skip when it is
# absent, so a machine without apt-get runs everything else (except the
# browser test, which fails instead of skipping when CI=true).
set -euo pipefail

# install_deb TOOL PKG [APT-GET-OPTION...]: installs Debian package PKG
# unless TOOL is on PATH.
install_deb() {
	local tool="$1" pkg="$2"
	shift 2
	command -v "${tool}" >/dev/null 2>&1 && return 0
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "install-tools: ${tool} not found and apt-get is unavailable; its tests will skip" >&2
		return 0
	fi
	echo "install-tools: installing ${tool} (Debian package ${pkg})" >&2
	local sudo=()
	if [[ "$(id -u)" -ne 0 ]]; then sudo=(sudo); fi
	"${sudo[@]}" apt-get update -qq || { echo "install-tools: apt-get update failed" >&2; return 1; }
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "$@" "${pkg}" >/dev/null ||
		{ echo "install-tools: apt-get install ${pkg} failed" >&2; return 1; }
}

install_deb kcat kcat
install_deb gcc gcc
install_deb chromium chromium
