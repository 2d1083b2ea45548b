"""Stores that stall (issue 31, parity with the npm package's ``storeTimeoutMs``): every store
call the Python compactor makes is bounded by ``store_timeout``; a call that has not answered
counts as failed (``store_failed``), so a stalled store never hangs a request — the content it
was to hold stays in the conversation, and a state that cannot be read is planned without."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Dict, List, Optional

import pytest

from context_compactor import Compactor, CompactorError, MemoryStore

from conftest import chat

BIG = "\n".join(f"row {i}: value {(i * 7919) % 10_007} ok" for i in range(6_000))
CONVERSATION: List[Dict[str, Any]] = [
    {"role": "user", "content": "dump the table"},
    {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "t1", "toolName": "sql", "input": {}}]},
    {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "t1", "toolName": "sql", "output": {"type": "text", "value": BIG}}]},
]


class Stalled(MemoryStore):
    """Writes (and, with ``reads``, reads) that never answer until released."""

    def __init__(self, reads: bool = False) -> None:
        super().__init__()
        self.release = threading.Event()
        self.reads = reads

    def write(self, path: str, text: str) -> None:
        self.release.wait()
        super().write(path, text)

    def read(self, path: str) -> Optional[str]:
        if self.reads:
            self.release.wait()
        return super().read(path)


def test_a_stalled_write_fails_in_time_and_the_content_stays() -> None:
    store = Stalled()
    try:
        compactor = Compactor(context_window=16_000, store=store, store_timeout=0.3)
        started = time.monotonic()
        result = compactor.manage(CONVERSATION)
        assert time.monotonic() - started < 5
        failed = [e for e in result.events if e["status"] == "failed"]
        assert failed and "did not answer within 0.3 s (store_timeout)" in (failed[0].get("error") or "")
        assert result.messages[2]["content"][0]["output"]["value"] == BIG, "nothing left the conversation"
    finally:
        store.release.set()


def test_an_async_store_that_stalls_fails_in_time() -> None:
    class AsyncStalled:
        def __init__(self) -> None:
            self.files: Dict[str, str] = {}

        async def read(self, path: str) -> Optional[str]:
            return self.files.get(path)

        async def write(self, path: str, text: str) -> None:
            await asyncio.sleep(60)

        async def list(self, prefix: str) -> List[str]:
            return []

        async def delete(self, path: str) -> None:
            return None

    async def run() -> Any:
        compactor = Compactor(context_window=16_000, store=AsyncStalled(), store_timeout=0.2)
        return await asyncio.wait_for(compactor.amanage(CONVERSATION), 10)

    result = asyncio.run(run())
    assert any(e["status"] == "failed" and "store_timeout" in (e.get("error") or "") for e in result.events)
    assert result.messages[2]["content"][0]["output"]["value"] == BIG


def test_a_state_read_that_stalls_plans_from_the_messages_and_says_so() -> None:
    store = Stalled(reads=True)
    try:
        started = time.monotonic()
        compactor = Compactor(context_window=8_000, store=store, state_path="/state/c.json", store_timeout=0.2, background=False)
        result = compactor.manage(chat(4))
        assert time.monotonic() - started < 10
        assert result.state_error is not None and "state not" in result.state_error
    finally:
        store.release.set()


def test_store_timeout_must_be_a_positive_number() -> None:
    for bad in (0, -1, float("inf"), "10"):
        with pytest.raises(CompactorError, match="store_timeout"):
            Compactor(store_timeout=bad)  # type: ignore[arg-type]


def test_none_calls_the_store_directly_on_the_callers_thread() -> None:
    threads: List[str] = []

    class ThreadBound(MemoryStore):
        def write(self, path: str, text: str) -> None:
            threads.append(threading.current_thread().name)
            super().write(path, text)

    Compactor(context_window=16_000, store=ThreadBound(), store_timeout=None).manage(CONVERSATION)
    assert threads and set(threads) == {threading.current_thread().name}


def test_a_store_runs_in_the_callers_context_and_its_own_errors_stay_its_own() -> None:
    import contextvars

    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="none")
    seen: List[str] = []

    class Traced(MemoryStore):
        def write(self, path: str, text: str) -> None:
            seen.append(request_id.get())
            super().write(path, text)

    request_id.set("r-42")
    Compactor(context_window=16_000, store=Traced()).manage(CONVERSATION)
    assert seen and set(seen) == {"r-42"}

    class OwnTimeout(MemoryStore):
        async def read(self, path: str) -> Optional[str]:  # type: ignore[override]
            raise TimeoutError("the store's own socket timeout")

    async def run() -> Any:
        from context_compactor.stores import TimedStore

        return await TimedStore(OwnTimeout(), 5).read("/a")

    with pytest.raises(TimeoutError, match="the store's own socket timeout"):
        asyncio.run(run())


def test_a_write_if_that_failed_after_landing_counts_as_written() -> None:
    from context_compactor.effects import run_sync, write_if

    class LostReply(MemoryStore):
        def write_if(self, path: str, expected: Optional[str], text: str) -> bool:
            super().write_if(path, expected, text)
            raise ConnectionError("the reply was lost")

    store = LostReply()
    assert run_sync(write_if(store, "/a", None, "mine")) is True
    assert store.read("/a") == "mine"
    with pytest.raises(ConnectionError):
        run_sync(write_if(store, "/a", None, "another"))  # refused, and not ours: the failure


def test_timeouts_must_be_finite() -> None:
    with pytest.raises(CompactorError, match="summarize_timeout"):
        Compactor(summarize_timeout=float("inf"))
