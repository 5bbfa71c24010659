#!/usr/bin/env bash
# The server tests: `typeset serve` (the release build) driven by the real `openai` client
# under pytest, from the venv Fixtures/fetch.sh makes (server-tests), and two servers behind
# nginx when nginx is installed (TYPESET_REQUIRE_NGINX=1 makes its absence a failure).
#
#   bash Tests/Server/run.sh [pytest arguments…]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
CACHE="${TYPESET_CACHE:-$HOME/.cache/typeset}"
python="$CACHE/server-tests/bin/python"
[[ -x "$python" ]] || python="$(TYPESET_CACHE="$CACHE" bash ../../Fixtures/fetch.sh server-tests >/dev/null && echo "$CACHE/server-tests/bin/python")"
export TYPESET_CACHE="$CACHE"
exec "$python" -m pytest -q -p no:cacheprovider "$@" .
