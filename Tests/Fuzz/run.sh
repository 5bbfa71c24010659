#!/usr/bin/env bash
# Builds a fuzz target with AddressSanitizer and libFuzzer's coverage instrumentation, then
# fuzzes for a bounded time.
#
#     bash Tests/Fuzz/run.sh [SECONDS] [TARGET]   # default 60 s, FuzzGGUF
#
# Targets: FuzzGGUF, FuzzTokenizer, FuzzSchema (the JSON Schema compiler, structure-aware),
# FuzzTemplate (the chat-template renderer).
#
# FuzzGGUF fuzzes the GGUF reader; its corpus grows in $TYPESET_CACHE/fuzz-corpus (kept between
# runs), seeded from Fixtures/fuzz-seeds (files written by gguf-py's writer). FuzzTokenizer
# fuzzes both real tokenizers (models from $TYPESET_CACHE); its corpus grows in
# $TYPESET_CACHE/fuzz-corpus-tokenizer, seeded from a few tokenizer corpus documents. A crash
# leaves a reproducer `crash-*` in the current directory and exits non-zero; replay it with
#     Tests/Fuzz/.build/release/<TARGET> crash-<hash>
#
# Why not `-sanitize=fuzzer`: that flag links libFuzzer's own `main` whole-archive, which
# collides with the entry point SwiftPM gives every executable. So the target keeps its
# `main` and calls libFuzzer's driver (LLVMFuzzerRunDriver) from libclang_rt.fuzzer_no_main.
set -euo pipefail
seconds="${1:-60}"
target="${2:-FuzzGGUF}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache="${TYPESET_CACHE:-$HOME/.cache/typeset}"

toolchain="$(dirname "$(readlink -f "$(command -v swiftc)")")/.."
runtime="$(ls "$toolchain"/lib/clang/*/lib/linux/libclang_rt.fuzzer_no_main-"$(uname -m)".a 2>/dev/null | head -n 1)"
[[ -f "$runtime" ]] || { echo "error: libFuzzer runtime not found under $toolchain/lib/clang" >&2; exit 1; }

cd "$here"
# The fuzz targets use no macros: build Typeset without them (and without swift-syntax).
export TYPESET_WITHOUT_MACROS=1
swift build -c release \
  -Xswiftc -sanitize=address \
  -Xswiftc -sanitize-coverage=edge,trace-cmp,inline-8bit-counters,pc-table \
  -Xlinker "$runtime" -Xlinker -lstdc++

if [[ "$target" == FuzzSchema ]]; then
  # Seeds: the seed schemas as texts (mutated as JSON) and a few byte strings of choices (the
  # structure-aware generator reads any bytes). Overruns and accepted-but-invalid instances
  # abort with a reproducer like crashes.
  corpus="$cache/fuzz-corpus-schema"
  mkdir -p "$corpus"
  cp "$root"/Fixtures/schemas/*.json "$corpus"/
  "$here/.build/release/FuzzSchema" -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=10 -max_len=2048 \
    -print_final_stats=1 "$corpus"
elif [[ "$target" == FuzzTemplate ]]; then
  # Seeds: the real models' chat templates (the renderer's test fixtures). Leak detection is
  # off: parsing a template leaves a few hundred bytes of expression nodes unreleased (found by
  # this fuzzer; a template is parsed once per model load), which would stop every run at once;
  # -detect_leaks=0 stops libFuzzer's checks during the run, ASAN_OPTIONS the one at exit.
  corpus="$cache/fuzz-corpus-template"
  mkdir -p "$corpus"
  cp "$root"/Tests/ChatTemplatingTests/Fixtures/templates/* "$corpus"/ 2>/dev/null || true
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$here/.build/release/FuzzTemplate" -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=10 -max_len=16384 -detect_leaks=0 \
    -print_final_stats=1 "$corpus"
elif [[ "$target" == FuzzTokenizer ]]; then
  corpus="$cache/fuzz-corpus-tokenizer"
  mkdir -p "$corpus"
  # Seeds: the first 4 KB of a few corpus documents (code, scripts, emoji, binary).
  for document in 03-jquery-js 08-django-po-ar 13-django-po-ja 28-demoji-codes-zwj-flags-json 37-django-ja-mo-binary; do
    [[ -f "$cache/tokenizer-corpus/$document.txt" ]] && head -c 4096 "$cache/tokenizer-corpus/$document.txt" > "$corpus/seed-$document"
  done
  "$here/.build/release/FuzzTokenizer" -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=10 -max_len=4096 \
    -print_final_stats=1 "$corpus"
else
  mkdir -p "$cache/fuzz-corpus"
  "$here/.build/release/FuzzGGUF" -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=10 \
    -print_final_stats=1 "$cache/fuzz-corpus" "$root/Fixtures/fuzz-seeds"
fi
