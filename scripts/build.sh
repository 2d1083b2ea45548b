#!/usr/bin/env bash
# Builds the wasm core and the npm package into js/dist. Run scripts/setup.sh once first.
set -euo pipefail
cd "$(dirname "$0")/.."
log() { printf '\033[1m[build]\033[0m %s\n' "$*" >&2; }
WASM_ROUTE=rustup
[ -f .tools/env ] && . .tools/env

wasm=target/wasm32-unknown-unknown/release/context_compactor.wasm
log "cargo build (wasm32, release, route: $WASM_ROUTE)"
if [ "$WASM_ROUTE" = debian ]; then
  # Debian's rustc 1.9x with the std built from source; rust-lld is a broken link there.
  PATH=/usr/bin:$PATH CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=wasm-ld RUSTC_BOOTSTRAP=1 \
    cargo build -q --release --target wasm32-unknown-unknown --no-default-features --features wasm --lib -Zbuild-std=std,panic_abort
else
  cargo build -q --release --target wasm32-unknown-unknown --no-default-features --features wasm --lib
fi

log "wasm-bindgen --target web"
rm -rf pkg/web && wasm-bindgen --target web --remove-name-section --remove-producers-section --out-dir pkg/web "$wasm"

log "tsc"
rm -rf js/dist js/src/wasm && mkdir -p js/src/wasm
cp pkg/web/context_compactor.js pkg/web/context_compactor.d.ts js/src/wasm/
(cd js && node_modules/.bin/tsc -p tsconfig.json)
mkdir -p js/dist/wasm
cp pkg/web/context_compactor.js pkg/web/context_compactor.d.ts pkg/web/context_compactor_bg.wasm js/dist/wasm/
# The ranks travel as data-only .wasm modules, loaded like the core (see scripts/rank-wasm.mjs).
for enc in o200k_base cl100k_base; do
  node scripts/rank-wasm.mjs "data/$enc.ranks" "js/dist/ranks/$enc.wasm"
done
size() { printf '%s bytes, %s gzipped' "$(wc -c < "$1")" "$(gzip -9 -c "$1" | wc -c)"; }
log "js/dist ready: core wasm $(size js/dist/wasm/context_compactor_bg.wasm); o200k $(size js/dist/ranks/o200k_base.wasm); cl100k $(size js/dist/ranks/cl100k_base.wasm)"
