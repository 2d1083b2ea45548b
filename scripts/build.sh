#!/usr/bin/env bash
# Builds the wasm core and the npm package into js/dist. Run scripts/setup.sh once first.
set -euo pipefail
cd "$(dirname "$0")/.."
log() { printf '\033[1m[build]\033[0m %s\n' "$*" >&2; }
WASM_ROUTE=rustup
[ -f .tools/env ] && . .tools/env

# wasm-pack: cargo build (release, --lib, wasm32-unknown-unknown), then the wasm-bindgen CLI of
# Cargo.lock's version into pkg/web (plus the package.json, README and licences it writes there).
# It finds that CLI on PATH (setup.sh installs it); `--mode no-install` makes any other version an
# error instead of a download. wasm-opt is off in Cargo.toml ([package.metadata.wasm-pack]).
if ! command -v wasm-pack >/dev/null 2>&1; then
  echo "build.sh: wasm-pack is not installed (or not on PATH); run: bash scripts/setup.sh" >&2
  exit 1
fi
# The core is optimized for size, opt-level "s" (README, "Sizes"): 71 kB smaller gzipped than
# Cargo.toml's 3 (most of the core is serde code), counting within ~8 % of it on the bench corpus.
# Native builds (the CLI, cargo bench, the Python component) keep opt-level 3.
export CARGO_PROFILE_RELEASE_OPT_LEVEL=s
# A panic in the wasm core traps (the host turns it into a typed `internal` error): no unwinding code.
export CARGO_PROFILE_RELEASE_PANIC=abort
# wasm_module FEATURE OUT_DIR OUT_NAME: one wasm module of the package, built with wasm-pack
# (release, --lib, wasm32) and its name and producers sections stripped.
wasm_module() {
  local args=(--no-default-features --features "$1")
  rm -rf "$2"
  if [ "$WASM_ROUTE" = debian ]; then
    # Debian's rustc 1.9x with the std built from source; rust-lld is a broken link there. `--mode
    # force` skips wasm-pack's target check, which fails here: it looks for a prebuilt wasm32 std
    # in /usr's sysroot, and build-std makes its own. (It still takes the wasm-bindgen on PATH.)
    PATH=/usr/bin:$PATH CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=wasm-ld RUSTC_BOOTSTRAP=1 \
      wasm-pack --quiet build . --mode force --target web --out-dir "$2" --out-name "$3" --release -- \
      "${args[@]}" -Zbuild-std=std,panic_abort
  else
    wasm-pack --quiet build . --mode no-install --target web --out-dir "$2" --out-name "$3" --release -- "${args[@]}"
  fi
  # What `wasm-bindgen --remove-name-section --remove-producers-section` did; wasm-pack has no way
  # to pass those flags, so the two custom sections come off afterwards.
  node scripts/strip-wasm.mjs "$2/$3_bg.wasm"
  # Two edits to the glue (another realm's compiled module; no second copy of the .wasm for
  # bundlers to emit): scripts/patch-glue.mjs.
  node scripts/patch-glue.mjs "$2/$3.js"
}

log "wasm-pack build --target web (wasm32, release, opt-level $CARGO_PROFILE_RELEASE_OPT_LEVEL, route: $WASM_ROUTE)"
wasm_module wasm pkg/web context_compactor
# The tokenizer compiler (feature `compiler`, src/bindings/compiler.rs): tokenizer.json → prebuilt
# data, a second module that loadTokenizer / compileTokenizer load on first use.
log "wasm-pack build --features compiler (the tokenizer compiler module)"
wasm_module compiler pkg/compiler compiler
# Counting only (feature `counter`, src/bindings/counting.rs): the module behind
# `context-compactor/tokens`, for apps that count and do not compact (no planner, no stores).
log "wasm-pack build --features counter (the counting-only module)"
wasm_module counter pkg/counter counter

log "tsc"
rm -rf js/dist js/src/wasm js/src/compiler js/src/counter && mkdir -p js/src/wasm js/src/compiler js/src/counter
cp pkg/web/context_compactor.js pkg/web/context_compactor.d.ts js/src/wasm/
cp pkg/compiler/compiler.js pkg/compiler/compiler.d.ts js/src/compiler/
cp pkg/counter/counter.js pkg/counter/counter.d.ts js/src/counter/
(cd js && node_modules/.bin/tsc -p tsconfig.json)
mkdir -p js/dist/wasm
cp pkg/web/context_compactor.js pkg/web/context_compactor.d.ts pkg/web/context_compactor_bg.wasm js/dist/wasm/
mkdir -p js/dist/compiler
cp pkg/compiler/compiler.js pkg/compiler/compiler.d.ts pkg/compiler/compiler_bg.wasm js/dist/compiler/
mkdir -p js/dist/counter
cp pkg/counter/counter.js pkg/counter/counter.d.ts pkg/counter/counter_bg.wasm js/dist/counter/
# The ranks travel as data-only .wasm modules, loaded like the core (see scripts/rank-wasm.mjs).
for enc in o200k_base cl100k_base; do
  node scripts/rank-wasm.mjs "data/$enc.ranks" "js/dist/ranks/$enc.wasm"
done
# The open-weight tokenizers licensed for redistribution, as compact data-only .wasm files made
# from the fetched tokenizer.json / tekken files with the tokenizer compiler just built.
log "prebuilt tokenizer data (scripts/tokenizer-data.mjs)"
node scripts/tokenizer-data.mjs js/dist/ranks >&2
size() { printf '%s bytes, %s gzipped' "$(wc -c < "$1")" "$(gzip -9 -c "$1" | wc -c)"; }
log "js/dist ready: core wasm $(size js/dist/wasm/context_compactor_bg.wasm); counting-only $(size js/dist/counter/counter_bg.wasm); tokenizer compiler $(size js/dist/compiler/compiler_bg.wasm); o200k $(size js/dist/ranks/o200k_base.wasm); cl100k $(size js/dist/ranks/cl100k_base.wasm)"
