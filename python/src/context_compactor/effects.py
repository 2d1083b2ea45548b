"""The compactor's IO as effects: a run is a generator that yields what it needs done (a store
read or write, a summary, the ``on_pre_compact`` hook, a sleep, a run in the background, or
``("all", [runs])``: several runs whose results come back as a list, at once on an event loop
as the npm host's ``Promise.all``, one after another when driven synchronously), and
is driven here synchronously (``run_sync``) or on an event loop (``drive_async``), so the sync
and async APIs cannot drift apart. ``store_request`` carries out the store calls and sleeps the
core's loop asks for (a summary lease's: ``src/lease.rs``; the state's save): the rules are the
core's, the store calls and the clock are the host's."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import threading
import time
from contextlib import asynccontextmanager, contextmanager
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, FrozenSet, Generator, Iterator, List, Optional, Tuple, TypeVar, cast

from ._threads import call_within, call_within_async, run_awaited
from .codec import well_formed
from .errors import CompactorError, InvalidConfigError
from .stores import FileStore, TimedStore

T = TypeVar("T")

Steps = Generator[Tuple[Any, ...], Any, T]
"""A run: yields effects, is sent each one's result (or has its exception thrown in)."""


#: The compactors (by ``id``) whose call runs in this context: its callbacks (the
#: ``on_pre_compact`` hook, the summarizer, a store) run in it too, on the call's thread, its
#: task, or a thread that copied its context.
_RUNNING: "contextvars.ContextVar[FrozenSet[int]]" = contextvars.ContextVar("context_compactor_running", default=frozenset())


@contextmanager
def one_call(owner: object, what: str) -> Iterator[None]:
    """A call of ``owner`` (a compactor) for the duration: one made from inside another of its
    calls (a callback of that call) would wait for the call it is part of, or break it, so it is
    the typed ``busy`` error instead."""
    running = _RUNNING.get()
    if id(owner) in running:
        raise CompactorError(
            "busy",
            f"{what}: called from inside a call of the same compactor (its on_pre_compact hook, "
            "summarizer or store); a compactor runs one call at a time: make this call after that "
            "one returns",
            {"call": what},
        )
    token = _RUNNING.set(running | {id(owner)})
    try:
        yield
    finally:
        _RUNNING.reset(token)


class CallGate:
    """One call of a compactor at a time, whatever runs it: threads (a sync call waits for the
    one under way), tasks of one event loop or of several (an async call waits without blocking
    its loop), or both at once. A call made from inside a call's callback is ``busy``
    (``one_call``), and so is a sync call made on the thread whose event loop runs an async call
    of the same compactor: it would wait for a call that cannot go on while it waits."""

    def __init__(self, owner: object) -> None:
        self._owner = owner
        self._lock = threading.Lock()
        #: The call under way: ("sync" or "async", the thread it runs on).
        self._holder: Optional[Tuple[str, int]] = None

    @contextmanager
    def sync(self, what: str) -> Iterator[None]:
        with one_call(self._owner, what):
            me = threading.get_ident()
            if self._holder == ("sync", me):
                # Made by ``on_event`` once the call's work is done (``lent``), or a transcript
                # rendered then: part of the call under way on this thread.
                yield
                return
            if self._holder == ("async", me):
                raise CompactorError(
                    "busy",
                    f"{what}: a call of this compactor is under way on this thread's event loop; "
                    f"a compactor runs one call at a time: await that one first, or use the async "
                    f"method (a{what.removeprefix('a')})",
                    {"call": what},
                )
            with self._lock:
                self._holder = ("sync", me)
                try:
                    yield
                finally:
                    self._holder = None

    @asynccontextmanager
    async def entered(self, what: str) -> AsyncIterator[None]:
        with one_call(self._owner, what):
            delay = 0.001
            while not self._lock.acquire(blocking=False):
                await asyncio.sleep(delay)  # a call on another thread or task: its end
                delay = min(delay * 2, 0.02)
            self._holder = ("async", threading.get_ident())
            try:
                yield
            finally:
                self._holder = None
                self._lock.release()

    @contextmanager
    def lent(self) -> Iterator[None]:
        """The call under way on this thread's event loop, lent to a sync call made here (by
        ``on_event``, once the call's work is done)."""
        held = self._holder
        if held is not None and held[0] == "async" and held[1] == threading.get_ident():
            self._holder = ("sync", held[1])
            try:
                yield
            finally:
                self._holder = held
        else:
            yield


