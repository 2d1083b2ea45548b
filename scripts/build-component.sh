#!/usr/bin/env bash
# Builds the core as one WebAssembly Component (wasm32-wasip2, world `core` of wit/, both
# encodings' ranks embedded) and copies it into the Python package (python/src/context_compactor/
# core.wasm, not committed). Rust 1.95's wasm32-wasip2 target links a Component directly: no
# cargo-component, no wasm-tools. Prints its size beside the npm package's wasm (js/dist, when
# built). Needs the target: `rustup target add wasm32-wasip2` (scripts/setup.sh adds it).
set -euo pipefail
cd "$(dirname "$0")/.."
log() { printf '\033[1m[component]\033[0m %s\n' "$*" >&2; }

out=target/wasm32-wasip2/release/context_compactor.wasm
log "cargo build (wasm32-wasip2, release, features component + embedded-ranks + nfc)"
CARGO_PROFILE_RELEASE_PANIC=abort cargo build -q --release --target wasm32-wasip2 --no-default-features --features component,embedded-ranks,nfc --lib
# A Component starts with the layer-1 preamble 00 61 73 6d 0d 00 01 00 (a core module: 01 00 00 00).
magic=$(head -c 8 "$out" | od -An -tx1 | tr -d ' \n')
[ "$magic" = 0061736d0d000100 ] || { log "$out is not a Component (preamble $magic)"; exit 1; }
cp "$out" python/src/context_compactor/core.wasm

size() { printf '%s bytes, %s gzipped' "$(wc -c < "$1")" "$(gzip -9 -c "$1" | wc -c)"; }
log "component (core + both encodings' ranks): $(size "$out")"
if [ -f js/dist/wasm/context_compactor_bg.wasm ]; then
  npm_total=0; npm_gz=0
  for f in js/dist/wasm/context_compactor_bg.wasm js/dist/ranks/*.wasm; do
    npm_total=$((npm_total + $(wc -c < "$f"))); npm_gz=$((npm_gz + $(gzip -9 -c "$f" | wc -c)))
  done
  log "npm: core wasm $(size js/dist/wasm/context_compactor_bg.wasm); with both rank modules $npm_total bytes, $npm_gz gzipped"
fi
