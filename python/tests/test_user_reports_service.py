"""Found by a user test of a Python service (worker processes sharing Redis, sync and async
calls, LangChain): each test failed before its fix."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Dict, List

import pytest

from context_compactor import Compactor, CompactorError, MemoryStore

from conftest import chat, lines


def tool_outputs(n: int) -> List[Dict[str, Any]]:
    """A conversation of `n` tool results, each over the offload threshold."""
    messages: List[Dict[str, Any]] = [{"role": "user", "content": "collect the logs"}]
    for i in range(n):
        messages.append({"role": "assistant", "content": [{"type": "tool-call", "toolCallId": f"c{i}", "toolName": "bash", "input": {"cmd": f"cat log{i}"}}]})
        messages.append({"role": "tool", "content": [{"type": "tool-result", "toolCallId": f"c{i}", "toolName": "bash", "output": {"type": "text", "value": lines(f"log{i}", 400)}}]})
    return messages


def test_manage_on_a_thread_and_amanage_on_the_loop_take_turns_on_one_compactor() -> None:
    # Before: amanage let go of the compactor between its steps, a manage on another thread
    # started a second call in the core, and amanage failed with PlanMismatchError ("no manage
    # or compact call under way"), 8 of 52 pairs.
    compactor = Compactor(context_window=8_000, store=MemoryStore())
    conversation = chat(40)

    async def main() -> List[Any]:
        loop = asyncio.get_running_loop()
        out: List[Any] = []
        for end in range(6, len(conversation), 4):
            out += await asyncio.gather(
                loop.run_in_executor(None, compactor.manage, conversation[:end]),
                compactor.amanage(conversation[:end]),
                return_exceptions=True,
            )
        return out

    results = asyncio.run(main())
    failed = [r for r in results if isinstance(r, BaseException)]
    assert failed == [], failed[:2]
    assert len(results) >= 10


def test_a_sync_call_on_the_loop_that_runs_an_amanage_of_the_same_compactor_is_busy_not_a_deadlock() -> None:
    release = threading.Event()

    def summarize(request: Dict[str, Any]) -> str:
        release.wait(5)
        return "## Session Intent\nslow"

    compactor = Compactor(context_window=8_000, summarize=summarize, background=False)

    async def main() -> None:
        task = asyncio.ensure_future(compactor.amanage(chat(30)))
        await asyncio.sleep(0.2)  # the call is under way, waiting for its summary
        with pytest.raises(CompactorError) as caught:
            compactor.manage(chat(30))  # on the loop's own thread: it could never go on
        assert caught.value.code == "busy" and "amanage" in caught.value.message
        release.set()
        await task

    asyncio.run(asyncio.wait_for(main(), 20))


class Stalled(MemoryStore):
    """Every write under /tool_outputs/ hangs for `seconds`."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def write(self, path: str, text: str) -> None:
        if path.startswith("/tool_outputs/"):
            time.sleep(self.seconds)
        super().write(path, text)


def test_a_stalled_store_holds_a_sync_manage_one_store_timeout_not_one_per_write() -> None:
    # Before: the sync API made a plan's writes one after another, each waiting store_timeout:
    # 40 writes to a stalled Redis held manage 40 s with store_timeout=1 (amanage: 1 s).
    messages = tool_outputs(8)
    compactor = Compactor(context_window=128_000, store=Stalled(3.0), store_timeout=0.5)
    started = time.monotonic()
    result = compactor.manage(messages)
    elapsed = time.monotonic() - started
    offloads = [e for e in result.events if e["strategy"] == "offload"]
    assert len(offloads) == 8 and all(e["status"] == "failed" for e in offloads)
    assert elapsed < 2.0, f"{elapsed:.1f} s for 8 stalled writes (store_timeout 0.5 s)"
    # Nothing lost: every output stays whole.
    assert [m for m in result.messages if m["role"] == "tool"] == [m for m in messages if m["role"] == "tool"]
    # Writes that answer land, all of them, in parallel too.
    ok = Compactor(context_window=128_000, store=MemoryStore(), store_timeout=0.5)
    done = ok.manage(messages)
    assert [e["status"] for e in done.events if e["strategy"] == "offload"] == ["applied"] * 8


def test_a_sync_on_pre_compact_that_hangs_is_no_decision_after_summarize_timeout() -> None:
    # Before: only an async hook was bounded; a sync one sleeping 30 s held the call 30 s.
    def hook(context: Dict[str, Any]) -> None:
        time.sleep(5)

    for call in ("manage", "amanage"):
        compactor = Compactor(context_window=8_000, summarize_timeout=0.3, on_pre_compact=hook)
        started = time.monotonic()
        result = compactor.manage(chat(30)) if call == "manage" else asyncio.run(compactor.amanage(chat(30)))
        assert time.monotonic() - started < 3, call
        assert any(e["strategy"] == "summarize" for e in result.events), call
