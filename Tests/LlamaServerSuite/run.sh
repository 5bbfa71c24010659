#!/usr/bin/env bash
# llama.cpp's own server test suite (tools/server/tests of the llama.cpp that
# llama-cpp-python==0.3.36 vendors; Fixtures/fetch.sh llama-suite fetches it) run against
# `typeset serve` through the `llama-server` wrapper beside this script, on SmolLM2-135M (the
# suite's own models are on Hugging Face). The files about chat, completion, tokenize, basic
# use, security, streaming, metrics, templates, tool calls, the Responses and Anthropic
# compatibility, and embeddings, without the tests the suite marks slow (as llama.cpp's CI runs them).
#
# A test that fails for a reason that is not Typeset's is listed in expected-failures.txt with
# the reason (and must keep failing: a listed test that passes fails the run).
#
#   bash Tests/LlamaServerSuite/run.sh [pytest arguments…]
#   SUITE_SERVER=llama LLAMA_SERVER=…/llama-server bash Tests/LlamaServerSuite/run.sh   (the reference run,
#       llama-server itself on the same model, no list: which tests it passes)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
CACHE="${TYPESET_CACHE:-$HOME/.cache/typeset}"
suite="$CACHE/llama-server-suite"
tests="$suite/llama_cpp_python-0.3.36/vendor/llama.cpp/tools/server/tests"
[[ -f "$tests/utils.py" && -x "$suite/venv/bin/python" ]] || TYPESET_CACHE="$CACHE" bash "$root/Fixtures/fetch.sh" llama-suite >/dev/null
export SUITE_SERVER="${SUITE_SERVER:-typeset}"
export SUITE_MODEL="${SUITE_MODEL:-$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
export TYPESET_BINARY="${TYPESET_BINARY:-$root/.build/release/typeset}"
export LLAMA_SERVER_BIN_PATH="$here/llama-server"
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
files=(test_basic test_chat_completion test_completion test_tokenize test_security test_stream test_metrics test_template
       test_tool_call test_compat_oai_responses test_compat_anthropic test_embedding)
list=()
[[ "$SUITE_SERVER" == typeset ]] && list=(--expected-failures "$here/expected-failures.txt")
cd "$tests"
exec "$suite/venv/bin/python" -m pytest -q -p no:cacheprovider -p typeset_suite -m "not slow" "${list[@]}" \
  $(printf "unit/%s.py " "${files[@]}") "${@}"
