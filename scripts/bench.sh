#!/usr/bin/env bash
# The performance benchmark: context-compactor beside gpt-tokenizer, tiktoken, js-tiktoken and
# LangChain trimMessages (bench/tokenizers, results in bench/tokenizers/out/results.md), then the
# native core figures (cargo bench). Options go to bench.mjs: `npm run bench -- --quick`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
(cd bench/tokenizers && npm ci --no-audit --no-fund --silent)
node bench/tokenizers/bench.mjs "$@"
echo
echo "== native core (cargo bench --bench core) =="
cargo bench -q --bench core
