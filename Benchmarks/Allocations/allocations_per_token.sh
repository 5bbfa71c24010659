#!/usr/bin/env bash
# Heap allocations per decoded token: `typeset bench decode` (one warm-up and one timed run,
# each a prefill and greedy decode steps through TextGenerator's loop) with 8 and with 72
# generated tokens, under a preloaded allocation counter; the difference over the 2 × 64
# extra tokens is what one decode step allocates.
#
#   bash Benchmarks/Allocations/allocations_per_token.sh [MODEL] [TYPESET_BINARY]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
model="${1:-smollm2}"
binary="${2:-$here/../../.build/release/typeset}"
counter="$(mktemp -d)/count_allocations.so"
"$(command -v cc || command -v clang)" -O2 -shared -fPIC -o "$counter" "$here/count_allocations.c"
count() {
  LD_PRELOAD="$counter" "$binary" bench decode --model "$model" --prompt-tokens 16 --gen-tokens "$1" --runs 1 --json 2>&1 >/dev/null \
    | sed -n 's/^allocations: //p'
}
short="$(count 8)"; long="$(count 72)"
echo "allocations: $short with 8 tokens, $long with 72"
awk -v a="$short" -v b="$long" 'BEGIN { printf "per decoded token: %.2f\n", (b - a) / 128 }'
