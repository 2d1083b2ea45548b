"""Session reports in the Python host (issue 31, parity with the npm package's
``createReportRecorder``): the recorder keeps one entry per model call, reads the stored files
back with their exact tokens, and renders the core's page; the same session recorded through
the npm package gives the same report data and the same HTML, byte for byte."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from typing import Any, Dict, List

import pytest

from context_compactor import Compactor, CompactorError, MemoryStore, count_tokens, create_report_recorder, render_report

from conftest import REPO, chat

SUMMARY = "## Session Intent\nA scripted summary of the earlier turns."
#: Summaries in the call: one made in the background is applied when it is back, which is timing.
OPTIONS: Dict[str, Any] = {"contextWindow": 8_000, "background": False}


def turns() -> List[List[Dict[str, Any]]]:
    talk = chat(30)
    return [talk[: 20 + 8 * i] for i in range(6)]


def python_report() -> Dict[str, Any]:
    report = create_report_recorder(title="python session")
    compactor = Compactor(context_window=8_000, background=False, store=MemoryStore(), summarize=lambda request: SUMMARY, on_event=report.on_event)
    for messages in turns():
        report.manage(compactor, messages)
    return {"data": report.data(), "html": report.html()}


NODE_SCRIPT = """
import { readFileSync } from 'node:fs';
const cc = await import(process.argv[2]);
await cc.init();
const { turns, options, summary } = JSON.parse(readFileSync(process.argv[3], 'utf8'));
const report = cc.createReportRecorder({ title: 'python session' });
const compactor = await cc.createCompactor({ ...options, store: new cc.MemoryStore(), summarize: async () => summary, onEvent: report.onEvent });
for (const messages of turns) await report.manage(compactor, messages);
process.stdout.write(JSON.stringify({ data: await report.data(), html: await report.html() }));
"""


def node_report(tmp_path: Any) -> Dict[str, Any]:
    entry = os.path.join(REPO, "js", "dist", "entry", "node.js")
    if not os.path.exists(entry):
        pytest.fail("js/dist is not built: run bash scripts/build.sh (the test command does)")
    script, cases = tmp_path / "report.mjs", tmp_path / "report.json"
    script.write_text(NODE_SCRIPT, encoding="utf-8")
    cases.write_text(json.dumps({"turns": turns(), "options": OPTIONS, "summary": SUMMARY}), encoding="utf-8")
    out = subprocess.run(["node", str(script), "file://" + entry, str(cases)], check=True, capture_output=True, text=True, cwd=REPO)
    return dict(json.loads(out.stdout))


def test_the_recorder_keeps_each_call_and_the_stored_files() -> None:
    report = python_report()
    data = report["data"]
    calls = data["calls"]
    assert [c["call"] for c in calls] == list(range(1, 7))
    assert [c["messages"] for c in calls] == [len(t) for t in turns()]
    compacted = [c for c in calls if any(e["status"] == "applied" for e in c["events"])]
    assert compacted, "the session compacts"
    assert all(c["tokensAfter"] < c["tokensBefore"] for c in compacted)
    assert any(c["prefixBreak"] for c in compacted)
    assert not calls[0]["prefixBreak"]
    assert data["store"], "the transcript is read back"
    assert data["window"] == 8_000 and data["encoding"] == "o200k_base"
    html = report["html"]
    assert html.startswith("<!doctype html>") and "python session" in html and "<svg" in html


def test_the_same_session_through_the_npm_package_gives_the_same_report(tmp_path: Any) -> None:
    ours, theirs = python_report(), node_report(tmp_path)
    assert ours["data"] == theirs["data"]
    assert ours["html"] == theirs["html"]


def test_stored_files_are_counted_exactly_and_async_calls_recorded() -> None:
    store = MemoryStore()
    report = create_report_recorder()

    async def run() -> None:
        compactor = Compactor(context_window=8_000, store=store, summarize=lambda request: SUMMARY, on_event=report.on_event)
        for messages in turns():
            await report.amanage(compactor, messages)
        await report.acompact(compactor, turns()[-1], instructions="Keep the numbers.")

    asyncio.run(run())
    data = report.data()
    assert len(data["calls"]) == 7
    for stored in data["store"]:
        text = store.read(stored["path"]) or ""
        assert stored["tokens"] == count_tokens(text) and stored["chars"] == len(text)


def test_errors_name_the_python_function() -> None:
    with pytest.raises(CompactorError, match="create_report_recorder: no call recorded yet"):
        create_report_recorder().data()
    # Missing or mistyped fields read as empty (the core's reader): a page all the same.
    assert "<svg" in render_report({"title": "empty", "calls": "not a list"})
