"""The compactor's IO as effects: a run is a generator that yields what it needs done (a store
read or write, a summary, the ``on_pre_compact`` hook, a sleep, a run in the background), and
is driven here synchronously (``run_sync``) or on an event loop (``drive_async``), so the sync
and async APIs cannot drift apart. ``leased`` carries out the core's summary lease run
(``src/lease.rs``): the rules are the core's, the store calls and the clock are the host's."""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
import time
import uuid
from typing import Any, Awaitable, Callable, Dict, Generator, Optional, Tuple, TypeVar, cast

from . import _core
from ._threads import call_within, call_within_async
from .codec import well_formed
from .errors import CompactorError
from .stores import FileStore, TimedStore

T = TypeVar("T")

Steps = Generator[Tuple[Any, ...], Any, T]
"""A run: yields effects, is sent each one's result (or has its exception thrown in)."""


def effect_read(store: FileStore, path: str) -> Steps[Optional[str]]:
    text = yield ("read", store, path)
    return None if text is None else str(text)


def conditional_write(store: FileStore, path: str, expected: Optional[str], text: str) -> Steps[Dict[str, Any]]:
    """Writes ``text`` at ``path`` only while it holds ``expected`` (None: nothing): the store's
    ``write_if`` (compare-and-set) where it has one, else read, compare and write (not atomic:
    a store shared between processes should have ``write_if``). As the npm package's
    ``conditionalWrite``: ``{"written": True}``; or, refused, ``{"written": False, "current":
    <the text there now, read back once>}`` (``"read_error"`` in its place when that read
    failed). A ``write_if`` that was refused or failed is checked by that read: holding ``text``
    it is ours (a client that sent it again after a lost reply); a failure that is not is
    raised."""

    def read_back() -> Steps[Dict[str, Any]]:
        try:
            current = yield ("read", store, path)
        except Exception as e:
            return {"written": False, "read_error": e}
        return {"written": True} if current == text else {"written": False, "current": current}

    if not callable(getattr(store, "write_if", None)):
        current = yield ("read", store, path)
        if current != expected:
            return {"written": False, "current": current}
        yield ("write", store, path, text)
        return {"written": True}
    try:
        done = yield ("write-if", store, path, expected, text)
    except Exception as e:
        # No answer (a store timeout): reading back would wait as long again.
        if not (isinstance(e, CompactorError) and "timeoutMs" in (e.details or {})) and (yield from read_back())["written"]:
            return {"written": True}
        raise
    return {"written": True} if done else (yield from read_back())


def write_if(store: FileStore, path: str, expected: Optional[str], text: str) -> Steps[bool]:
    """``conditional_write``: whether it was written."""
    return bool((yield from conditional_write(store, path, expected, text))["written"])


def _plain_write(store: FileStore, path: str, text: str) -> Steps[bool]:
    yield ("write", store, path, text)
    return True


def _wall() -> float:
    """The wall clock in ms: leases are between concurrent requests, whatever the compactor's
    ``now``."""
    return time.time() * 1000


