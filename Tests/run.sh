#!/usr/bin/env bash
# Typeset's tests, as the README runs them: the Swift suites (release build: numeric Swift is
# 10–100× slower in debug), then the server tests (`typeset serve` driven by the real `openai`
# and `anthropic` clients, Tests/Server/run.sh), then llama.cpp's own server test suite against
# `typeset serve` (Tests/LlamaServerSuite/run.sh), then the count of what `import Typeset` exposes, which must
# stay at most 512 declarations (Benchmarks/public_surface.py; by the same count it was 1,246
# before the compatibility layers became modules of their own, docs/architecture.md).
#
#   bash Tests/run.sh [swift test arguments, e.g. --filter ConversationTests]
#
# The build is `swift build --build-tests -Xswiftc -enable-testing` rather than `swift test`'s
# own: the same modules, with flags a consumer package can repeat, so CI builds
# Examples/GenerableTour into this build directory reusing every module (swift-syntax and the
# macro plugin included) instead of building them again.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
swift build -c release --build-tests -Xswiftc -enable-testing
swift test -c release --skip-build "$@"
if [[ $# -eq 0 ]]; then
  bash Tests/Server/run.sh
  bash Tests/LlamaServerSuite/run.sh
  python3 Benchmarks/public_surface.py --max 512
fi
