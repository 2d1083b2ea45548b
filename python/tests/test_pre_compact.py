"""``on_pre_compact``: the hook the core's loop asks before tier 2 or 3 or a manual compaction
(docs/LOOP.md, slice 2). Its decisions are judged in the core, so these are the checks of
js/test/tier3.test.mjs's onPreCompact test, through the Python host."""

from __future__ import annotations

import asyncio
import json
import datetime
from typing import Any, Dict, List

import pytest

from context_compactor import Compactor, MemoryStore
from context_compactor.errors import CompactorError

from conftest import assert_paired, chat


def test_cancel_below_the_hard_limit_is_kept_and_overridden_above_it() -> None:
    seen: List[Dict[str, Any]] = []

    def cancel(context: Dict[str, Any]) -> Dict[str, Any]:
        seen.append(context)
        return {"cancel": True}

    compactor = Compactor(
        context_window=8_000,
        history={"trigger_fraction": 0.9, "hard_limit_fraction": 0.99},
        compaction={"trigger_fraction": 0.5, "target_fraction": 0.4},
        on_pre_compact=cancel,
    )
    small = chat(7, 80)
    tokens = compactor.usage(small)["tokens"]
    assert 4_000 < tokens < 7_920, f"fixture between trigger and hard limit: {tokens}"
    cancelled = compactor.manage(small)
    assert cancelled.cancelled is True
    assert cancelled.messages == small
    assert cancelled.events == []
    assert seen[0]["trigger"] == "auto"
    assert seen[0]["current_tokens"] == tokens
    assert seen[0]["message_count"] == len(small)
    assert seen[0]["target_tokens"] == 3_200
    assert seen[0]["plan"]["actions"], "the hook sees the plan it may cancel"

    big = chat(30)
    overridden = compactor.manage(big)
    assert overridden.cancel_overridden is True, "no deadlock past the hard limit"
    assert overridden.cancelled is False
    assert compactor.usage(overridden.messages)["tokens"] < 8_000
    assert_paired(overridden.messages)


def test_custom_instructions_reach_the_summary_request_and_a_custom_summary_skips_the_llm() -> None:
    requests: List[Dict[str, Any]] = []

    def summarize(request: Dict[str, Any]) -> str:
        requests.append(request)
        return "steered"

    big = chat(30)
    steer = Compactor(
        context_window=8_000,
        summarize=summarize,
        on_pre_compact=lambda context: {"custom_instructions": "Focus on the spreadsheet formulas."},
    )
    steered = steer.manage(big)
    assert len(requests) == 1
    assert "Additional instructions: Focus on the spreadsheet formulas." in requests[0]["prompt"]
    assert requests[0]["messages"] == [{"role": "user", "content": requests[0]["prompt"]}]
    assert any(e["strategy"] == "summarize" and e["status"] == "applied" for e in steered.events)

    store = MemoryStore()
    custom = Compactor(
        context_window=8_000,
        store=store,
        summarize=lambda request: pytest.fail("the custom summary replaces the LLM call"),
        on_pre_compact=lambda context: {"customSummary": "Hand-written summary."},  # camelCase too
    )
    out = custom.manage(big).messages
    assert out[1]["content"].endswith("Hand-written summary.")
    # Reversible first: the transcript of what the summary replaced is stored.
    assert any(path.startswith("/conversation_history/") for path in store.list("/"))


def test_an_async_hook_through_amanage_and_a_bad_answer_is_a_typed_error() -> None:
    async def hook(context: Dict[str, Any]) -> Dict[str, Any]:
        await asyncio.sleep(0)
        return {"cancel": True}

    compactor = Compactor(context_window=8_000, on_pre_compact=hook)
    result = asyncio.run(compactor.acompact(chat(7, 80)))
    assert result.cancelled is True

    bad = Compactor(context_window=8_000, on_pre_compact=lambda context: "cancel")
    with pytest.raises(CompactorError, match="on_pre_compact returned str"):
        bad.compact(chat(7, 80))
    # The compactor still works after the failed call (the core's session was abandoned).
    assert Compactor(context_window=8_000).compact(chat(7, 80)).events
    assert bad.usage(chat(3))["tokens"] > 0


