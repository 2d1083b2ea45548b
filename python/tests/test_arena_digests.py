"""The arena's sessions through the Python host give the same prompts as through the npm
package's `prepareStep` (issue 31, item 5).

`bench/arena/python/export.mjs` runs a session through the arena's long-lived `prepareStep`
contender (`context-compactor smart`, the arena's clock, scripted summarizer, summaries in the
background) and writes what the Python side needs; `--verify` also checks its digests against
the arena's own contender run (`lib/arena.mjs runOne`). `bench/arena/python/replay.py` replays
that through `context_compactor.Compactor` (`manage` per model call, `offload_tool_output` at
tool return, `observe_usage` after each step) and compares every prompt's digest (lib/metrics.mjs
`promptDigests`) call by call. See bench/arena/python/README.md.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from typing import Any, Dict

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HERE = os.path.join(REPO, "bench", "arena", "python")
sys.path.insert(0, HERE)

import replay as arena_replay  # noqa: E402  (bench/arena/python/replay.py)


def _node() -> str:
    node22 = os.path.join(REPO, ".tools", "node22", "node_modules", ".bin", "node")
    if os.path.exists(node22):
        return node22
    node = shutil.which("node")
    assert node is not None, "node is not installed: the arena's npm side cannot run (scripts/setup.sh installs it)"
    return node


_exports: Dict[Any, Dict[str, Any]] = {}


def _export(tmp_path_factory: pytest.TempPathFactory, session: str, window: int, options: Dict[str, Any]) -> Dict[str, Any]:
    key = (session, window, json.dumps(options, sort_keys=True))
    if key in _exports:
        return _exports[key]
    assert os.path.isdir(os.path.join(REPO, "bench", "arena", "node_modules")), "bench/arena/node_modules is missing (scripts/setup.sh installs it)"
    out = tmp_path_factory.mktemp("arena") / f"{session}-{window}.json"
    proc = subprocess.run(
        [_node(), "--max-old-space-size=8192", os.path.join(HERE, "export.mjs"), "--session", session, "--window", str(window), "--options", json.dumps(options), "--out", str(out), "--verify"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    with open(out) as f:
        data = json.load(f)
    # The exporter's replay is the arena's contender: the same digests as `runOne`.
    assert data["contenderCheck"]["equal"], data["contenderCheck"]
    _exports[key] = data
    return data


# Generated sessions only: the real ones are read from a local mirror of their source
# repositories, which a fresh machine does not have (bench/arena/python/check.py runs them all
# where it is; README.md there has the figures).
CASES = [
    pytest.param("research-agent", 32_000, {}, id="research-agent-32k"),
    # A generated coding session (171 calls): offloads at return, tier 2 (evict, dedupe, mask),
    # nine summaries asked in the background, four applied.
    pytest.param("coding-agent", 32_000, {}, id="coding-agent-32k"),
]


@pytest.mark.parametrize("session,window,options", CASES)
def test_arena_session_prompts_equal_prepare_step(tmp_path_factory: pytest.TempPathFactory, session: str, window: int, options: Dict[str, Any]) -> None:
    data = _export(tmp_path_factory, session, window, options)
    r = arena_replay.replay(data)
    # Compaction happened: tier 1 at return, and at least one summary applied.
    assert r["offloadedAtReturn"] > 0
    assert r["applied"].get("summarize", 0) >= 1, r["applied"]
    assert r["summaries"] >= 1 and r["summaries"] == r["npmSummaries"]
    assert r["calls"] == r["npmCalls"] == len(data["promptDigests"]) > 0
    # What each call handed in, and every prompt sent, equal to the npm side's.
    assert r["inputDifferences"] == []
    assert r["differences"] == [], r["differences"][:5]
    assert r["digests"] == data["promptDigests"]
    assert r["notes"] == [], r["notes"][:10]
    assert r["equal"]


def test_a_single_differing_prompt_fails(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The check names one call whose prompt differs, and only that one: the npm side's digest
    of one call changed (as if its prompt had differed there), everything else as exported."""
    data = copy.deepcopy(_export(tmp_path_factory, "coding-agent", 32_000, {}))
    k = len(data["calls"]) // 2
    data["calls"][k]["digest"] = "0" * 12
    data["calls"][k]["pieceDigests"][-1] = "0" * 12
    data["promptDigests"][k] = "0" * 12
    r = arena_replay.replay(data)
    assert not r["equal"]
    assert [d["call"] for d in r["differences"]] == [k]
    assert r["differences"][0]["piece"] == len(data["calls"][k]["pieceDigests"]) - 1
