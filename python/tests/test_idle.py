"""Idle-aware prefix breaks (issue 32, item 2) in the Python host: the compactor's clock (``now``)
goes to the core with every call, the state records when the last call went out, and a call
after the provider's cache lifetime takes the edits a warm cache defers."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

from context_compactor import Compactor, MemoryStore
from context_compactor.errors import CompactorError

T0 = 1_767_603_600_000  # 2026-01-05 09:00 UTC, ms
MINUTE = 60_000
WINDOW = 16_000
WORDS = ["alpha", "budget", "cache", "delta", "error", "fixture", "gamma", "harness", "index", "json"]


def prose(seed: int, n: int) -> str:
    return " ".join(f"{WORDS[(i * 7 + seed) % 10]} {seed}-{i}" for i in range(n))


def agent(turns: int) -> List[Dict[str, Any]]:
    """js/test/idle.test.mjs `agent`: read_file steps whose results tier 2 can mask."""
    messages: List[Dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for t in range(turns):
        messages.append({"role": "user", "content": f"Step {t}: {prose(t, 30)}"})
        messages.append({"role": "assistant", "content": [{"type": "tool-call", "toolCallId": f"c{t}", "toolName": "read_file", "input": {"path": f"/src/m{t}.rs"}}]})
        messages.append({"role": "tool", "content": [{"type": "tool-result", "toolCallId": f"c{t}", "toolName": "read_file", "output": {"type": "text", "value": prose(t + 1, 120)}}]})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": prose(t + 2, 60)}]})
    return messages


def between() -> List[Dict[str, Any]]:
    probe = Compactor(model="gpt-4o", context_window=WINDOW)
    for turns in range(1, 200):
        messages = agent(turns)
        if probe.usage(messages)["tokens"] > WINDOW * 0.5:
            return messages
    raise AssertionError("no session long enough")


def test_a_warm_call_changes_nothing_and_a_call_after_the_lifetime_takes_the_deferred_edits() -> None:
    messages = between()
    clock = [T0]
    compactor = Compactor(model="gpt-4o", context_window=WINDOW, now=lambda: clock[0])
    assert compactor.manage(messages).events == []
    assert compactor.state()["lastCallAt"] == T0
    clock[0] += 9 * MINUTE
    warm = compactor.manage(messages)
    assert warm.events == [] and not any(n["type"] == "cache-expired" for n in warm.plan["notes"])
    clock[0] += 12 * MINUTE  # the time is kept to the minute: eleven may be ten and a bit
    cold = compactor.manage(messages)
    assert {"type": "cache-expired", "idleSeconds": 720, "lifetimeSeconds": 600} in cold.plan["notes"]
    assert cold.events and all(e["strategy"] == "mask" for e in cold.events)
    assert cold.plan["cache"]["breakCost"] == 0
    assert compactor.state()["lastCallAt"] == clock[0]


def test_a_stateless_route_sends_what_a_long_lived_compactor_sends() -> None:
    messages = between()
    store = MemoryStore()
    clock = [T0]
    long_lived = Compactor(model="gpt-4o", context_window=WINDOW, now=lambda: clock[0])
    broke = []
    for i, gap in enumerate([0, 2 * MINUTE, 30 * MINUTE, MINUTE]):
        clock[0] += gap
        history = messages + ([{"role": "user", "content": f"Follow-up {i}"}] if i else [])
        a = long_lived.manage(history)
        route = Compactor(model="gpt-4o", context_window=WINDOW, store=store, state_path="/state.json", now=lambda: clock[0])
        b = route.manage(history)
        assert b.messages == a.messages, f"call {i}"
        broke.append(bool(a.events))
    assert broke == [False, False, True, False]


def test_a_bad_clock_is_a_typed_error() -> None:
    with pytest.raises(CompactorError) as e:
        Compactor(now=5)  # type: ignore[arg-type]
    assert e.value.code == "invalid_config"
    compactor = Compactor(now=lambda: float("nan"))
    with pytest.raises(CompactorError) as e:
        compactor.manage([{"role": "user", "content": "hi"}])
    assert e.value.code == "invalid_config" and "now()" in str(e.value)
