"""One summary per span across the requests of one conversation, in the Python host: two
compactors sharing a ``state_path`` that compact the same conversation at once ask the summarizer
once (the core's lease beside the state, ``src/lease.rs``, holds the summary for the other); a
lease left by a request that died is taken over once it expires; a failing summarizer releases
it. The same rules and files as the npm package (js/test/summary-lease.test.mjs)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any, Dict, List

from context_compactor import Compactor, MemoryStore
from context_compactor import _core

PATH = "/state/compactor.json"
WORDS = ["window", "budget", "cache"]


def prose(seed: int, words: int) -> str:
    return " ".join(f"{WORDS[(i + seed) % 3]} {seed}.{i}" for i in range(words))


CHAT: List[Dict[str, Any]] = [
    m
    for t in range(40)
    for m in (
        {"role": "user", "content": f"Question {t}: {prose(t, 120)}"},
        {"role": "assistant", "content": f"Answer {t}: {prose(t + 1, 160)}"},
    )
]


class Slow:
    """A summarizer that takes ``seconds`` and counts its calls (thread-safe)."""

    def __init__(self, seconds: float = 0.2) -> None:
        self.seconds = seconds
        self.calls: List[int] = []
        self.lock = threading.Lock()

    def __call__(self, request: Dict[str, Any]) -> str:
        with self.lock:
            self.calls.append(len(request["prompt"]))
        time.sleep(self.seconds)
        return f"## Session Intent\nThe shared summary ({len(request['prompt'])})."


def test_two_requests_racing_on_one_span_ask_the_summarizer_once() -> None:
    store = MemoryStore()
    slow = Slow()
    a = Compactor(context_window=8_000, store=store, state_path=PATH, summarize=slow)
    b = Compactor(context_window=8_000, store=store, state_path=PATH, summarize=slow)
    results: Dict[str, Any] = {}
    threads = [threading.Thread(target=lambda c=c, k=k: results.__setitem__(k, c.compact(CHAT))) for k, c in (("a", a), ("b", b))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(slow.calls) == 1, f"summarizer calls: {len(slow.calls)}"
    assert results["a"].messages == results["b"].messages
    assert "The shared summary" in results["a"].messages[0]["content"]
    leases = store.list(f"{PATH}.summaries/")
    assert len(leases) == 1
    assert json.loads(store.read(leases[0]) or "{}")["summary"].startswith("## Session Intent")
    # The lease is where the npm package puts it (the core names it for both hosts).
    prompt_path = leases[0]
    assert prompt_path.startswith(f"{PATH}.summaries/") and len(prompt_path.rsplit("/", 1)[1]) == len("0123456789abcdef.json")

    # Without a state_path every compactor asks on its own.
    own = Slow(0.05)
    for _ in range(2):
        Compactor(context_window=8_000, summarize=own).compact(CHAT)
    assert len(own.calls) == 2


def test_async_requests_share_the_lease_too() -> None:
    store = MemoryStore()
    calls: List[str] = []

    async def summarize(request: Dict[str, Any]) -> str:
        calls.append(request["prompt"])
        await asyncio.sleep(0.1)
        return "## Session Intent\nShared, async."

    async def both() -> List[Any]:
        a = Compactor(context_window=8_000, store=store, state_path=PATH, summarize=summarize)
        b = Compactor(context_window=8_000, store=store, state_path=PATH, summarize=summarize)
        return list(await asyncio.gather(a.acompact(CHAT), b.acompact(CHAT)))

    ra, rb = asyncio.run(both())
    assert len(calls) == 1
    assert ra.messages == rb.messages


def test_a_lease_left_unfulfilled_is_taken_over_once_it_expires() -> None:
    store = MemoryStore()
    slow = Slow(0.01)
    plan = Compactor(context_window=8_000).plan(CHAT, trigger="manual")
    prompt = next(a for a in plan["actions"] if a["type"] == "summarize")["request"]["prompt"]
    path = _core.call("lease-path", PATH, prompt)
    store.write(path, json.dumps({"owner": "dead", "until": time.time() * 1000 + 300}))
    started = time.monotonic()
    result = Compactor(context_window=8_000, store=store, state_path=PATH, summarize=slow, summarize_timeout=1).compact(CHAT)
    assert len(slow.calls) == 1
    assert time.monotonic() - started >= 0.25, "it waited for the lease to expire"
    assert "The shared summary" in result.messages[0]["content"]


def test_a_failing_summarizer_releases_the_lease() -> None:
    store = MemoryStore()
    calls: List[int] = []

    def failing(request: Dict[str, Any]) -> str:
        calls.append(1)
        raise RuntimeError("provider down")

    first = Compactor(context_window=8_000, store=store, state_path=PATH, summarize=failing).compact(CHAT)
    assert "Second try." not in json.dumps(first.messages)
    (lease,) = store.list(f"{PATH}.summaries/")
    assert json.loads(store.read(lease) or "{}")["until"] == 0  # released
    store.delete(PATH)  # the next request plans the same span again, beside the same lease
    second = Compactor(context_window=8_000, store=store, state_path=PATH, summarize=lambda r: "## Session Intent\nSecond try.").compact(CHAT)
    assert "Second try." in second.messages[0]["content"]
    assert len(calls) == 1


def test_a_request_cancelled_during_its_summary_releases_the_lease_for_the_retry() -> None:
    """A client that went away (an ASGI server cancels the request's task) mid-summary: the
    summarizer's own call is cancelled with it and the lease released, so the retry summarizes
    at once. A user's retry waited out the lease, 127 s, before."""
    store = MemoryStore()
    started: List[float] = []
    finished: List[float] = []

    async def summarize(request: Dict[str, Any]) -> str:
        started.append(time.monotonic())
        await asyncio.sleep(2)
        finished.append(time.monotonic())
        return "## Session Intent\nThe summary."

    async def main() -> float:
        first = Compactor(context_window=8_000, store=store, state_path=PATH, summarize=summarize, background=False)
        task = asyncio.ensure_future(first.acompact(CHAT))
        while not started:
            await asyncio.sleep(0.01)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        leases = store.list(f"{PATH}.summaries/")
        assert len(leases) == 1
        assert json.loads(store.read(leases[0]) or "{}").get("until") == 0, "released"
        retry = Compactor(context_window=8_000, store=store, state_path=PATH, summarize=summarize, background=False)
        since = time.monotonic()
        result = await retry.acompact(CHAT)
        assert "The summary." in result.messages[0]["content"]
        # The first one's summarizer call was cancelled with its request.
        await asyncio.sleep(0.1)
        assert len(finished) == 1
        return time.monotonic() - since

    took = asyncio.run(main())
    assert took < 5, f"the retry took {took:.1f} s"


class SlowAsyncStore:
    """An async store over a MemoryStore whose every call awaits first (a network store)."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    async def read(self, path: str) -> Any:
        await asyncio.sleep(0.005)
        return self.store.read(path)

    async def write(self, path: str, text: str) -> None:
        await asyncio.sleep(0.005)
        self.store.write(path, text)

    async def write_if(self, path: str, expected: Any, text: str) -> bool:
        await asyncio.sleep(0.005)
        return self.store.write_if(path, expected, text)

    async def list(self, prefix: str) -> Any:
        await asyncio.sleep(0.005)
        return self.store.list(prefix)

    async def delete(self, path: str) -> None:
        await asyncio.sleep(0.005)
        self.store.delete(path)


def test_a_lease_is_released_though_the_cancel_is_repeated_at_every_await() -> None:
    """A framework's cancel scope (anyio's: Starlette's on a client that went away) cancels the
    task again at every await: the lease's release runs shielded in a task of its own, over an
    async store, and lands anyway (a review: its first await was cancelled, nothing released)."""
    memory = MemoryStore()
    started: List[float] = []

    async def summarize(request: Dict[str, Any]) -> str:
        started.append(time.monotonic())
        await asyncio.sleep(5)
        return "## Session Intent\nThe summary."

    async def main() -> None:
        compactor = Compactor(context_window=8_000, store=SlowAsyncStore(memory), state_path=PATH, summarize=summarize, background=False, store_timeout=None)
        task = asyncio.ensure_future(compactor.acompact(CHAT))
        while not started:
            await asyncio.sleep(0.01)
        while not task.done():  # as a cancel scope does: again at every checkpoint
            task.cancel()
            await asyncio.sleep(0.001)
        for _ in range(200):
            leases = memory.list(f"{PATH}.summaries/")
            if leases and json.loads(memory.read(leases[0]) or "{}").get("until") == 0:
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"not released: {[memory.read(p) for p in memory.list(f'{PATH}.summaries/')]}")

    asyncio.run(main())
