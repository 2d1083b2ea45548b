"""Shared fixtures: the repository's conversations (the JS host tests' `chat` helper, run by
node, so every host is tested on the very same messages) and a small coding session (the
Rust tier-2 test's, tests/tier2.rs)."""

from __future__ import annotations

import json
import os
import subprocess
from functools import lru_cache
from typing import Any, Dict, List

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@lru_cache(maxsize=None)
def _chat_json(turns: int, size: int, tool_call: bool) -> str:
    script = (
        "import { chat } from './js/test-helpers/conversations.mjs';"
        f"process.stdout.write(JSON.stringify(chat({turns}, {size}, {{ toolCall: {str(tool_call).lower()} }})));"
    )
    return subprocess.run(
        ["node", "--input-type=module", "-e", script], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout


def chat(turns: int, size: int = 120, tool_call: bool = True) -> List[Dict[str, Any]]:
    """js/test-helpers/conversations.mjs `chat`: `turns` exchanges of ~`size` words a side."""
    return json.loads(_chat_json(turns, size, tool_call))


def lines(seed: str, n: int) -> str:
    return "".join(f"{seed} {i}: let x{i} = compute({(i * 7919) % 10_007});\n" for i in range(n))


def coding_session() -> List[Dict[str, Any]]:
    """tests/tier2.rs `coding_session`: ~13.7k tokens of file reads (one file read twice), a big
    write, a big edit and test runs, all under the offload threshold."""
    messages: List[Dict[str, Any]] = [
        {"role": "system", "content": "coding agent"},
        {"role": "user", "content": "fix the bug"},
    ]
    calls = [
        ("read_file", {"path": "src/lib.rs"}, lines("lib", 150)),
        ("read_file", {"path": "src/main.rs"}, lines("main", 100)),
        ("write_file", {"path": "src/new.rs", "content": lines("new", 120)}, "ok"),
        ("run_tests", {}, lines("test", 120)),
        ("edit_file", {"path": "src/lib.rs", "old_text": "a", "new_text": lines("edit", 80)}, "ok"),
        ("read_file", {"path": "src/lib.rs"}, lines("lib2", 150)),
    ]
    for n, (tool, args, output) in enumerate(calls, 1):
        messages.append({"role": "assistant", "content": [{"type": "tool-call", "toolCallId": f"c{n}", "toolName": tool, "input": args}]})
        messages.append({"role": "tool", "content": [{"type": "tool-result", "toolCallId": f"c{n}", "toolName": tool, "output": {"type": "text", "value": output}}]})
    messages.append({"role": "user", "content": "keep going"})
    return messages


def bash_turn(call_id: str, fill: str) -> List[Dict[str, Any]]:
    """A bash call whose output is 3,000 long lines of ``fill``: one offload in a 32k window."""
    output = "\n".join(f"line {i}: {fill * 20}" for i in range(3000))
    return [
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": call_id, "toolName": "bash", "input": {"cmd": call_id}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": call_id, "toolName": "bash", "output": {"type": "text", "value": output}}]},
    ]


def assert_paired(messages: List[Dict[str, Any]]) -> None:
    """No tool result without its call, no call without its result."""
    calls, results = set(), set()
    for m in messages:
        if not isinstance(m["content"], list):
            continue
        for p in m["content"]:
            if p["type"] == "tool-call":
                calls.add(p["toolCallId"])
            if p["type"] == "tool-result":
                assert p["toolCallId"] in calls, f"result {p['toolCallId']} without its call"
                results.add(p["toolCallId"])
    assert calls == results, f"calls without results: {calls - results}"


@pytest.fixture
def repo() -> str:
    return REPO
