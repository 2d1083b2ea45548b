"""A blocking call bounded in time: a store's call (``TimedStore``) or a synchronous summarizer
(``summarize_timeout``); and the one event loop the sync API awaits on (``run_awaited``). It runs on a daemon thread of its own, in the caller's ``contextvars``
context (a framework's store or tracing reads them): a call that stalls keeps only its own
thread, never holds the process at exit, and nothing queues behind it (a shared pool would
fill up with stalled calls)."""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
from typing import Any, Callable, Coroutine, Dict, Optional, Tuple, TypeVar

T = TypeVar("T")


def call_within(seconds: float, name: str, fn: Callable[..., Any], *args: Any) -> Tuple[bool, Any]:
    """``(True, fn(*args))`` when it returned within ``seconds``; ``(False, None)`` when it has
    not (its thread is left to finish on its own). Its exception is raised here."""
    context = contextvars.copy_context()
    box: Dict[str, Any] = {}

    def call() -> None:
        try:
            box["value"] = context.run(fn, *args)
        except BaseException as e:  # raised in the caller below
            box["error"] = e

    thread = threading.Thread(target=call, name=f"context-compactor {name}", daemon=True)
    thread.start()
    thread.join(min(seconds, threading.TIMEOUT_MAX))  # a longer wait is as good as none
    if thread.is_alive():
        return False, None
    if "error" in box:
        raise box["error"]
    return True, box.get("value")


async def call_within_async(seconds: float, name: str, fn: Callable[..., Any], *args: Any) -> Tuple[bool, Any]:
    """``call_within`` from a running event loop, which it never blocks."""
    loop = asyncio.get_running_loop()
    future: "asyncio.Future[Any]" = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, error: Any) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def call() -> None:
        try:
            value, error = context.run(fn, *args), None
        except BaseException as e:  # raised in the caller below
            value, error = None, e
        try:
            loop.call_soon_threadsafe(settle, value, error)
        except RuntimeError:  # the loop closed meanwhile: no one is waiting
            pass

    threading.Thread(target=call, name=f"context-compactor {name}", daemon=True).start()
    # Not wait_for: the call's own TimeoutError must stay its own.
    done, _ = await asyncio.wait({future}, timeout=min(seconds, threading.TIMEOUT_MAX))
    if not done:
        return False, None
    return True, future.result()


_bridge: "Optional[asyncio.AbstractEventLoop]" = None
_bridge_pid = 0
_bridge_lock = threading.Lock()


def bridge_loop() -> "asyncio.AbstractEventLoop":
    """The one event loop on which the sync API awaits (an async store's or summarizer's
    awaitable, a summary made in the background of ``manage``), on a daemon thread of its own,
    started at the first use. One loop, not one per call: an async client's connections are
    bound to the loop they were opened on (redis.asyncio's pool), and a loop per call left them
    on a closed one ("Event loop is closed", for writes that had landed)."""
    global _bridge, _bridge_pid
    with _bridge_lock:
        # A forked child (a prefork server's worker) has the loop but not its thread: a new one.
        if _bridge is None or _bridge.is_closed() or _bridge_pid != os.getpid():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="context-compactor event loop", daemon=True).start()
            _bridge, _bridge_pid = loop, os.getpid()
        return _bridge


def run_awaited(coroutine: "Coroutine[Any, Any, T]") -> "T":
    """``coroutine`` run to its end on :func:`bridge_loop`, this thread waiting (not one that
    runs an event loop itself: it would wait on its own loop's work)."""
    future = asyncio.run_coroutine_threadsafe(coroutine, bridge_loop())
    try:
        return future.result()
    except BaseException:
        future.cancel()  # interrupted (KeyboardInterrupt): the awaited call with it
        raise

