#!/usr/bin/env bash
# verify-genproto.sh checks that the committed messages/*.pb.go are exactly
# what scripts/genproto.sh generates from messages/*.proto (as etcd's
# scripts/verify_genproto.sh does). It regenerates in place and fails, printing
# the diff, when messages/ then differs from what git has.
#
# Run it on a clean messages/: uncommitted edits there count as a difference.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

"${ROOT}/scripts/genproto.sh"

if [[ -n "$(git status --porcelain -- messages/)" ]]; then
	{
		echo "verify-genproto: generated code in messages/ is out of date."
		echo "Run scripts/genproto.sh and commit the result. Changes:"
		git status --porcelain -- messages/
		git --no-pager diff -- messages/
		# Untracked files (e.g. a new .pb.go) do not show in git diff.
		git ls-files --others --exclude-standard -- messages/ |
			while IFS= read -r f; do git --no-pager diff --no-index -- /dev/null "$f" || true; done
	} >&2
	exit 1
fi
echo "verify-genproto: messages/ is up to date" >&2
