"""Summaries made ahead of need, off the critical path (issue 32), in the Python host: the core
plans them (``plan["ahead"]``); ``manage`` runs one in a thread and ``amanage`` in a task, neither
waits for it, and the call that reaches the trigger applies it over the span it was asked for."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, Dict, List

import pytest

from context_compactor import Compactor, MemoryStore

WINDOW = 8_000
VOCABULARY = ["router", "cache", "ledger", "shard", "parser", "budget", "window", "token", "queue", "stream"]


def prose(seed: int, words: int) -> str:
    return " ".join(f"{VOCABULARY[(seed * 7 + i * 3) % 10]}{(seed * 31 + i) % 97}" for i in range(words))


def turn(t: int) -> List[Dict[str, Any]]:
    return [
        {"role": "user", "content": f"Turn {t}: {prose(t, 30)}"},
        {"role": "assistant", "content": f"Part {t}: {prose(t + 2, 160)}"},
    ]


class Held:
    """A summarizer whose answers the test releases (sync: blocks its thread until released)."""

    def __init__(self) -> None:
        self.calls: List[Dict[str, Any]] = []
        self.release = threading.Event()

    def __call__(self, request: Dict[str, Any]) -> str:
        self.calls.append(request)
        if request.get("background"):
            assert self.release.wait(10)
        return f"## Session Intent\nMade {'ahead' if request.get('background') else 'in the call'} ({len(self.calls)})"


def test_manage_asks_ahead_in_a_thread_never_waits_and_applies_it_at_the_trigger() -> None:
    summarizer = Held()
    compactor = Compactor(context_window=WINDOW, summarize=summarizer)
    messages: List[Dict[str, Any]] = [{"role": "system", "content": "You are a helpful research agent."}]
    asked = None
    pending = 0
    applied = None
    for t in range(80):
        messages += turn(t)[:1]
        dry = compactor.plan(messages) if asked is None else None  # asks nothing itself
        result = compactor.manage(messages)  # returns while the background summary is blocked
        if dry is not None:
            assert (dry.get("ahead") or {}).get("aheadKey") == (result.plan.get("ahead") or {}).get("aheadKey"), t
        if asked is None and result.plan.get("ahead"):
            asked = result.plan["ahead"]
        if any(n["type"] == "summary-pending" for n in result.plan["notes"]):
            pending += 1
            summarizer.release.set()
            compactor.settled()
        summary = next((e for e in result.events if e["strategy"] == "summarize"), None)
        if summary is not None:
            applied = (summary, result)
            break
        messages += turn(t)[1:]
    assert asked is not None and asked["aheadKey"]
    assert pending >= 1
    assert applied is not None
    event, result = applied
    assert event["status"] == "applied"
    action = next(a for a in result.plan["actions"] if a["type"] == "summarize")
    assert action["end"] == asked["end"] and action["aheadKey"] == asked["aheadKey"]
    assert [bool(c.get("background")) for c in summarizer.calls] == [True]
    assert any("Made ahead (1)" in m["content"] for m in result.messages if isinstance(m["content"], str))


def test_amanage_runs_it_as_a_task_and_a_new_compactor_reads_it_beside_the_state() -> None:
    store = MemoryStore()
    calls: List[bool] = []

    async def summarize(request: Dict[str, Any]) -> str:
        calls.append(bool(request.get("background")))
        await asyncio.sleep(0.01)
        return "## Session Intent\nMade in a task"

    async def main() -> Any:
        messages: List[Dict[str, Any]] = [{"role": "system", "content": "You are a helpful research agent."}]
        asked = None
        for t in range(80):
            messages += turn(t)[:1]
            # A stateless route: a new compactor per request, the state beside the summary.
            compactor = Compactor(context_window=WINDOW, summarize=summarize, store=store, state_path="/state/chat.json")
            result = await compactor.amanage(list(messages))
            await compactor.asettled()  # what the platform keeps running after the response
            if asked is None and result.plan.get("ahead"):
                asked = result.plan["ahead"]["aheadKey"]
                stored = json.loads(store.read(f"/state/chat.json.summaries/ahead-{asked}.json"))
                assert stored["summary"].endswith("Made in a task")
            summary = next((e for e in result.events if e["strategy"] == "summarize"), None)
            if summary is not None:
                action = next(a for a in result.plan["actions"] if a["type"] == "summarize")
                return asked, summary, action
            messages += turn(t)[1:]
        return asked, None, None

    asked, summary, action = asyncio.run(main())
    assert asked is not None
    assert summary is not None and summary["status"] == "applied"
    assert action["aheadKey"] == asked
    assert calls == [True], "one summarizer call, in the background"


@pytest.mark.parametrize("options", [{"background": False}, {"state": {"version": 2}}], ids=["background-false", "state-without-state-path"])
def test_background_false_summarizes_in_the_call(options: Dict[str, Any]) -> None:
    # A state given without state_path is a compactor made per request: a summary back after it
    # answered would reach no one, so it summarizes in the call.
    seen: List[bool] = []
    compactor = Compactor(context_window=WINDOW, **options, summarize=lambda r: (seen.append(bool(r.get("background"))), "## S\nx")[1])
    messages: List[Dict[str, Any]] = [{"role": "system", "content": "s"}]
    for t in range(80):
        messages += turn(t)[:1]
        result = compactor.manage(messages)
        assert "ahead" not in result.plan
        if result.events and any(e["strategy"] == "summarize" for e in result.events):
            break
        messages += turn(t)[1:]
    assert seen == [False]
