#!/usr/bin/env bash
# The main job: installs what it needs, builds, and compacts a bundled long agent session
# (no API key), printing the plan, tokens before/after and where the content went.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --demo
bash scripts/build.sh
exec node examples/demo/demo.mjs