def leased(
    store: FileStore,
    path: str,
    summarize: Callable[[], Steps[Optional[str]]],
    *,
    timeout: float,
    keep: bool = False,
) -> Steps[Tuple[Optional[str], bool]]:
    """A summary made once across the requests of a conversation, under the lease at ``path``:
    the core's run decides (its rules: ``src/lease.rs``); this carries out what it asks for.
    ``summarize`` runs the summarizer (its text, or None when it failed). Returns the summary
    (None: none) and whether another request made it. ``timeout``: the summarizer's, in
    seconds: a lease holds for it and 5 s more, and a request waits as long for another's
    summary (as the npm package). ``keep``: a summary made without the lease is left at
    ``path`` too (a summary asked ahead, which the next request reads there)."""
    c = _core.core()
    options = json.dumps({"leaseMs": timeout * 1000 + 5_000, "waitMs": timeout * 1000, "keep": keep})
    generation = c.generation
    run = c.call("[static]lease-run.start", well_formed(path), uuid.uuid4().hex, _wall(), options)
    summarized = False

    def call(method: str, *args: Any) -> Any:
        if c.generation != generation:  # the core failed on another thread: the handle is gone
            raise CompactorError("internal", "the core instance was replaced during a summary lease")
        return c.call(f"[method]lease-run.{method}", run, *args)

    try:
        while True:
            io = json.loads(call("io"))
            kind = io["type"]
            if kind == "done":
                return io["text"], bool(io["shared"])
            # Each store call bounded by the run (what is left of the wait), within store_timeout.
            bounded = store.within(io["timeoutMs"] / 1000) if isinstance(store, TimedStore) and "timeoutMs" in io else store
            if kind == "summarize":
                summarized = True
                text = yield from summarize()
                call("handle-summary", None if text is None else well_formed(text), _wall())
            elif kind == "sleep":
                yield ("sleep", io["ms"] / 1000)
                call("handle-woke", _wall())
            elif kind == "read":
                try:
                    read = yield ("read", bounded, io["path"])
                    text = None if read is None else well_formed(str(read))
                except Exception as e:
                    call("handle-read", None, str(e) or type(e).__name__, _wall())
                else:
                    call("handle-read", text, None, _wall())
            else:
                try:
                    written = yield from (write_if(bounded, io["path"], io["expected"], io["text"]) if kind == "write-if" else _plain_write(bounded, io["path"], io["text"]))
                except Exception as e:
                    call("handle-written", False, str(e) or type(e).__name__, _wall())
                else:
                    call("handle-written", bool(written), None, _wall())
    except CompactorError:
        # The core failed (never the store: its failures are outcomes): the summary all the
        # same, directly, unless it was made.
        if summarized:
            raise
        text = yield from summarize()
        return text, False
    finally:
        if c.generation == generation:
            _core.drop(run)


def perform(effect: Tuple[Any, ...]) -> Any:
    """An effect's call; its result may be an awaitable (an async store or summarizer)."""
    kind = effect[0]
    if kind == "write":
        return effect[1].write(effect[2], effect[3])
    if kind == "read":
        return effect[1].read(effect[2])
    if kind == "write-if":
        return effect[1].write_if(effect[2], effect[3], effect[4])
    if kind in ("summarize", "ask"):
        return effect[1](effect[2])
    if kind == "sleep":
        return time.sleep(effect[1])
    if kind == "background":
        return _background_thread(effect[1])
    raise AssertionError(kind)


def _background_thread(steps: Steps[None]) -> threading.Thread:
    """A run in the background of a sync call: ``_background`` on a daemon thread's own event
    loop."""
    thread = threading.Thread(target=lambda: asyncio.run(_background(steps)), name="context-compactor summary", daemon=True)
    thread.start()
    return thread


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


async def _background(steps: Steps[None]) -> None:
    """A run in the background (a summary asked ahead): a task on the running loop, each
    blocking store call in the loop's executor, a synchronous summarizer on a thread of its own;
    the summarizer within its timeout either way."""
    loop = asyncio.get_running_loop()
    value: Any = None
    error: Optional[BaseException] = None
    while True:
        try:
            effect = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration:
            return
        value, error = None, None
        try:
            if effect[0] == "sleep":
                await asyncio.sleep(effect[1])
                continue
            if _summarizer_call(effect):
                value = await _summary_async(effect)
                continue
            value = await loop.run_in_executor(None, perform, effect)
            if inspect.isawaitable(value):
                value = await asyncio.wait_for(_awaited(value), effect[3] if effect[0] == "summarize" else None)
        except asyncio.TimeoutError as e:
            error = _no_summary(effect[3]) if effect[0] == "summarize" else e
        except Exception as e:
            error = e


#: What each effect calls, in errors.
_EFFECT_NAMES = {"summarize": "summarizer", "ask": "on_pre_compact hook"}