@pytest.mark.parametrize(
    "answer, field",
    [
        ({"cancel": 1}, "on_pre_compact.cancel"),
        ({"cancel": "no"}, "on_pre_compact.cancel"),
        ({"custom_instructions": 5}, "on_pre_compact.custom_instructions"),
        # What JSON cannot carry: the same typed error, from the host.
        ({"custom_instructions": datetime.date(2026, 1, 1)}, "on_pre_compact.custom_instructions"),
        ({"cancel": float("nan")}, "on_pre_compact.cancel"),
    ],
)
def test_an_answer_of_the_wrong_type_is_a_typed_error_naming_the_field(answer: Dict[str, Any], field: str) -> None:
    # The core reads the answer, for every host (npm: js/test/host-parity.test.mjs): a cancel is
    # True or False, never 1 or "no" read as one.
    compactor = Compactor(context_window=8_000, on_pre_compact=lambda context: answer)
    with pytest.raises(CompactorError) as raised:
        compactor.compact(chat(7, 80))
    assert raised.value.code == "invalid_config" and raised.value.details["field"] == field
    assert "on_pre_compact returned" in raised.value.message


def test_a_call_made_from_inside_the_compactors_own_call_is_busy_not_a_broken_call() -> None:
    # Sync: the hook calls manage on the compactor whose call asked it (before: the inner call
    # abandoned the outer one, which failed with "no manage or compact call under way").
    box: Dict[str, Any] = {}

    def nested(context: Dict[str, Any]) -> None:
        box["compactor"].manage(chat(3))

    compactor = Compactor(context_window=8_000, on_pre_compact=nested)
    box["compactor"] = compactor
    with pytest.raises(CompactorError) as raised:
        compactor.manage(chat(24)[:40])
    assert raised.value.code == "busy" and raised.value.details == {"call": "manage"}, raised.value
    assert "on_pre_compact" in str(raised.value)
    # The compactor is whole: the next call compacts; a copy of the state to another path is a
    # plain write, fine from inside a hook.
    copied: List[str] = []

    def copy(context: Dict[str, Any]) -> None:
        box["compactor"].save_state("/copy.json")
        copied.append("/copy.json")

    store = MemoryStore()
    box["compactor"] = other = Compactor(context_window=8_000, store=store, on_pre_compact=copy)
    assert other.manage(chat(24)[:40]).events and copied and store.read("/copy.json")
    assert compactor.manage(chat(24)[:40]).events


def test_an_async_hook_awaiting_its_own_compactor_is_busy_not_a_hang() -> None:
    # Async: the asyncio lock is not re-entrant, so this waited for ever before.
    box: Dict[str, Any] = {}
    store = MemoryStore()

    async def nested(context: Dict[str, Any]) -> None:
        await asyncio.sleep(0)  # after an await too: contextvars follow the task
        await box["compactor"].asave_state()

    compactor = Compactor(context_window=8_000, store=store, state_path="/state.json", on_pre_compact=nested)
    box["compactor"] = compactor

    async def main() -> None:
        with pytest.raises(CompactorError) as raised:
            await asyncio.wait_for(compactor.amanage(chat(24)[:40]), 20)
        assert raised.value.code == "busy" and raised.value.details == {"call": "asave_state"}

    asyncio.run(main())


def test_on_event_may_save_the_state_once_the_calls_work_is_done() -> None:
    # ``on_event`` is told after the call's work: a call it makes runs (npm queues it after).
    store = MemoryStore()
    box: Dict[str, Any] = {}
    saved: List[int] = []

    def on_event(event: Dict[str, Any]) -> None:
        box["compactor"].save_state()
        saved.append(json.loads(store.read("/state.json") or "{}")["revision"])

    compactor = Compactor(context_window=8_000, store=store, state_path="/state.json", on_event=on_event)
    box["compactor"] = compactor
    result = compactor.manage(chat(24)[:40])
    assert result.events and len(saved) == len(result.events) and saved == sorted(saved), saved
    # During amanage too: its call is lent to the sync call on_event makes on the loop's thread.
    saved.clear()
    store = MemoryStore()
    compactor = box["compactor"] = Compactor(context_window=8_000, store=store, state_path="/state.json", on_event=on_event)
    result = asyncio.run(compactor.amanage(chat(24)[:40]))
    assert result.events and len(saved) == len(result.events) and saved == sorted(saved), saved
