"""A blocking call bounded in time: a store's call (``TimedStore``) or a synchronous summarizer
(``summarize_timeout``). It runs on a daemon thread of its own, in the caller's ``contextvars``
context (a framework's store or tracing reads them): a call that stalls keeps only its own
thread, never holds the process at exit, and nothing queues behind it (a shared pool would
fill up with stalled calls)."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any, Callable, Dict, Tuple


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
