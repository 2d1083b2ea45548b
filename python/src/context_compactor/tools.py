"""The recovery tools as plain functions over a store: what an agent calls to read back what
was offloaded or summarized away (``read_file``, ``grep``, ``ls``). Each returns text for the
model; a problem is an ``Error: ...`` text, never an exception. Their descriptions, schemas,
paging and every answer are the core's (``src/recovery.rs``, the same texts as the npm
package's); this module only makes the store calls a run asks for (docs/LOOP.md).
``recovery_tools(store)`` gives them with descriptions and JSON schemas, for any agent
framework's tool registry."""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Dict, List, Optional

from . import _core
from ._core import core
from .codec import well_formed as _well_formed
from .errors import InvalidConfigError
from .effects import Steps, drive_async, listed_paths, read_text, run_sync
from .stores import FileStore, check_path, check_prefix

DEFAULT_LIMIT = 500
MAX_LINE_CHARS = 2_000
MAX_MATCHES = 100


def _steps(store: FileStore, name: str, arguments: Dict[str, Any], options: Dict[str, Any]) -> Steps[str]:
    """One tool call: the core's run (``tool-run``), each store call it asks for yielded as an
    effect (``_run`` performs them, ``_arun`` awaits them: an async store's tools)."""
    try:
        arguments_json = json.dumps(arguments)
    except (TypeError, ValueError) as e:
        return f"Error: the arguments of {name} are not JSON: {e}"
    c = core()
    run = c.call("[static]tool-run.start", name, _well_formed(arguments_json), json.dumps(options))
    try:
        while True:
            io = json.loads(c.call("[method]tool-run.io", run))
            if io["type"] == "done":
                return str(io["text"])
            error: Optional[str] = None
            if io["type"] == "read":
                text: Optional[str] = None
                try:
                    text = read_text((yield ("read", store, check_path(io["path"]))), io["path"])
                except Exception as e:
                    error = str(e)
                c.call("[method]tool-run.handle-read", run, None if text is None else _well_formed(text), error)
            else:
                paths: List[str] = []
                try:
                    paths = listed_paths((yield ("list", store, check_prefix(io["prefix"]))), io["prefix"])
                except Exception as e:
                    error = str(e)
                c.call("[method]tool-run.handle-list", run, [_well_formed(p) for p in paths], error)
    finally:
        _core.drop(run)


def _run(store: FileStore, name: str, arguments: Dict[str, Any], options: Dict[str, Any]) -> str:
    return run_sync(_steps(store, name, arguments, options))


async def _arun(store: FileStore, name: str, arguments: Dict[str, Any], options: Dict[str, Any]) -> str:
    return await drive_async(_steps(store, name, arguments, options), threading.RLock())


def _options(
    default_limit: int = DEFAULT_LIMIT,
    max_line_chars: int = MAX_LINE_CHARS,
    max_matches: int = MAX_MATCHES,
    max_page_chars: Optional[float] = None,
    context_window: Optional[int] = None,
    state_path: Optional[str] = None,
) -> Dict[str, Any]:
    options: Dict[str, Any] = {"defaultLimit": default_limit, "maxLineChars": max_line_chars, "maxMatches": max_matches}
    # ``math.inf`` is no page limit; NaN and -inf, which JSON cannot say, are refused here; the
    # core checks the rest (a fraction, 10 % of a window, is floored; below 1 is refused).
    if isinstance(max_page_chars, float) and (math.isnan(max_page_chars) or max_page_chars == -math.inf):
        raise InvalidConfigError("invalid_config", f"recovery_tools: max_page_chars must be a number of characters >= 1, got {max_page_chars}", {"field": "max_page_chars"})
    if max_page_chars is not None and max_page_chars != math.inf:
        options["maxPageChars"] = max_page_chars
    if context_window is not None:
        options["contextWindow"] = context_window
    if state_path is not None:
        options["statePath"] = state_path
    return options


def read_file(
    store: FileStore,
    path: str,
    offset: int = 0,
    limit: int = DEFAULT_LIMIT,
    *,
    max_line_chars: int = MAX_LINE_CHARS,
    max_page_chars: Optional[float] = None,
) -> str:
    """Numbered lines of a stored file, from ``offset`` (0-based), at most ``limit`` (a page
    ends before ``max_page_chars`` characters, at least one line shown)."""
    return _run(store, "read_file", {"path": path, "offset": offset, "limit": limit}, _options(max_line_chars=max_line_chars, max_page_chars=max_page_chars))


def grep(
    store: FileStore,
    pattern: str,
    path: str = "/",
    *,
    max_matches: int = MAX_MATCHES,
    max_line_chars: int = MAX_LINE_CHARS,
    state_path: Optional[str] = None,
) -> str:
    """Lines containing the literal ``pattern`` in stored files under ``path``; the
    compactor's state at ``state_path`` (default ``/state/compactor.json``) and its summary
    leases are left out."""
    return _run(store, "grep", {"pattern": pattern, "path": path}, _options(max_matches=max_matches, max_line_chars=max_line_chars, state_path=state_path))


def ls(store: FileStore, path: str = "/", *, state_path: Optional[str] = None) -> str:
    """Stored files and directories directly under ``path``; the compactor's state at
    ``state_path`` (default ``/state/compactor.json``) and its summary leases are left out."""
    return _run(store, "ls", {"path": path}, _options(state_path=state_path))


@dataclass(frozen=True)
class RecoveryTool:
    """A recovery tool bound to a store: call it with the model's arguments."""

    name: str
    description: str
    input_schema: Dict[str, Any]
    func: Callable[..., str]
    #: The same call for async code: an async store is awaited.
    afunc: Callable[..., Awaitable[str]]

    def __call__(self, **arguments: Any) -> str:
        return self.func(**arguments)

    async def acall(self, **arguments: Any) -> str:
        return await self.afunc(**arguments)


def recovery_tools(
    store: FileStore,
    *,
    default_limit: int = DEFAULT_LIMIT,
    max_page_chars: Optional[float] = None,
    context_window: Optional[int] = None,
    state_path: Optional[str] = None,
) -> Dict[str, RecoveryTool]:
    """``read_file``, ``grep`` and ``ls`` over ``store``, with the core's descriptions and JSON
    schemas. A ``read_file`` page ends before ``max_page_chars`` characters, or, given the
    model's ``context_window``, at 10 % of it. ``ls`` and ``grep`` leave the compactor's state
    at ``state_path`` (default ``/state/compactor.json``) and its summary leases out
    (``Compactor.tools()`` passes its own window and state path)."""
    options = _options(default_limit=default_limit, max_page_chars=max_page_chars, context_window=context_window, state_path=state_path)
    specs = json.loads(core().call("recovery-tool-specs", json.dumps(options)))

    def bind(name: str) -> RecoveryTool:
        def call(**arguments: Any) -> str:
            return _run(store, name, arguments, options)

        async def acall(**arguments: Any) -> str:
            return await _arun(store, name, arguments, options)

        call.__name__ = acall.__name__ = name
        spec = specs_by_name[name]
        return RecoveryTool(name, spec["description"], spec["inputSchema"], call, acall)

    specs_by_name = {spec["name"]: spec for spec in specs}
    return {name: bind(name) for name in specs_by_name}
