#!/usr/bin/env bash
# The quality arena: replays the long recorded sessions through every contender (no management,
# AI SDK pruneMessages, LangChain summarization and context editing, DeepAgents, Strands, Mastra,
# the OpenAI Agents SDK, Cloudflare Agents' Sessions compaction, context-compactor with each preset
# and adapter) at a 128k and a 32k window. Writes bench/arena/out/results.{md,json}.
# Options go to bench/arena/run.mjs: `npm run arena -- --sessions long-chat --windows 32000`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
# Node 22 (setup.sh installs it in .tools/node22): the Cloudflare contenders' Durable Object
# storage is node:sqlite (Node >= 22.5).
.tools/node22/node_modules/.bin/node --max-old-space-size=8192 bench/arena/run.mjs "$@"
