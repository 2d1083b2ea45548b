"""The Python package's cost per `plan` on the 2,000-message benchmark conversation
(bench/tokenizers/plan-conversation.mjs: the generated corpus conversation, texts cut to 420
characters, ~200k tokens), beside the npm package in Node on the very same messages:

- first plan (a new compactor, gpt-4o's 128k window: over the trigger, so a real plan);
- re-plan after one appended message (the held conversation syncs one message);
- re-plan under the trigger (gpt-4.1's 1M window: the call an agent makes before every step).

    python python/bench/plan_overhead.py        (after scripts/build.sh and build-component.sh;
                                                 the venv's python: .venv-py/bin/python)
Prints JSON."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BENCH = os.path.join(REPO, "bench", "tokenizers")

NODE = """
import { writeFileSync } from 'node:fs';
import { planConversation } from './plan-conversation.mjs';
const cc = await import(process.argv[1]);
const messages = planConversation();
writeFileSync(process.argv[2], JSON.stringify(messages));
await cc.init();
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const time = (f) => { const t = performance.now(); f(); return performance.now() - t; };
const first = [];
for (let i = 0; i < 5; i++) { const c = await cc.createCompactor({ model: 'gpt-4o' }); first.push(time(() => c.plan(messages))); }
const over = await cc.createCompactor({ model: 'gpt-4o' });
over.plan(messages);
const replan = [];
for (let i = 0; i < 7; i++) { const grown = [...messages, { role: 'user', content: `Follow-up ${i}: what changed?` }]; replan.push(time(() => over.plan(grown))); }
const roomy = await cc.createCompactor({ model: 'gpt-4.1' });
roomy.plan(messages);
const under = [];
for (let i = 0; i < 15; i++) { const grown = [...messages, { role: 'user', content: `Follow-up ${i}: anything else?` }]; under.push(time(() => roomy.plan(grown))); }
process.stdout.write(JSON.stringify({ firstPlanMs: median(first), replanMs: median(replan), replanUnderMs: median(under), node: process.version }));
"""


def python_figures(messages: list) -> dict:
    from context_compactor import Compactor

    def timed(f) -> float:
        t = time.perf_counter()
        f()
        return (time.perf_counter() - t) * 1e3

    Compactor(model="gpt-4o").plan(messages[:10])  # the engine compiled, the ranks parsed
    first = [timed(lambda: Compactor(model="gpt-4o").plan(messages)) for _ in range(5)]
    over = Compactor(model="gpt-4o")
    plan = over.plan(messages)
    replan = [timed(lambda: over.plan(messages + [{"role": "user", "content": f"Follow-up {i}: what changed?"}])) for i in range(7)]
    roomy = Compactor(model="gpt-4.1")
    roomy.plan(messages)
    under = [timed(lambda: roomy.plan(messages + [{"role": "user", "content": f"Follow-up {i}: anything else?"}])) for i in range(15)]
    return {
        "messages": len(messages),
        "tokens": plan["tokensBefore"],
        "actions": len(plan["actions"]),
        "firstPlanMs": statistics.median(first),
        "replanMs": statistics.median(replan),
        "replanUnderMs": statistics.median(under),
        "python": sys.version.split()[0],
    }


def main() -> None:
    if not os.path.isfile(os.path.join(BENCH, "corpus", "conversation.json")):
        subprocess.run(["node", "gen-corpus.mjs", "--out", "corpus"], cwd=BENCH, check=True, stdout=subprocess.DEVNULL)
    entry = "file://" + os.path.join(REPO, "js", "dist", "entry", "node.js")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "conversation.json")
        run = subprocess.run(["node", "--input-type=module", "-e", NODE, entry, out], cwd=BENCH, check=True, capture_output=True, text=True)
        node = json.loads(run.stdout)
        with open(out, encoding="utf-8") as f:
            messages = json.load(f)
    python = python_figures(messages)
    overhead = {k: round(python[k] - node[k], 2) for k in ("firstPlanMs", "replanMs", "replanUnderMs")}
    print(json.dumps({"python": python, "node": node, "pythonMinusNodeMs": overhead}, indent=2))


if __name__ == "__main__":
    main()