def run_sync(steps: Steps[T]) -> T:
    value: Any = None
    error: Optional[BaseException] = None
    while True:
        try:
            effect = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as done:
            return cast(T, done.value)
        value, error = None, None
        try:
            if _summarizer_call(effect):
                value = _summary_blocking(effect)
            else:
                value = perform(effect)
                if inspect.isawaitable(value):
                    value = _await_blocking(value, effect)
        except Exception as e:
            error = e


def _summarizer_call(effect: Tuple[Any, ...]) -> bool:
    """Whether ``effect`` calls a synchronous summarizer: one that may block, and so runs on a
    thread of its own within ``summarize_timeout`` (``_threads``). A stalled one is left behind
    there and the call goes on with the core's heuristic summary."""
    return effect[0] == "summarize" and not inspect.iscoroutinefunction(effect[1])


def _no_summary(seconds: float) -> TimeoutError:
    return TimeoutError(f"no summary within {seconds:g} s")


def _left(effect: Tuple[Any, ...], since: float) -> Tuple[Any, ...]:
    """A summarize effect with what is left of its timeout (a synchronous summarizer that
    returned an awaitable)."""
    return (*effect[:3], max(effect[3] - (time.monotonic() - since), 0.001))


def _summary_blocking(effect: Tuple[Any, ...]) -> Any:
    since = time.monotonic()
    finished, value = call_within(effect[3], "summarizer", effect[1], effect[2])
    if not finished:
        raise _no_summary(effect[3])
    return _await_blocking(value, _left(effect, since)) if inspect.isawaitable(value) else value


async def _summary_async(effect: Tuple[Any, ...]) -> Any:
    since = time.monotonic()
    finished, value = await call_within_async(effect[3], "summarizer", effect[1], effect[2])
    if not finished:
        raise _no_summary(effect[3])
    if inspect.isawaitable(value):
        try:
            value = await asyncio.wait_for(_awaited(value), _left(effect, since)[3])
        except asyncio.TimeoutError:
            raise _no_summary(effect[3]) from None
    return value


def _await_blocking(awaitable: Awaitable[Any], effect: Tuple[Any, ...]) -> Any:
    """An async store or summarizer called from the sync API: run it on a private event loop,
    unless this thread is already running one (then the caller must use the async API)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        if inspect.iscoroutine(awaitable):
            awaitable.close()
        raise CompactorError(
            "invalid_config",
            f"an async {_EFFECT_NAMES.get(effect[0], 'store')} inside a running event loop: use amanage/acompact",
        )
    timeout = effect[3] if effect[0] == "summarize" else None

    async def wait() -> Any:
        try:
            return await asyncio.wait_for(awaitable, timeout)
        except asyncio.TimeoutError:
            if timeout is None:
                raise
            raise _no_summary(timeout) from None

    return asyncio.run(wait())


async def drive_async(steps: Steps[T], lock: threading.RLock) -> T:
    value: Any = None
    error: Optional[BaseException] = None
    while True:
        with lock:
            try:
                effect = steps.throw(error) if error is not None else steps.send(value)
            except StopIteration as done:
                return cast(T, done.value)
        value, error = None, None
        if effect[0] == "background":
            value = asyncio.ensure_future(_background(effect[1]))
            continue
        if effect[0] == "sleep":
            await asyncio.sleep(effect[1])
            continue
        try:
            if _summarizer_call(effect):
                value = await _summary_async(effect)
            else:
                value = perform(effect)
                if inspect.isawaitable(value):
                    timeout = effect[3] if effect[0] == "summarize" else None
                    value = await asyncio.wait_for(value, timeout)
        except asyncio.TimeoutError as e:
            # wait_for's, for a summarizer (a store's own TimeoutError stays its own)
            error = _no_summary(effect[3]) if effect[0] == "summarize" else e
        except Exception as e:
            error = e


