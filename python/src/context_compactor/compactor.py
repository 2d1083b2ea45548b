"""The compactor: plans in the core, executes here, applies in the core — in that order, so
nothing leaves the conversation before it is stored. The Python twin of the npm package's
``Compactor`` (js/src/compactor.ts), kept as thin: the core decides everything; this host syncs
the conversation, writes to the store, asks the summarizer, and reports what happened.

The run is written once, as a generator that yields its IO (store writes, summaries) as
effects; ``manage``/``compact`` perform them synchronously and ``amanage``/``acompact`` await
them, so the sync and async APIs cannot drift apart."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import math
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import (
    Any,
    Awaitable,
    Callable,
    Dict,
    Generator,
    NamedTuple,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
    cast,
)

from . import _core, tokenizers
from .codec import Refs, decode, dumps, encode, find, storable, well_formed
from .effects import AsyncInLoop, NoAnswer, Steps, CallGate, drive_async, effect_read, outside_calls, run_sync, store_request, wall
from .effects import message as _message
from .errors import CompactorError, InvalidConfigError, InvalidMessageError, PlanMismatchError
from .overflow import parse_overflow
from .stores import AGENTS_MD_PATH, FileStore, MemoryStore, TimedStore, check_path
from .tools import RecoveryTool, recovery_tools

Message = Dict[str, Any]
"""An AI SDK ``ModelMessage`` as a dict: ``{"role": "user", "content": "..."}``, content parts
``{"type": "text" | "tool-call" | "tool-result" | ...}`` (docs/API.md)."""

Plan = Dict[str, Any]


_log = logging.getLogger("context_compactor")


class _LazyTranscript(Dict[str, Any]):
    """A ``save-transcript`` action whose ``json`` and ``markdown`` (the bulk of a plan: twice the
    conversation; 11 ms of a 2,000-message dry re-plan) are rendered when first read, as the npm
    package renders them. Every way of reading a value (``[]``, ``get``, ``items``, ``values``,
    iteration, ``==``, ``repr``, ``copy``, ``json.dumps``, ``dict(...)``, ``copy.copy``, pickle)
    renders them first; copies are plain dicts. Rendering raises ``PlanMismatchError`` when the
    planned messages changed so that the transcript differs (and again at the next read)."""

    def __init__(self, action: Dict[str, Any], render: Callable[[], Dict[str, Any]]) -> None:
        super().__init__(action)
        self._render: Optional[Callable[[], Dict[str, Any]]] = render

    def _fill(self) -> None:
        if self._render is None:
            return
        files = self._render()
        self._render = None
        dict.__setitem__(self, "json", files["json"])
        dict.__setitem__(self, "markdown", files["markdown"])

    def __getitem__(self, key: str) -> Any:
        if key in _RENDERED:
            self._fill()
        return dict.__getitem__(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        if key in _RENDERED:
            self._fill()
        return dict.get(self, key, default)

    def __eq__(self, other: object) -> bool:
        self._fill()
        if isinstance(other, _LazyTranscript):
            other._fill()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __reduce_ex__(self, protocol: Any) -> Any:
        self._fill()
        return (dict, (dict.copy(self),))


_RENDERED = ("json", "markdown")


def _filled(name: str) -> Callable[..., Any]:
    method = getattr(dict, name)

    def call(self: _LazyTranscript, *args: Any, **kwargs: Any) -> Any:
        self._fill()
        return method(self, *args, **kwargs)

    call.__name__ = name
    return call


# Written over (not only read): rendered first, so that a later read cannot overwrite them.
for _name in (
    "items", "values", "__iter__", "__repr__", "copy",
    "pop", "popitem", "setdefault", "update", "__setitem__", "__delitem__", "__or__", "__ror__", "__ior__",
):
    setattr(_LazyTranscript, _name, _filled(_name))
Event = Dict[str, Any]

Summarizer = Callable[[Dict[str, Any]], Union[str, Awaitable[str]]]
"""Writes a summary: send ``request["system"]`` and ``request["messages"]`` to an LLM, at most
``request["maxTokens"]`` out, and return the text. Sync or ``async``. An exception, or no
answer within ``summarize_timeout`` seconds, makes the core use its heuristic summary; the
event says so. A synchronous one runs on a thread of its own (in the caller's context) so that
one that stalls is left behind there: the call goes on, never a hang."""

#: Where ``save_state()`` writes by default.
DEFAULT_STATE_PATH = "/state/compactor.json"



@dataclass
class ManageResult:
    """What ``manage``/``compact`` return."""

    messages: List[Message]
    """The conversation to send (the input itself when nothing changed)."""
    events: List[Event]
    """One event per action, in order (``type``, ``status``: applied / fallback / failed ...)."""
    plan: Plan
    """The plan that ran."""
    tokens_before: int
    """Tokens of the conversation given, its recorded compactions replayed (``plan["tokensBefore"]``)."""
    tokens_after: int
    """Tokens of ``messages``, counted after the call: what is sent, failed writes included (their
    content stays), where ``plan["tokensAfter"]`` is the plan's prediction."""
    state_error: Optional[str] = None
    """With ``state_path``: why the state could not be saved (the compaction stands)."""
    cancelled: bool = False
    """``on_pre_compact`` cancelled: nothing new was applied; ``messages`` are the input with
    the recorded compactions replayed (the input itself when there are none)."""
    cancel_overridden: bool = False
    """``on_pre_compact`` cancelled past the hard limit, so the compaction ran anyway."""
    overflow: Optional[Dict[str, Any]] = None
    """From ``recover``: what the provider's overflow error said (``parse_overflow``)."""


@dataclass
class _Held:
    messages: List[Any] = field(default_factory=list)
    marks: List[Any] = field(default_factory=list)
    refs: Refs = field(default_factory=dict)


class Compactor:
    """Keeps a conversation inside its model's context window.

    ``config`` and keyword options are the core's configuration (docs/API.md, "Options"):
    ``model``, ``context_window``, ``max_output_tokens``, ``encoding``, ``preset``,
    ``offload``, ``compaction``, ``cache``, ``history``, ``tools``, ``image_tokens``,
    ``file_tokens`` — snake_case or the core's camelCase. The rest stay in this host:

    - ``store``: where offloaded content and transcripts go (default: a new ``MemoryStore``);
    - ``summarize``: the summarizer (sync or async); without one, the heuristic summary;
    - ``summarize_timeout``: seconds the summarizer may take (default 120), sync or async;
    - ``store_timeout``: seconds a store call may take (default 10): one that has not answered
      by then fails with ``store_failed`` as a failing call does, never a hang (a synchronous
      store's calls run on a thread of their own for this, in the caller's context); None calls
      the store directly, on the caller's thread (a store bound to its thread, such as a
      ``sqlite3`` connection), unbounded;
    - ``state``: a state saved from ``state()`` (stats, calibration, compaction record);
    - ``state_path``: keep the state in ``store`` at this path, loaded now (an async store,
      inside a running event loop: by the first ``amanage``) and saved after every call that
      changed it;
    - ``on_event``: called with every compaction event, in order, once the call's work is done (one
      that raises is logged on the ``context_compactor`` logger, and the call still returns);
    - ``on_pre_compact``: called (sync or async) before tier 2 or 3 or a manual compaction
      runs, with ``{trigger, current_tokens, target_tokens, message_count, plan}``; may return
      ``{"cancel": True}`` (overridden past the hard limit), ``{"custom_instructions": str}``
      (added to the summary's instructions) or ``{"custom_summary": str}`` (used as the
      summary), or None;
    - ``background``: make summaries ahead of need, off the critical path (default: on when
      ``summarize`` is set, unless ``state`` is given without ``state_path``: a compactor made
      per request, which a summary back after it answered would not reach): above ``history.ahead_fraction`` a call asks the summary the lossy
      tier will need and returns without waiting (a thread for ``manage``, a task for
      ``amanage``; the request carries ``"background": True``), and the call that reaches the
      trigger applies it. With ``state_path`` it is kept beside the state
      (``<state_path>.summaries/ahead-<key>.json``) for the next request. ``settled()`` /
      ``asettled()`` wait for it.
    - ``overflow``: ``{"retries": n}``, the harder compactions and retries one model call may
      take after a provider's "prompt too long" (default 1; ``overflow_retries``, which the
      LangChain middleware takes by default), as npm's ``overflow.retries``;
    - ``now``: the clock, milliseconds since the Unix epoch (default ``time.time() * 1000``).
      Each call hands its time to the core and the state records when the last call went out:
      a call after the provider's prompt cache expired (``cache.lifetime_seconds``: Anthropic
      5 minutes, OpenAI 10) takes the edits a warm cache defers (a ``cache-expired`` note).
    """

    def __init__(
        self,
        config: Optional[Mapping[str, Any]] = None,
        *,
        store: Optional[FileStore] = None,
        summarize: Optional[Summarizer] = None,
        summarize_timeout: float = 120.0,
        store_timeout: Optional[float] = 10.0,
        state: Optional[Mapping[str, Any]] = None,
        state_path: Optional[str] = None,
        on_event: Optional[Callable[[Event], None]] = None,
        on_pre_compact: Optional[Callable[[Dict[str, Any]], Any]] = None,
        background: Optional[bool] = None,
        now: Optional[Callable[[], float]] = None,
        overflow: Optional[Mapping[str, Any]] = None,
        _stored: Optional["_Stored"] = None,
        **options: Any,
    ) -> None:
        if config is not None and not isinstance(config, Mapping):
            raise InvalidConfigError(
                "invalid_config",
                f"config must be a mapping of options (or pass them as keywords), got {type(config).__name__}",
                {"field": "config"},
            )
        core_config: Dict[str, Any] = {}
        given: Dict[str, str] = {}  # the core's name -> the app's, for errors
        _once([*(config or {}), *options], "")
        for key, value in [*(config or {}).items(), *options.items()]:
            core_config[_camel(key)] = _option_value(key, value, given)
        bad = _non_finite(core_config, "")
        if bad is not None:
            raise InvalidConfigError("invalid_config", f"{_spelled(bad, given)}: expected a finite number", {"field": _spelled(bad, given)})
        if "tools" in core_config:
            core_config["tools"] = tool_definitions(core_config["tools"])
        # The defaults, the checks and when summaries go to the background: the core's.
        settled = _settle(
            summarize_timeout=summarize_timeout, store_timeout=store_timeout, overflow=overflow, background=background,
            store=store is not None, state=state is not None, state_path=state_path is not None, summarize=summarize is not None,
        )
        if store is None:
            store = MemoryStore()
        missing = [m for m in ("read", "write", "list", "delete") if not callable(getattr(store, m, None))]
        if missing:
            raise InvalidConfigError(
                "invalid_config",
                f"store must implement read, write, list and delete; missing: {', '.join(missing)}",
                {"field": "store"},
            )
        #: Compact-and-retry rounds per model call after an overflow (``overflow["retries"]``).
        self.overflow_retries: int = settled["overflowRetries"]
        for field, callback in (("summarize", summarize), ("on_event", on_event), ("on_pre_compact", on_pre_compact), ("now", now)):
            if callback is not None and not callable(callback):
                raise InvalidConfigError("invalid_config", f"{field} must be callable", {"field": field})
        self.store: FileStore = store
        #: The store as the compactor calls it: every call bounded by ``store_timeout``.
        self._io: FileStore = _bounded(store, settled["storeTimeoutMs"])
        self._summarize = summarize
        self._summarize_timeout: float = settled["summarizeTimeoutMs"] / 1000
        self._on_event = on_event
        self._on_pre_compact = on_pre_compact
        self._state_path = None if state_path is None else check_path(state_path, "state_path")
        stored: Optional[_Stored] = None
        # An async store, from inside a running event loop, cannot be read here: the first call
        # (``amanage``) reads the state and builds the compactor from it (``persist-later``),
        # unless ``create_compactor`` read it (``_stored``).
        later = self._state_path is not None and state is None and _stored is None and _reads_async(store)
        if self._state_path is not None and state is None and not later:
            if _stored is not None:
                stored = _stored
            else:
                try:
                    stored = _read_stored(self._io, self._state_path)
                except Exception as e:
                    stored = _failed_read(e)
            state = stored.state
        self._config_json = dumps(core_config)
        try:
            self._core = _core.CoreCompactor(self._config_json, None if state is None else dumps(state))
        except InvalidConfigError as e:
            raise _in_python_names(e, given) from None
        # A model whose tokenizer the package ships (qwen3, deepseek_v3, ...): loaded, then
        # counted exactly with it (the first core compactor, which estimated, is dropped).
        if tokenizers.ensure_loaded(self.model.get("tokenizer")) and self.model.get("tokenRatio") != 1:
            self._core.close()
            self._core = _core.CoreCompactor(self._config_json, None if state is None else dumps(state))
        if stored is not None:
            # What the next save is conditional on, and whether the state changed since, are the
            # core's (``src/stored.rs`` ``Persist``).
            self._core.call("persist-at", self._state_path, stored.text, True, stored.unread)
        elif self._state_path is not None:
            # Read by the first call: built from it (``later``), or, for a state of the app's,
            # only what the saves are conditional on.
            self._core.call("persist-later", self._state_path, later)
        self._held = _Held()
        self._last: Optional[Tuple[List[Any], List[Any], List[Message]]] = None
        self._now: Callable[[], float] = now if now is not None else (lambda: time.time() * 1000)
        self._calls = 0
        self._lock = threading.RLock()
        #: One call at a time, from threads and event loops alike.
        self._gate = CallGate(self)
        # Summaries made ahead of need (the core's say); those under way (threads or tasks) by
        # key, and the texts back (None: failed) not yet handed to the core.
        self._background: bool = settled["background"]
        self._ahead_runs: Dict[str, Any] = {}
        self._ahead_done: Dict[str, Optional[str]] = {}
        self._ahead_lock = threading.Lock()
        #: Lease releases of cancelled calls, under way (``_abandon``).
        self._releases: set["asyncio.Future[None]"] = set()
        self._input: Sequence[Message] = []
        # The core's notes on the configuration alone (an empty conversation's plan), told once.
        _warn_once(json.loads(self._core.call("plan", "[]", None)))

    # -----------------------------------------------------------------------------------------
    # Reading

    @property
    def model(self) -> Dict[str, Any]:
        """The model as resolved by the registry and the options."""
        return cast(Dict[str, Any], json.loads(self._core.call("model")))

    def plan(
        self,
        messages: Sequence[Message],
        *,
        trigger: str = "auto",
        instructions: Optional[str] = None,
    ) -> Plan:
        """Dry run: what ``manage`` (or, with ``trigger="manual"``, ``compact``) would do.
        Plain data, no IO; a transcript's ``json`` and ``markdown`` render when first read."""
        with self._gate.sync("plan"), self._lock:
            self._sync(messages)
            return self._hydrate(self._core_plan(trigger, instructions), messages)

    def usage(self, messages: Sequence[Message]) -> Dict[str, Any]:
        """``{"tokens", "window", "fraction"}`` of ``messages`` against the window."""
        with self._gate.sync("usage"), self._lock:
            self._sync(messages)
            return cast(Dict[str, Any], json.loads(self._core.call("usage", None)))

    def count_raw(self, messages: Sequence[Message]) -> int:
        """The uncalibrated count of ``messages`` (what ``observe_usage`` pairs with)."""
        with self._gate.sync("count_raw"), self._lock:
            self._sync(messages)
            return int(self._core.call("count-raw", None))

    def observe_usage(self, input_tokens: int, *, predicted_raw: Optional[int] = None) -> None:
        """Feeds the provider's reported input tokens back, for calibration of estimated
        (non-OpenAI) counts: ``input_tokens`` of the prompt ``manage`` last returned (or of a
        prompt whose ``count_raw`` was ``predicted_raw``); a second report of the prompt
        ``manage`` returned is ignored."""
        if isinstance(input_tokens, bool) or not isinstance(input_tokens, (int, float)) or not math.isfinite(input_tokens) or input_tokens < 0:
            return  # as npm: only a finite count is a sample
        with self._lock:
            # One sample per prompt sent (the core's): a second report of it is ignored.
            self._core.call("observe-usage", int(round(input_tokens)), None if predicted_raw is None else int(predicted_raw))

    def state(self) -> Dict[str, Any]:
        """The serializable state: persist it and pass it back as ``state=``."""
        return cast(Dict[str, Any], json.loads(self._core.call("state")))

    def stats(self) -> Dict[str, Any]:
        return cast(Dict[str, Any], json.loads(self._core.call("stats")))

    # -----------------------------------------------------------------------------------------
    # Compacting

    def manage(self, messages: Sequence[Message]) -> ManageResult:
        """Plans, stores what must go (and asks the summarizer), applies. Returns the
        conversation to send. Concurrent calls on one compactor run one after another."""
        with self._gate.sync("manage"), self._lock:
            return run_sync(self._run(messages, "auto", None))

    def compact(self, messages: Sequence[Message], *, instructions: Optional[str] = None) -> ManageResult:
        """Compacts now, whatever the usage: every tier runs and older messages are summarized
        (or truncated, per ``history.strategy``). ``instructions`` steer the summary."""
        with self._gate.sync("compact"), self._lock:
            return run_sync(self._run(messages, "manual", instructions))

    async def amanage(self, messages: Sequence[Message]) -> ManageResult:
        """``manage`` for async code: an async summarizer or store is awaited (the summarizer
        within ``summarize_timeout``)."""
        async with self._gate.entered("amanage"):
            return await self._run_async(self._run(messages, "auto", None))

    async def acompact(self, messages: Sequence[Message], *, instructions: Optional[str] = None) -> ManageResult:
        async with self._gate.entered("acompact"):
            return await self._run_async(self._run(messages, "manual", instructions))

    def recover(self, messages: Sequence[Message], error: BaseException, *, attempt: int = 1) -> ManageResult:
        """Recovers from a provider's "prompt too long" error: ``messages`` is the prompt the
        provider refused, ``error`` what it raised. The provider's count (when the error gives
        one) goes to calibration, then the conversation is compacted harder than ``manage``
        would (as if at the provider's count, against its limit, always below the target) and
        returned for the retry; each event carries ``overflow``. An error that is not an
        overflow is raised again unchanged; an overflow with nothing left to compact is a
        ``CompactorError`` with code ``context_overflow``. The LangChain middleware calls this
        for you."""
        info = _overflow_of(error, "recover")
        if info is None:
            raise error
        with self._gate.sync("recover"), self._lock:
            return run_sync(self._recover(messages, error, info, attempt))

    async def arecover(self, messages: Sequence[Message], error: BaseException, *, attempt: int = 1) -> ManageResult:
        """``recover`` for async code."""
        info = _overflow_of(error, "arecover")
        if info is None:
            raise error
        async with self._gate.entered("arecover"):
            return await self._run_async(self._recover(messages, error, info, attempt))

    def save_state(self, path: Optional[str] = None) -> None:
        """Writes the state to the store; ``load_state(store, path)`` reads it back. At
        ``state_path`` the save is conditional: when another compactor saved there since this
        one last read or saved for this conversation or a later turn of it, this one takes that
        state and writes nothing over it; over an earlier turn's or a deleted state it saves;
        over another branch's it raises ``state_conflict``."""
        path = check_path(path or self._state_path or DEFAULT_STATE_PATH)
        if path != self._state_path:
            return run_sync(self._copy_state(path))
        with self._gate.sync("save_state"), self._lock:
            run_sync(self._save_state(path))

    async def asave_state(self, path: Optional[str] = None) -> None:
        """``save_state`` for async code (an async store is awaited)."""
        path = check_path(path or self._state_path or DEFAULT_STATE_PATH)
        if path != self._state_path:
            return await drive_async(self._copy_state(path), self._lock)
        async with self._gate.entered("asave_state"):
            await self._run_async(self._save_state(path))

    def offload_tool_output(self, tool_name: str, tool_call_id: str, output: T) -> Union[T, str]:
        """Tier 1 at the moment a tool returns: when ``output`` (a str, or JSON data) is over
        the offload threshold, stores it and returns the preview the model should see instead
        (naming the stored path); otherwise returns ``output`` unchanged. A failed store write
        returns ``output`` unchanged, so nothing is lost."""
        with self._gate.sync("offload_tool_output"), self._lock:
            return run_sync(self._offload(tool_name, tool_call_id, output))

    async def aoffload_tool_output(self, tool_name: str, tool_call_id: str, output: T) -> Union[T, str]:
        async with self._gate.entered("aoffload_tool_output"):
            return await self._run_async(self._offload(tool_name, tool_call_id, output))

    def tools(self, *, default_limit: int = 500) -> Dict[str, RecoveryTool]:
        """The recovery tools (``read_file``, ``grep``, ``ls``) over this compactor's store, a
        ``read_file`` page ending at 10 % of the model's window."""
        return recovery_tools(self._io, default_limit=default_limit, context_window=int(self.model["contextWindow"]), state_path=self._state_path)

    def system_prompt(self, base: str, *, memory: Optional[bool] = None) -> str:
        """``base`` with what the agent must know about context management: where offloaded
        content and transcripts are and how to read them back (the recovery tools), and, when
        the store has one, the long-term memory file ``/memories/AGENTS.md``."""
        return run_sync(self._system_prompt(base, memory))

    async def asystem_prompt(self, base: str, *, memory: Optional[bool] = None) -> str:
        """``system_prompt`` for async code (an async store is awaited)."""
        return await drive_async(self._system_prompt(base, memory), self._lock)

    def _system_prompt(self, base: str, memory: Optional[bool]) -> Steps[str]:
        if not isinstance(base, str):
            raise TypeError(f"system_prompt: base must be a str, got {type(base).__name__}")
        asked = None if memory is None else bool(memory)
        try:
            agents_md = None if asked is False else (yield from effect_read(self._io, AGENTS_MD_PATH))
        except CompactorError:
            raise
        except Exception as e:
            # Typed, naming the file (a timeout is one already).
            raise CompactorError("store_failed", f"system_prompt: reading {AGENTS_MD_PATH} failed: {_message(e)}", {"path": AGENTS_MD_PATH, "op": "read"}) from e
        return str(self._core.call("system-prompt", base, asked, agents_md))

    def close(self) -> None:
        """Frees the core's memory for this compactor now (otherwise garbage collection does)."""
        self._core.close()

    # -----------------------------------------------------------------------------------------
    # The run: one generator, its IO yielded as effects.

    def _recover(self, messages: Sequence[Message], error: BaseException, info: Dict[str, Any], attempt: int) -> Steps[ManageResult]:
        # The core's call: the provider's count calibrates first, the events carry ``overflow``,
        # and nothing left to compact is its ``context_overflow`` (raised from ``error``).
        if not isinstance(attempt, int) or isinstance(attempt, bool) or attempt < 1:
            raise TypeError(f"recover: attempt must be a whole number >= 1, got {attempt!r}")
        result = yield from self._run(messages, "auto", None, overflow=({**info, "attempt": attempt}, error))
        result.overflow = info
        return result

    def _run(self, input: Sequence[Message], trigger: str, instructions: Optional[str], overflow: Optional[Tuple[Dict[str, Any], BaseException]] = None) -> Steps[ManageResult]:
        """One call: the core's loop (``Session`` and what the binding adds around it:
        docs/LOOP.md) on the conversation as it is now. The host only carries out the loop's
        requests: store writes, the summarizer, the ``on_pre_compact`` hook, sending every
        message again (``resync``), the conversation's hashes and, with ``state_path``, the
        state's conditional save. A save lost to another request is the core's to judge: it
        builds itself again on the stored state and runs the call again, answers unsaved, or
        says ``conflict`` (a ``state_conflict``). Events reach ``on_event`` once."""
        if instructions is not None and not isinstance(instructions, str):
            raise TypeError(f"compact: instructions must be a str, got {type(instructions).__name__}")
        self._calls += 1
        self._input = input  # the conversation a save is for (``_conversation``)
        self._offer_done()
        ctx = _Call(self._rebase(input), input)
        whole = self._sync(ctx.messages)
        core_options: Dict[str, Any] = {"trigger": trigger, "instructions": instructions, "now": self._time()}
        if self._background:
            core_options["background"] = True
        if overflow is not None:
            core_options["overflow"] = overflow[0]
        if not whole:
            # As npm: only part of the conversation crossed, so the core plans dry first and
            # asks for the rest (``resync``) when there is work.
            core_options["partial"] = True
        if self._state_path is not None and self._summarize is not None:
            # The call's summaries under a lease beside the state (the core's, src/lease.rs):
            # racing requests of one span ask the summarizer once.
            core_options["lease"] = self._lease()
        result = yield from self._session(ctx, dumps(core_options), trigger, self._calls)
        self._tell(result.events)
        if ctx.overflow is not None:
            # A recovery that had nothing left to compact: the core's verdict, after the call's
            # end (its state saved).
            raise CompactorError("context_overflow", ctx.overflow["message"], ctx.overflow["details"]) from (overflow[1] if overflow else None)
        return result

    def _tell(self, events: List[Event]) -> None:
        """``events`` told to ``on_event``, once the call's work is done: a call of this
        compactor it makes runs (as in npm, where it is queued after this one)."""
        if self._on_event is not None:
            with self._gate.lent():
                for event in events:
                    try:
                        outside_calls(self._on_event, event)
                    except Exception:
                        # The call's work is done and saved: its result must reach the app.
                        _log.exception("on_event raised (event: %s; the call's result is kept, the other events told)", event.get("strategy"))

    def _session(self, ctx: "_Call", options: str, trigger: str, call: int) -> Steps[ManageResult]:
        """Drives the core's loop: carries out its requests and hands back each outcome, until
        it is done."""
        held = self._held
        self._held = _Held()  # the session holds the conversation
        ctx.refs = held.refs

        def resynced() -> None:
            nonlocal held
            if self._held.messages:  # every message crossed again (``resync``)
                held, self._held = self._held, _Held()
                ctx.refs = held.refs

        step = yield from self._call(options, ctx, trigger, resynced)
        messages, refs = ctx.messages, ctx.refs
        plan = self._hydrated(step["plan"], messages, refs, written=ctx.written)
        # The messages as given, or as the core changed them (applied, or a cancel that put
        # recorded edits back); once applied, what the core holds (and ``_rebase`` continues).
        out = _as_given(step["messages"], messages) if step["changed"] else list(messages)
        events: List[Event] = step["events"] if step["applied"] else []
        for event in events:
            event["call"] = call
        result = ManageResult(
            out, events, plan, int(step["tokensBefore"]), int(step["tokensAfter"]), cancelled=bool(step["cancelled"]), cancel_overridden=bool(step["cancelOverridden"])
        )
        ctx.overflow = step.get("overflow")  # a recovery's failure, raised by ``_run``
        self._held = _Held(list(out), [_mark(m) for m in out], refs) if step["applied"] else held
        if step["applied"]:
            self._last = (list(ctx.input), [_mark(m) for m in ctx.input], result.messages)
        if step.get("stateError") is not None:
            result.state_error = str(step["stateError"])
        return result

    def _call(self, options: str, ctx: "_Call", trigger: str, between: Optional[Callable[[], None]] = None) -> Steps[Dict[str, Any]]:
        """One call of the core's loop (``options``: a ``manage``, ``compact`` or ``recover``, or
        ``{"save": true}``), its requests carried out until it is done. A store that keeps
        refusing the state's saves: a ``state_conflict``."""
        self._core.call("session-start", options)
        # Decoded with the conversation's binary values: a done step's messages are used as they
        # come (no second pass over the conversation).
        done = yield from _drive(
            lambda: decode(self._core.call("session-poll"), ctx.refs),
            lambda id, reply: self._core.call("session-handle", id, reply),
            lambda request, step: self._carry_out(request, step.get("plan"), ctx, trigger),
            "session",
            between,
        )
        conflict = done.get("conflict")
        if conflict is None:
            return done
        self._held = _Held()
        raise CompactorError("state_conflict", conflict["message"], {"path": self._state_path, "attempts": conflict["attempts"], "revision": conflict["revision"]})

    def _carry_out(
        self, request: Dict[str, Any], plan: Optional[Plan], ctx: "_Call", trigger: str
    ) -> Steps[Dict[str, Any]]:
        """One request of the core's loop, and how it went (never an exception, but a hook's)."""
        kind = request["type"]
        messages, refs = ctx.messages, ctx.refs
        if kind == "resync":
            if request.get("rerun"):
                # Built again on the stored state after a lost save: the call's own messages
                # cross, not the last result's continuation (``_rebase``).
                self._last = None
                ctx.messages = ctx.input
            self._sync(ctx.messages, fresh=True)
            return {"type": "done"}
        if kind == "conversation":
            return {"type": "conversation", "conversation": self._conversation(ctx.input)}
        if kind == "background":
            yield from self._ask_ahead(request["ahead"], refs)
            return {"type": "done"}
        if kind in ("read", "save", "put", "sleep"):
            return (yield from store_request(self._io, request))
        if kind == "write":
            content = storable(_app_json(_output_at(request.get("output"), messages), request["content"]), refs)
            ctx.written[request["path"]] = content
            return (yield from self._write(request["path"], content, {}))
        if kind == "summarize":
            summary_request = request["summary"]["request"]
            summary_request["messages"] = [{"role": "user", "content": summary_request["prompt"]}]
            self._continued(summary_request, refs)
            return (yield from self._summary(summary_request))
        if kind == "ask":
            if self._on_pre_compact is None:
                return {"type": "decision"}
            ask = request["preCompact"]
            context = {
                "trigger": trigger,
                "current_tokens": ask["currentTokens"],
                "target_tokens": ask["targetTokens"],
                "message_count": ask["messageCount"],
                "plan": self._hydrated(plan or {"actions": []}, messages, refs, session=True),
            }
            try:
                # An async hook within ``summarize_timeout``, as npm's: a stall is no decision.
                decision = yield ("ask", self._on_pre_compact, context, self._summarize_timeout)
            except NoAnswer:
                decision = None
            return {"type": "decision", **_decision(decision)}
        raise CompactorError("internal", f"session: unknown request {kind!r}")

    def _summary(self, request: Dict[str, Any]) -> Steps[Dict[str, Any]]:
        """The summarizer's text for ``request``, or why it failed, in the loop's words."""
        if self._summarize is None:
            return {"type": "failed", "error": "no summarizer configured (summarize=)"}
        try:
            text = yield ("summarize", self._summarize, request, self._summarize_timeout)
            if not isinstance(text, str):
                raise TypeError(f"summarize returned {type(text).__name__}, not a str")
            return {"type": "text", "text": text}
        except AsyncInLoop:
            raise
        except Exception as e:
            return {"type": "failed", "error": _message(e)}

    def _offload(self, tool_name: str, tool_call_id: str, output: T) -> Steps[Union[T, str]]:
        """The output crosses as JSON (its binary values by placeholder); whether it goes, where,
        and what the model sees instead are the core's (``src/offload.rs``): this only writes."""
        if output is None:
            return output
        for field, name in (("tool_name", tool_name), ("tool_call_id", tool_call_id)):
            if not isinstance(name, str):
                raise InvalidMessageError("invalid_message", f"offload_tool_output: {field} must be a str, got {type(name).__name__}", {"field": field})
        refs: Refs = {}
        try:
            output_json = encode([output], refs)[1:-1]
        except CompactorError as e:
            # Named as this call's: the output is no message of the app's.
            message = e.message.removeprefix("message 0: ").removeprefix("messages: ")
            details = {k: v for k, v in e.details.items() if k != "index"}
            raise type(e)(e.code, f"offload_tool_output: the output of tool {tool_name} (call {tool_call_id}): {message}", {**details, "tool_name": tool_name, "tool_call_id": tool_call_id}) from e
        # Names as the core holds text (a lone surrogate as U+FFFD, as npm's binding does).
        run = self._core.call("offload-start", well_formed(tool_name), well_formed(tool_call_id), output_json, isinstance(output, str))
        value = None if isinstance(output, str) else {"type": "json", "value": output}
        done = False
        try:
            step = yield from _drive(
                lambda: decode(str(self._core.call("offload-poll", run)), refs),
                lambda id, reply: self._core.call("offload-handle", run, id, reply),
                lambda request, _: self._write(request["path"], _app_json(value, request["content"]), refs),
                "offload_tool_output",
            )
            done = True
            self._tell(step["events"])
            return output if step["preview"] is None else cast(str, step["preview"])
        finally:
            if not done:
                self._core.call("offload-drop", run)

    def _write(self, path: str, content: str, refs: Refs) -> Steps[Dict[str, Any]]:
        """A store write the core asked for (``refs``: the binary values its placeholders
        stand for), and how it went."""
        try:
            yield ("write", self._io, path, storable(content, refs))
            return {"type": "done"}
        except AsyncInLoop:
            raise
        except Exception as e:
            return {"type": "failed", "error": _message(e)}

    def _continued(self, request: Dict[str, Any], refs: Refs) -> None:
        """A summary request's continuation (the core offers one with a prompt cache, when it
        costs less): its ``messages`` are the conversation the core holds, as planned, up to
        the span's end, then the instruction — the agent's own cached prompt, continued. A
        summarizer that sends them to the agent's model (with the agent's tools, so that the
        prefix matches) reads the span from the cache; one that answers with a tool call must
        fall back to the plain request (``prompt``)."""
        continuation = request.get("continuation")
        if not isinstance(continuation, dict):
            return
        prefix = decode(str(self._core.call("planned-prefix", int(continuation["end"]))), refs)
        continuation["messages"] = [*prefix, {"role": "user", "content": continuation["instruction"]}]

    def _ask_ahead(self, ahead: Dict[str, Any], refs: Refs) -> Steps[None]:
        """Starts the plan's summary ahead of need in the background, once per key; the core
        recorded the ask at the call's end (saved with the state)."""
        key = str(ahead["aheadKey"])
        with self._ahead_lock:
            if key in self._ahead_runs:
                return
        planned = ahead["request"]
        request = {"system": planned["system"], "prompt": planned["prompt"], "messages": [{"role": "user", "content": planned["prompt"]}], "maxTokens": planned["maxTokens"], "background": True}
        if planned.get("continuation") is not None:
            # The prefix is the conversation as planned now (the core holds it now, not later).
            request["continuation"] = dict(planned["continuation"])
            self._continued(request, refs)
        run = yield ("background", self._ahead_run(key, request))
        with self._ahead_lock:
            if key not in self._ahead_done:
                self._ahead_runs[key] = run

    def _ahead_run(self, key: str, request: Dict[str, Any]) -> Steps[None]:
        """The summary asked ahead under ``key``, in the background; with ``state_path`` under
        the core's lease beside the state (its ``ahead-run``: instances that ask the same span
        at once make it once, and the next request, on any instance, reads it there)."""
        text: Optional[str] = None
        run: Any = None
        c: Any = None
        generation = 0
        try:
            c = _core.core()
            generation = c.generation

            def call(method: str, *args: Any) -> Any:
                if c.generation != generation:  # the core failed on another thread: the handle is gone
                    raise CompactorError("internal", "the core instance was replaced during a background summary")
                return c.call(f"[method]ahead-run.{method}", run, *args)

            run = c.call("[static]ahead-run.start", dumps({"statePath": self._state_path, "key": key, **self._lease()}))

            def asked(asked: Dict[str, Any], _: Any) -> Steps[Dict[str, Any]]:
                if asked["type"] != "summarize":
                    return (yield from store_request(self._io, asked))
                return (yield from self._summary(request))

            text = (yield from _drive(lambda: json.loads(call("poll")), lambda id, reply: call("handle", id, reply), asked, "background summary"))["text"]
        finally:
            if run is not None and c is not None and c.generation == generation:
                _core.drop(run)
            # Whatever happened (a failure here is the summary's: the lossy tier summarizes in
            # the call), the run is over: ``settled()`` must not wait for it again.
            with self._ahead_lock:
                self._ahead_done[key] = text  # the core judges it (an empty text it forgets)
                self._ahead_runs.pop(key, None)

    def _lease(self) -> Dict[str, Any]:
        """This request's summary leases: its random id, the summarizer's time (ms) and the
        wall clock."""
        return {"owner": uuid.uuid4().hex, "summarizeTimeoutMs": self._summarize_timeout * 1000, "wall": wall()}

    def _offer_done(self) -> None:
        """The summaries made in the background since, to the core (the background runs never
        touch it: they leave their text here)."""
        with self._ahead_lock:
            done, self._ahead_done = self._ahead_done, {}
        for key, text in done.items():
            if text is not None:
                self._core.call("offer-summary", key, text)
            else:
                self._core.call("forget-ahead", key)

    def settled(self) -> None:
        """Waits for every summary made in the background by ``manage`` (threads), and hands
        their texts to the core, so ``state()`` holds them (as npm's ``settled()``)."""
        while True:
            with self._ahead_lock:
                runs = [r for r in self._ahead_runs.values() if isinstance(r, threading.Thread)]
            if not runs:
                break
            for run in runs:
                run.join()
        with self._lock:
            self._offer_done()

    async def asettled(self) -> None:
        """Waits for every summary made in the background (tasks of ``amanage``, threads of
        ``manage``), and hands their texts to the core, as ``settled()``."""
        while True:
            with self._ahead_lock:
                runs = list(self._ahead_runs.values())
            if not runs:
                break
            for run in runs:
                if isinstance(run, threading.Thread):
                    await asyncio.get_running_loop().run_in_executor(None, run.join)
                else:
                    await asyncio.gather(run, return_exceptions=True)
        async with self._gate.entered("asettled"):
            with self._lock:
                self._offer_done()

    def _copy_state(self, path: str) -> Steps[None]:
        """The state as it is now, written at ``path`` (not the state path): no call of the
        core's loop, so it may be made at any time (as npm's)."""
        try:
            yield ("write", self._io, path, dumps(self.state()))
        except CompactorError:
            raise
        except Exception as e:
            # Typed, naming the file, as a store that stalls is.
            raise CompactorError("store_failed", f"save_state: writing {path} failed: {_message(e)}", {"path": path, "op": "write"}) from e

    def _save_state(self, path: str) -> Steps[None]:
        # The core's call (``save``): conditional on what was last read or saved
        # (``src/stored.rs`` ``Persist``): what one another compactor beat does is the core's.
        done = yield from self._call(dumps({"save": True}), _Call([], self._input), "auto")
        if done.get("stateError") is not None:
            raise CompactorError("store_failed", str(done["stateError"]), {"path": path, "op": "write"})

    @staticmethod
    def _conversation(messages: Sequence[Message]) -> str:
        """The ``conversation`` a state is saved for: each message's JSON (binary values by
        their size), hashed by the core."""
        return str(_core.call("conversation-hashes", [well_formed(json.dumps(m, ensure_ascii=False, separators=(",", ":"), default=_bin_size)) for m in messages]))

    # -----------------------------------------------------------------------------------------
    # The conversation the core holds

    def _sync(self, messages: Sequence[Message], fresh: bool = False) -> bool:
        """Makes the core hold ``messages``. The unchanged prefix (the same objects, with the
        same sizes) stays in the core and only the rest crosses (a conversation that grew by
        one message sends one message). ``fresh`` sends everything. Returns whether every
        message crossed (then the held conversation is as fresh as ``fresh`` makes it)."""
        if not isinstance(messages, (list, tuple)):
            self._held = _Held()
            self._core.call("sync", 0, encode(messages, {}))
            return True
        held = self._held
        marks = [_mark(m) for m in messages]
        keep = 0
        if not fresh:
            limit = min(len(messages), len(held.messages))
            while keep < limit and messages[keep] is held.messages[keep] and marks[keep] == held.marks[keep]:
                keep += 1
            if keep == len(messages) == len(held.messages):
                return False
        refs = held.refs if keep else {}
        appended = encode(list(messages[keep:]), refs, keep)
        self._held = _Held()
        self._core.call("sync", keep, appended)
        self._held = _Held(list(messages), marks, refs)
        return keep == 0

    def _rebase(self, messages: Sequence[Message]) -> Sequence[Message]:
        """A conversation that starts with the last compaction's input continues from its
        output (a shortcut: the core's compaction record would replay the same edits onto the
        raw history, at the cost of sending it all)."""
        last = self._last
        if last is None or not isinstance(messages, (list, tuple)) or len(messages) < len(last[0]):
            return messages
        for i, (old, mark) in enumerate(zip(last[0], last[1])):
            if messages[i] is not old or _mark(messages[i]) != mark:
                return messages
        return list(last[2]) + list(messages[len(last[0]):])

    def _core_plan(self, trigger: str, instructions: Optional[str]) -> str:
        options: Dict[str, Any] = {"trigger": trigger, "instructions": instructions, "now": self._time()}
        if self._background:
            options["background"] = True  # the summary manage would ask ahead shows too
        return str(self._core.call("plan", None, dumps(options)))

    def _time(self) -> int:
        """The clock's time, whole milliseconds (a bad clock is a typed error)."""
        now = self._now()
        if isinstance(now, bool) or not isinstance(now, (int, float)) or not math.isfinite(now) or now < 0:
            raise InvalidConfigError("invalid_config", f"now() must return milliseconds since the Unix epoch, got {now!r}", {"field": "now"})
        return int(now)

    def _hydrate(self, plan_json: str, messages: Sequence[Message]) -> Plan:
        """The plan with what the core left out restored: a summary request's ``messages``, and
        each transcript's ``json`` and ``markdown``, rendered from ``messages`` when first read
        (``_LazyTranscript``)."""
        return self._hydrated(decode(plan_json, self._held.refs), messages, self._held.refs)

    def _hydrated(self, plan: Plan, messages: Sequence[Message], refs: Refs, session: bool = False, written: Optional[Mapping[str, str]] = None) -> Plan:
        """``_hydrate`` of a parsed plan; in a ``session``, the core's session holds the
        conversation (nothing is synced). ``written``: the files a call wrote, path -> text; a
        transcript it wrote is its text (the core holds the compacted conversation now)."""
        actions: List[Dict[str, Any]] = plan["actions"]
        for i, action in enumerate(actions):
            if action["type"] == "summarize":
                action["request"]["messages"] = [{"role": "user", "content": action["request"]["prompt"]}]
            if action["type"] != "save-transcript":
                continue
            if written is not None and action["path"] in written and action["readablePath"] in written:
                action["json"], action["markdown"] = written[action["path"]], written[action["readablePath"]]
                continue
            actions[i] = _LazyTranscript(action, self._transcript(messages, action["lossyStrategy"], action, session))
        return plan

    def _transcript(self, messages: Sequence[Message], strategy: str, action: Dict[str, Any], session: bool = False) -> Callable[[], Dict[str, Any]]:
        """Renders the transcript a plan of ``messages`` saves (``PlanMismatchError`` when they
        changed so that it differs from the planned one)."""

        def render() -> Dict[str, Any]:
            # A dry plan's: the conversation synced again, one call at a time.
            with self._gate.sync("plan") if not session else contextlib.nullcontext(), self._lock:
                if not session:
                    self._sync(messages)
                files = cast(Dict[str, Any], json.loads(self._core.call("transcript", None, strategy)))
            if files["path"] != action["path"]:
                raise PlanMismatchError(
                    "plan_mismatch",
                    f"the conversation differs from the one planned (transcript {action['path']}): was it changed in place?",
                    {"actionId": action["id"]},
                )
            return files

        return render

    async def _run_async(self, steps: Steps[T]) -> T:
        # The core calls inside the run are synchronous; the thread lock keeps a sync call from
        # another thread out of them while this run awaits an effect.
        try:
            return await drive_async(steps, self._lock)
        except asyncio.CancelledError:
            await self._abandon()
            raise

    async def _abandon(self) -> None:
        """A call cancelled before it was done (a client that went away): the core ends it and
        says the store writes that release its summary leases, carried out here so that the
        conversation's next request does not wait out a lease. They run in a task of their own,
        shielded (a framework's cancel scope cancels every await of the cancelled task again:
        anyio's, Starlette's), each within ``store_timeout`` (or the lease's time when the store
        is unbounded); a failure is ignored. Nothing is saved, and the next call syncs its
        messages anew."""
        with self._lock:
            self._held = _Held()
            try:
                releases = json.loads(self._core.call("session-abandon"))
            except CompactorError:
                return
        if not releases:
            return
        bound = self._summarize_timeout + 5

        async def release_all() -> None:
            for release in releases:
                try:
                    await asyncio.wait_for(drive_async(store_request(self._io, release["request"]), self._lock), bound)
                except BaseException:
                    pass

        task = asyncio.ensure_future(release_all())
        self._releases.add(task)  # held until done: the loop keeps only weak references
        task.add_done_callback(self._releases.discard)
        try:
            await asyncio.shield(task)
        except BaseException:
            pass  # cancelled again: the releases go on in their task


def _drive(
    poll: Callable[[], Dict[str, Any]],
    handle: Callable[[int, str], Any],
    carry: Callable[[Dict[str, Any], Dict[str, Any]], Steps[Dict[str, Any]]],
    what: str,
    between: Optional[Callable[[], None]] = None,
) -> Steps[Dict[str, Any]]:
    """The one loop of each of the core's runs (a call, a tool output's offload, a summary made
    ahead): polls its requests, carries out each batch at once (as npm's host), hands back every
    outcome with the wall clock, until it is done. ``between``: after each batch."""
    while True:
        step = poll()
        if step["type"] == "done":
            return step
        if step["type"] != "io":
            raise CompactorError("internal", f"{what}: waiting with no request out")
        replies = yield ("all", [carry(io["request"], step) for io in step["ios"]])
        for io, reply in zip(step["ios"], replies):
            handle(io["id"], dumps({**reply, "now": wall()}))
        if between is not None:
            between()


def _overflow_of(error: Any, what: str) -> Any:
    """``error``'s overflow (``parse_overflow``), or None; what is not an exception is a
    typed error naming the call (``raise`` would say only that causes derive from
    BaseException)."""
    if not isinstance(error, BaseException):
        raise InvalidConfigError(
            "invalid_config",
            f"{what}: error must be the exception the provider's call raised, got {type(error).__name__}",
            {"field": "error"},
        )
    return parse_overflow(error)


#: Model names already warned about in this process.
_warned: set[str] = set()


def _warn_once(plan: Mapping[str, Any]) -> None:
    """An unknown model (the plan's ``unknown-model`` note: no registry entry, no
    ``context_window``) is planned against a small default window: logged (the
    ``context_compactor`` logger) once per name per process, as plans' notes are seldom read."""
    for note in plan.get("notes", []):
        if note.get("type") != "unknown-model" or note["name"] in _warned:
            continue
        _warned.add(note["name"])
        meant = " or ".join(f'"{name}"' for name in note.get("didYouMean", []))
        _log.warning(
            'unknown model "%s": planned against a %s-token window.%s Give its context_window (and max_output_tokens), or a name the registry knows (model_info).',
            note["name"],
            f"{note['assumedWindow']:,}",
            f" Did you mean {meant}?" if meant else "",
        )


def load_state(store: FileStore, path: str = DEFAULT_STATE_PATH) -> Optional[Dict[str, Any]]:
    """A state saved by ``save_state()`` (or ``state_path``), or None when there is none. A
    file that is not a state is a typed error, not silently ignored."""
    return _read_stored(store, check_path(path)).state


async def aload_state(store: FileStore, path: str = DEFAULT_STATE_PATH) -> Optional[Dict[str, Any]]:
    """``load_state`` for async code (an async store is awaited)."""
    path = check_path(path)
    text = await drive_async(effect_read(store, path), threading.RLock())
    return _parse_stored(text, path).state


class _Call:
    """The conversation of the call under way: as the core holds it (``messages``, with the
    binary values their JSON refers to, ``refs``) and as the app gave it (``input``)."""

    def __init__(self, messages: Sequence[Message], input: Sequence[Message]) -> None:
        self.messages = messages
        self.input = input
        self.refs: Refs = {}
        #: The files the call wrote, path -> text as stored: a transcript's are its plan's.
        self.written: Dict[str, str] = {}
        #: A recovery that had nothing left to compact: the core's ``context_overflow``.
        self.overflow: Optional[Dict[str, Any]] = None


class _Stored(NamedTuple):
    """A state as read from the store (the core's ``stored::Stored``): the core's state, the
    text exactly (the ``expected`` of the next save), its revision and conversation; ``unread``:
    why it could not be read."""

    state: Optional[Dict[str, Any]]
    text: Optional[str]
    revision: int
    conversation: str
    unread: Optional[str] = None


def _parse_stored(text: Optional[str], path: str) -> _Stored:
    try:
        parsed = json.loads(_core.call("stored-state", None if text is None else well_formed(text), path))
    except CompactorError as e:
        # Not a saved state: the core's error, with the path where the host keeps it (as npm).
        if e.code == "invalid_config":
            raise InvalidConfigError("invalid_config", e.message, {**(e.details or {}), "field": "state", "path": path}) from None
        raise
    return _Stored(parsed["state"], text, int(parsed["revision"]), str(parsed["conversation"]))


def _read_stored(store: FileStore, path: str) -> _Stored:
    text = run_sync(effect_read(store, path))
    return _parse_stored(text, path)


def _failed_read(error: Exception) -> _Stored:
    """A state that could not be read: planned from the history alone and saved only over
    nothing (a state that is there after all is found by the save). A text that is not a state,
    or another typed error than the store's, is raised."""
    if isinstance(error, CompactorError) and error.code != "store_failed":
        raise error
    return _Stored(None, None, 0, "", _message(error))


async def create_compactor(config: Optional[Mapping[str, Any]] = None, **options: Any) -> Compactor:
    """The npm package's ``createCompactor``: a ``Compactor`` (same arguments) whose state at
    ``state_path`` has been read before it returns, awaited from an async store too. Inside a
    running event loop, ``Compactor(...)`` over an async store cannot await that read: it reads
    at the first ``amanage`` and reports empty ``stats()`` until then."""
    store, path = options.get("store"), options.get("state_path")
    if store is None or path is None or options.get("state") is not None or not _reads_async(store):
        return Compactor(config, **options)
    io = _bounded(store, _settle(**{k: options[k] for k in ("store_timeout",) if k in options}, store=True)["storeTimeoutMs"])
    path = check_path(path, "state_path")
    try:
        stored = _parse_stored(await drive_async(effect_read(io, path), threading.RLock()), path)
    except Exception as e:
        stored = _failed_read(e)
    return Compactor(config, _stored=stored, **options)


def _reads_async(store: Any) -> bool:
    """Whether ``store`` reads asynchronously and this thread runs an event loop (then a read
    cannot be awaited from a constructor)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return inspect.iscoroutinefunction(getattr(store, "read", None))


def _bin_size(value: Any) -> Any:
    """Binary values by their size (as the npm host hashes them); tuples and sets as lists (as
    the codec sends them)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"bin:{len(value)}"
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


T = TypeVar("T")
# ---------------------------------------------------------------------------------------------
# Helpers

def _decision(decision: Any) -> Dict[str, Any]:
    """An ``on_pre_compact`` answer as the core's decision (snake_case or camelCase keys)."""
    if decision is None:
        return {}
    if not isinstance(decision, Mapping):
        raise InvalidConfigError(
            "invalid_config",
            f"on_pre_compact returned {type(decision).__name__}: expected a dict (cancel, custom_instructions, custom_summary) or None",
            {"field": "on_pre_compact"},
        )
    # As given: the core reads them (a cancel that is not True or False is a typed error there,
    # as in the npm host). A value JSON cannot carry never reaches it: the same typed error here.
    out: Dict[str, Any] = {}
    for key in ("cancel", "custom_instructions", "custom_summary"):
        value = decision.get(key, decision.get(_camel(key)))
        if value is None:
            continue
        if not isinstance(value, (bool, str, int)) and not (isinstance(value, float) and math.isfinite(value)):
            expected = "True or False" if key == "cancel" else "a str"
            raise InvalidConfigError(
                "invalid_config", f"on_pre_compact returned {key}: {type(value).__name__}, expected {expected}", {"field": f"on_pre_compact.{key}"}
            )
        out[_camel(key)] = value
    return out


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _settle(**given: Any) -> Dict[str, Any]:
    """What this host does with its own options, as the core settles them from what the app gave
    (``src/config.rs`` ``host_settings``: the defaults, the checks, when summaries go to the
    background); the timeouts in seconds here, in milliseconds there. Errors name the options as
    Python spells them."""
    core: Dict[str, Any] = {}
    for name, value in given.items():
        if name in ("summarize_timeout", "store_timeout") and isinstance(value, (int, float)) and not isinstance(value, bool):
            value = value * 1000 if math.isfinite(value) else str(value)
        core[_camel(name) + ("Ms" if name.endswith("timeout") else "")] = value
    names = {"summarizeTimeoutMs": "summarize_timeout", "storeTimeoutMs": "store_timeout", "statePath": "state_path"}
    bad = _non_finite(core, "")
    if bad is not None:
        raise InvalidConfigError("invalid_config", f"{_spelled(bad, names)}: expected a finite number", {"field": _spelled(bad, names)})
    try:
        # What JSON cannot carry crosses as its repr, for the core to refuse by name.
        return cast(Dict[str, Any], json.loads(_core.call("host-settings", json.dumps(core, default=repr))))
    except InvalidConfigError as e:
        raise _in_python_names(e, names) from None


def _bounded(store: FileStore, ms: Optional[float]) -> FileStore:
    """``store`` as a compactor calls it: each call bounded by ``ms`` (None: made directly)."""
    return store if ms is None else TimedStore(store, ms / 1000)


def _spelled(path: str, given: Mapping[str, str]) -> str:
    """An option's path (``compaction.triggerFraction``) as the app wrote it, else as Python
    spells it (``compaction.trigger_fraction``); a tool's schema (``tools``) and a state's fields
    (``state``) as they are."""
    if path.startswith(("tools", "state")):
        return path
    parts = path.split(".")
    spelled = []
    for i, name in enumerate(parts):
        written = given.get(".".join(parts[: i + 1]))
        spelled.append(written if written is not None else _snake(name))
    return ".".join(spelled)


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def _in_python_names(error: InvalidConfigError, given: Mapping[str, str]) -> InvalidConfigError:
    """The core's configuration error with the option named as the app wrote it, or as Python
    spells it (the field, and the names an unknown field's message offers): ``contex_window=``
    reads so. Values the message quotes stay as they are."""
    field, message = error.field, error.message
    if field is not None:
        spelled = _spelled(field, given)
        message = message.replace(f"`{field}`", f"`{spelled}`")
        message = message.replace(f"unknown field `{field.rsplit('.', 1)[-1]}`", f"unknown field `{spelled.rsplit('.', 1)[-1]}`")
    head, expected, names = message.partition("expected ")
    if expected and "unknown field" in head:
        message = head + expected + re.sub(r"`([A-Za-z0-9_]+)`", lambda m: f"`{_snake(m.group(1))}`", names)
    details = {**error.details, **({"field": _spelled(field, given)} if field is not None else {})}
    return InvalidConfigError(error.code, message, details)


def _option_value(key: str, value: Any, given: Dict[str, str], path: str = "") -> Any:
    """An option's value with the names in it as the core spells them (snake_case accepted at
    every depth: ``compaction={"working_files": {"max_files": 3}}``), each name the app wrote
    kept in ``given`` by its path (the core's path -> the app's name); ``tools`` crosses
    untouched (its schemas are the app's JSON)."""
    path = f"{path}.{_camel(key)}" if path else _camel(key)
    given.setdefault(path, key)
    if _camel(key) != "tools" and isinstance(value, Mapping):
        _once(value, path)
        return {_camel(k): _option_value(k, v, given, path) for k, v in value.items()}
    return value


def _once(keys: Any, path: str) -> None:
    """Refuses an option given twice: in each spelling (``threshold_tokens`` and
    ``thresholdTokens``), or in ``config`` and as a keyword: one would silently win."""
    seen: Dict[str, str] = {}
    for i, key in enumerate(keys):
        other = seen.setdefault(_camel(str(key)), str(key))
        if len(seen) <= i:
            field = f"{path}.{_camel(str(key))}" if path else _camel(str(key))
            raise InvalidConfigError("invalid_config", f"{other!r} and {key!r} are the same option ({field}), given twice", {"field": field})


def tool_definitions(tools: Any) -> Any:
    """Tool definitions as the core reads them (``{name, description?, inputSchema?}``), from a
    list of definitions or of tool objects, or a mapping of name to a definition or a tool
    object: an object gives its ``name`` (or ``id``), ``description`` and ``inputSchema`` /
    ``input_schema`` / ``args_schema`` / ``parameters`` (a JSON schema, or a pydantic model: a
    LangChain tool's ``args_schema``); OpenAI's ``{"type": "function", "function": {...}}`` is
    read inside. Anything else is handed to the core as it is (its error names it)."""
    if tools is None:
        return []
    if isinstance(tools, Mapping):
        items = list(tools.items())
    elif isinstance(tools, (list, tuple)):
        items = [(None, tool) for tool in tools]
    else:
        return tools
    out = []
    for key, tool in items:
        # OpenAI Chat Completions' ``{"type": "function", "function": {...}}`` (LangChain's
        # ``convert_to_openai_tool``): the definition is inside.
        if isinstance(tool, Mapping) and tool.get("type") == "function" and isinstance(tool.get("function"), Mapping):
            tool = tool["function"]

        def get(field: str, tool: Any = tool) -> Any:
            return tool.get(field) if isinstance(tool, Mapping) else getattr(tool, field, None)

        schema = get("inputSchema") or get("input_schema") or get("args_schema") or get("parameters")
        if schema is not None and not isinstance(schema, Mapping) and hasattr(schema, "model_json_schema"):
            schema = schema.model_json_schema()
        definition: Dict[str, Any] = {"name": key if key is not None else (get("name") or get("id"))}
        if isinstance(get("description"), str) and get("description"):
            definition["description"] = get("description")
        if isinstance(schema, Mapping):
            definition["inputSchema"] = dict(schema)
        out.append(definition)
    return out


def _as_given(out: List[Any], given: Sequence[Message]) -> List[Any]:
    """A call's result as the core sends it (src/bindings/json.rs ``as_given``): each message the
    call left as it was is the index of the app's own object in ``given`` (not one byte of it
    changes, and nothing of it was copied or decoded); the others as decoded."""

    def one(message: Any) -> Any:
        if isinstance(message, int) and not isinstance(message, bool):
            if not 0 <= message < len(given):
                raise CompactorError("internal", f"the core's result names message {message} of {len(given)} given")
            return given[message]
        return message

    return [one(m) for m in out]


def _output_at(at: Optional[Sequence[int]], messages: Sequence[Message]) -> Any:
    """The output of the tool result at ``[message, part]`` (a write request's ``output``), or
    None."""
    try:
        return None if at is None else messages[at[0]]["content"][at[1]]["output"]
    except (KeyError, IndexError, TypeError):
        return None


def _app_json(value: Any, content: str) -> str:
    """An offloaded JSON output's stored copy as the app's value writes it, lone surrogates
    included (escaped as JavaScript's JSON.stringify escapes them, so both hosts store the same
    text): the core holds text as UTF-8, so its copy has U+FFFD for each. Only when that is the
    core's copy but for them; anything else is the core's content. ``value``: the tool output
    (``{"type", "value"}``) whose whole stored copy ``content`` is, or None."""
    if not isinstance(value, dict) or value.get("type") not in ("json", "error-json") or "\ufffd" not in content:
        return content
    try:
        text = json.dumps(value["value"], ensure_ascii=False, indent=2)
    except (KeyError, TypeError, ValueError):
        return content
    if text == content or well_formed(text) != content:
        return content
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _non_finite(value: Any, path: str) -> Optional[str]:
    """The path of the first NaN or infinite number in an options value (JSON cannot carry them)."""
    found = find(value, lambda v: "" if isinstance(v, float) and not math.isfinite(v) else None, 9, path, leaves=True)
    return None if found is None else found[0] or "config"


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, bytes, list, dict, tuple)) else 0


def _mark(message: Any) -> Any:
    """A cheap mark of a message's shape and sizes, so that an edit in place that changes a
    size is seen as a change by ``_sync``."""
    try:
        role = message.get("role")
        content = message.get("content")
        if isinstance(content, str):
            return (role, len(content))
        if not isinstance(content, list):
            return (role, type(content).__name__)
        parts = []
        for part in content:
            output = part.get("output") if isinstance(part, dict) else None
            parts.append(
                (
                    part.get("type"),
                    _size(part.get("text")),
                    _size(part.get("input")),
                    _size(part.get("toolCallId")),
                    _size(output.get("value")) if isinstance(output, dict) else -1,
                )
                if isinstance(part, dict)
                else id(part)
            )
        return (role, tuple(parts))
    except Exception:
        # Unreadable: never equal, so it is sent, and the core names the message and field.
        return object()