def outside_calls(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` as part of no compactor's call: ``on_event``, told once the call's work is
    done, may make a call of the compactor (a ``save_state``), which then runs."""
    context = contextvars.copy_context()
    context.run(_RUNNING.set, frozenset())
    return context.run(fn, *args)


def _detached(steps: Steps[None]) -> "asyncio.Future[None]":
    """A run in the background, as a task outside the call that started it (its context holds
    no call: the summary made ahead may outlive it)."""
    context = contextvars.copy_context()
    context.run(_RUNNING.set, frozenset())
    return context.run(asyncio.ensure_future, _background(steps))


def effect_read(store: FileStore, path: str) -> Steps[Optional[str]]:
    return read_text((yield ("read", store, path)), path)


def read_text(text: Any, path: str) -> Optional[str]:
    """A store read's answer: text, or None when nothing is stored there. Anything else (a
    number, a dict a JSON-parsing backend made, bytes) is a typed ``store_failed`` naming the
    call, never a value taken for text."""
    if text is None or isinstance(text, str):
        return text
    raise CompactorError("store_failed", f"store read of {json.dumps(path)} returned {type(text).__name__}: expected a str, or None when nothing is stored there", {"path": path, "op": "read"})


def listed_paths(paths: Any, prefix: str) -> List[str]:
    """A store list's answer: a list of paths; anything else a typed ``store_failed``."""
    if isinstance(paths, (list, tuple)) and all(isinstance(p, str) for p in paths):
        return list(paths)
    raise CompactorError("store_failed", f"store list of {json.dumps(prefix)} returned {type(paths).__name__}: expected a list of paths (str)", {"path": prefix, "op": "list"})


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
            current = read_text((yield ("read", store, path)), path)
        except Exception as e:
            return {"written": False, "read_error": e}
        return {"written": True} if current == text else {"written": False, "current": current}

    if not callable(getattr(store, "write_if", None)):
        current = read_text((yield ("read", store, path)), path)
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


def wall() -> float:
    """The wall clock in ms, said with each reply to the core's loop: leases are between
    concurrent requests, whatever the compactor's ``now``."""
    return time.time() * 1000


def store_request(store: FileStore, request: Dict[str, Any]) -> Steps[Dict[str, Any]]:
    """Carries out a store call or sleep the core's loop asks for around a summary (its lease:
    ``src/lease.rs``) or the state's save, and says how it went in the loop's words: never an
    exception. ``timeoutMs`` (what is left of a lease's wait) bounds the call within the
    store's own timeout."""
    kind = request["type"]
    try:
        if kind == "sleep":
            yield ("sleep", request["ms"] / 1000)
            return {"type": "woke"}
        timeout = request.get("timeoutMs")
        bounded = store.within(timeout / 1000) if timeout is not None and isinstance(store, TimedStore) else store
        if kind == "read":
            text = read_text((yield ("read", bounded, request["path"])), request["path"])
            return {"type": "read", "text": None if text is None else well_formed(text)}
        if kind == "put":
            yield ("write", bounded, request["path"], request["text"])
            return {"type": "done"}
        outcome = yield from conditional_write(bounded, request["path"], request["expected"], request["text"])
    except AsyncInLoop:
        raise
    except Exception as e:
        return {"type": "failed", "error": message(e)}
    if outcome["written"]:
        return {"type": "saved"}
    if "read_error" in outcome:
        return {"type": "failed", "error": f"the save was refused and the state could not be read back: {message(outcome['read_error'])}"}
    current = outcome["current"]
    return {"type": "refused", "current": None if current is None else well_formed(str(current))}


def message(error: BaseException) -> str:
    """An error in its own words (its type's name when it has none)."""
    return str(error) or type(error).__name__


def perform(effect: Tuple[Any, ...]) -> Any:
    """An effect's call; its result may be an awaitable (an async store or summarizer)."""
    kind = effect[0]
    if kind == "write":
        return effect[1].write(effect[2], effect[3])
    if kind == "read":
        return effect[1].read(effect[2])
    if kind == "list":
        return effect[1].list(effect[2])
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
    """A run in the background of a sync call: ``_background`` on the sync API's event loop
    (``run_awaited``: an async store's connections stay on one loop), watched by a daemon
    thread that ``settled()`` joins."""
    thread = threading.Thread(target=lambda: run_awaited(_background(steps)), name="context-compactor summary", daemon=True)
    thread.start()
    return thread


async def _background(steps: Steps[T]) -> T:
    """A run in the background (a summary asked ahead): a task on the running loop, each
    blocking store call in the loop's executor, a synchronous summarizer on a thread of its own;
    the summarizer within its timeout either way."""
    loop = asyncio.get_running_loop()
    value: Any = None
    error: Optional[BaseException] = None
    while True:
        try:
            effect = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as done:
            return cast(T, done.value)
        value, error = None, None
        try:
            if effect[0] == "all":
                value = list(await asyncio.gather(*(_background(run) for run in effect[1])))
                continue
            if effect[0] == "sleep":
                await asyncio.sleep(effect[1])
                continue
            acall = _async_form(effect)
            if acall is not None:
                value = await _within(acall(effect[2]), effect)
                continue
            if _blocking_callback(effect):
                value = await _callback_async(effect)
                continue
            value = await loop.run_in_executor(None, perform, effect)
            if inspect.isawaitable(value):
                value = await _within(value, effect)
        except Exception as e:
            error = e


#: What each effect calls, in errors.
_EFFECT_NAMES = {"summarize": "summarizer", "ask": "on_pre_compact hook"}


def run_sync(steps: Steps[T]) -> T:
    return cast(T, _all_sync([steps])[0])


def _all_sync(runs: List[Steps[Any]]) -> List[Any]:
    """Several runs at once (``("all", runs)``, as npm's ``Promise.all``), their steps taken in
    turn on the caller's thread. Each round's calls to a store bounded by ``store_timeout``
    (``TimedStore``: each on a thread of its own already) wait together, so that a stalled store
    holds a plan's writes one timeout, not one per write; any other call is made in turn on the
    caller's thread (a store bound to it, ``store_timeout=None``, stays there)."""
    results: List[Any] = [None] * len(runs)
    sent: Dict[int, Tuple[Any, Optional[BaseException]]] = {i: (None, None) for i in range(len(runs))}
    while sent:
        asked: List[Tuple[int, Tuple[Any, ...]]] = []
        for i, (value, error) in sent.items():
            try:
                asked.append((i, runs[i].throw(error) if error is not None else runs[i].send(value)))
            except StopIteration as done:
                results[i] = done.value
        together = [(i, effect) for i, effect in asked if _timed_store_call(effect)] if len(asked) > 1 else []
        sent = dict(zip((i for i, _ in together), _at_once([effect for _, effect in together])))
        for i, effect in asked:
            if i not in sent:
                sent[i] = _carried(effect)
    return results


def _carried(effect: Tuple[Any, ...]) -> Tuple[Any, Optional[BaseException]]:
    """An effect carried out on the caller's thread: its value, or the exception to throw in."""
    try:
        if effect[0] == "all":
            return _all_sync(effect[1]), None
        if _blocking_callback(effect):
            return _callback_blocking(effect), None
        value = perform(effect)
        return (_await_blocking(value, effect) if inspect.isawaitable(value) else value), None
    except Exception as e:
        return None, e


def _timed_store_call(effect: Tuple[Any, ...]) -> bool:
    return effect[0] in ("read", "write", "list", "write-if") and isinstance(effect[1], TimedStore)


def _at_once(effects: List[Tuple[Any, ...]]) -> List[Tuple[Any, Optional[BaseException]]]:
    """Store calls bounded by their ``TimedStore`` made at once, each from a thread of its own (in
    the caller's context); each returns within its bound. An async store's awaitable is awaited
    afterwards, on the caller's thread (``_carried``)."""
    out: List[Tuple[Any, Optional[BaseException]]] = [(None, None)] * len(effects)

    def call(i: int, effect: Tuple[Any, ...]) -> None:
        try:
            out[i] = (perform(effect), None)
        except Exception as e:
            out[i] = (None, e)

    threads = [threading.Thread(target=contextvars.copy_context().run, args=(call, i, e), daemon=True) for i, e in enumerate(effects)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i, ((value, error), effect) in enumerate(zip(out, effects)):
        if error is None and inspect.isawaitable(value):
            try:
                out[i] = (_await_blocking(value, effect), None)
            except Exception as e:
                out[i] = (None, e)
    return out


def _async_form(effect: Tuple[Any, ...]) -> Optional[Callable[[Any], Awaitable[Any]]]:
    """A summarizer or hook that has an async form beside its sync one (``acall``, as the
    LangChain middleware's model summarizer): what the async API awaits."""
    acall = getattr(effect[1], "acall", None) if effect[0] in ("summarize", "ask") else None
    return acall if inspect.iscoroutinefunction(acall) else None


def _blocking_callback(effect: Tuple[Any, ...]) -> bool:
    """Whether ``effect`` calls a synchronous summarizer or ``on_pre_compact`` hook: one that
    may block, and so runs on a thread of its own within ``summarize_timeout`` (``_threads``). A
    stalled one is left behind there and the call goes on: with the core's heuristic summary,
    or as if the hook had returned None."""
    return effect[0] in ("summarize", "ask") and not inspect.iscoroutinefunction(effect[1])


def _no_summary(seconds: float) -> TimeoutError:
    return TimeoutError(f"no summary within {seconds:g} s")


class AsyncInLoop(InvalidConfigError):
    """The sync API over an async store, summarizer or hook, called inside a running event loop
    (which it cannot block on): raised, not taken for a failing store, whose content would stay
    and the call go on with a warning that the coroutine was never awaited."""


class NoAnswer(TimeoutError):
    """An ``on_pre_compact`` hook's awaitable that did not settle within ``summarize_timeout``:
    the call goes on as if it had returned None (as npm's ``onPreCompact``), never a hang."""


def _bound(effect: Tuple[Any, ...]) -> Optional[float]:
    """How long an effect's awaitable may take: the summarizer's and the hook's
    ``summarize_timeout`` (a store bounds its own calls)."""
    return cast(float, effect[3]) if effect[0] in ("summarize", "ask") else None


def _timed_out(effect: Tuple[Any, ...]) -> BaseException:
    """An effect past its bound: no summary, or no answer from the hook."""
    if effect[0] == "summarize":
        return _no_summary(effect[3])
    return NoAnswer(f"on_pre_compact: no answer within {effect[3]:g} s")


async def _within(awaitable: Awaitable[Any], effect: Tuple[Any, ...]) -> Any:
    """``awaitable``'s value within the effect's bound (``_bound``); past it, the effect's
    timeout (``_timed_out``). A ``TimeoutError`` the awaitable raises itself stays its own (a
    hook's is raised, as npm's): not ``asyncio.wait_for``, which cannot tell the two apart."""
    timeout = _bound(effect)
    if timeout is None:
        return await awaitable
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
    except asyncio.CancelledError:
        task.cancel()  # the caller's cancel is the summarizer's too (a paid call, else left on)
        raise
    if not done:
        task.cancel()
        raise _timed_out(effect)
    return task.result()


def _left(effect: Tuple[Any, ...], since: float) -> Tuple[Any, ...]:
    """A summarize or ask effect with what is left of its timeout (a synchronous callback that
    returned an awaitable)."""
    return (*effect[:3], max(effect[3] - (time.monotonic() - since), 0.001))


def _callback_blocking(effect: Tuple[Any, ...]) -> Any:
    since = time.monotonic()
    finished, value = call_within(effect[3], _EFFECT_NAMES[effect[0]], effect[1], effect[2])
    if not finished:
        raise _timed_out(effect)
    return _await_blocking(value, _left(effect, since)) if inspect.isawaitable(value) else value


async def _callback_async(effect: Tuple[Any, ...]) -> Any:
    since = time.monotonic()
    finished, value = await call_within_async(effect[3], _EFFECT_NAMES[effect[0]], effect[1], effect[2])
    if not finished:
        raise _timed_out(effect)
    return await _within(value, _left(effect, since)) if inspect.isawaitable(value) else value


def _await_blocking(awaitable: Awaitable[Any], effect: Tuple[Any, ...]) -> Any:
    """An async store or summarizer called from the sync API: awaited on the sync API's event
    loop (``run_awaited``), unless this thread is already running one (then the caller must use
    the async API)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        if inspect.iscoroutine(awaitable):
            awaitable.close()
        raise AsyncInLoop(
            "invalid_config",
            f"an async {_EFFECT_NAMES.get(effect[0], 'store')} called from sync code inside a running event loop, which it cannot wait on: use amanage/acompact (a LangChain agent: ainvoke/astream), or a sync {_EFFECT_NAMES.get(effect[0], 'store')}",
            {"field": "summarize" if effect[0] == "summarize" else "on_pre_compact" if effect[0] == "ask" else "store"},
        )
    return run_awaited(_within(awaitable, effect))


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
            value = _detached(effect[1])
            continue
        if effect[0] == "sleep":
            await asyncio.sleep(effect[1])
            continue
        try:
            acall = _async_form(effect)
            if effect[0] == "all":
                # At once (the writes of a plan, as npm's Promise.all): each run's own steps
                # still go one at a time under the lock.
                value = list(await asyncio.gather(*(drive_async(run, lock) for run in effect[1])))
            elif acall is not None:
                value = await _within(acall(effect[2]), effect)
            elif _blocking_callback(effect):
                value = await _callback_async(effect)
            else:
                value = perform(effect)
                if inspect.isawaitable(value):
                    value = await _within(value, effect)
        except Exception as e:
            error = e


