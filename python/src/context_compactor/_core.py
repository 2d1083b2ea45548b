"""The core: the WebAssembly Component ``core.wasm`` (world ``core`` of ``wit/``), run by
``wasmtime``. This module only converts: it calls the component's functions with the JSON
strings they take and turns a WIT ``error`` record into a typed :class:`CompactorError`.

One engine, one compiled component and one instance serve the process (the rank tables are
parsed once per instance); a lock serializes calls, since a wasmtime store is not
thread-safe."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import sys
import threading
import time
from typing import Any, Dict, Optional, Tuple

import wasmtime
from wasmtime.component import Component, Func, Linker, Record, ResourceAny

from .codec import well_formed
from .errors import CompactorError, from_core

INTERFACE = "context-compactor:core/api@0.1.0"

#: The component, packaged beside this module.
WASM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "core.wasm")


#: A compiled component's cache file: this header, the SHA-256 of the rest, then what
#: ``Component.serialize`` wrote.
_CACHE_MAGIC = b"context-compactor compiled core v1\n"

#: The engine's configuration, part of the cache key: ``_Core`` makes ``wasmtime.Engine()`` with
#: wasmtime's defaults. (wasmtime also refuses to deserialize for an engine configured otherwise.)
_ENGINE_CONFIG = "default"

#: How many compiled components a cache directory keeps (one per core build, about 4 MB each):
#: the newest; a rebuilt core or another wasmtime adds one.
_CACHE_KEEP = 3


def _cache_dir() -> Optional[str]:
    """Where compiled components are kept: ``$CONTEXT_COMPACTOR_CACHE_DIR`` (empty: no cache),
    else ``$XDG_CACHE_HOME/context-compactor``, else ``~/.cache/context-compactor``."""
    configured = os.environ.get("CONTEXT_COMPACTOR_CACHE_DIR")
    if configured is not None:
        return configured or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "context-compactor")


def _compiled(engine: wasmtime.Engine, path: str) -> Tuple[Component, bool]:
    """The component at ``path``, compiled for ``engine``: from the cache when an earlier process
    compiled the same bytes with the same wasmtime and engine configuration on this machine
    (wasmtime compiles it in 0.6-1.0 s), else compiled and cached for the next. A cache that
    cannot be read or written, or a file that is not one this module wrote whole (its hash is
    checked before wasmtime reads it), only means compiling: never an error. Returns the
    component and whether it came from the cache."""
    with open(path, "rb") as f:
        wasm = f.read()
    directory = _cache_dir()
    if directory is None:
        return Component(engine, wasm), False
    version = importlib.metadata.version("wasmtime") if _has_metadata("wasmtime") else "?"
    tag = f"|wasmtime {version}|engine {_ENGINE_CONFIG}|{platform.machine()}|{sys.platform}"
    file = os.path.join(directory, f"core-{hashlib.sha256(wasm + tag.encode()).hexdigest()[:32]}.cwasm")
    body = _read_cache(file)
    if body is not None:
        try:
            return Component.deserialize(engine, body), True
        except Exception:
            pass  # refused by this wasmtime (another CPU, say): compile and replace it
    component = Component(engine, wasm)
    try:
        _write_cache(file, bytes(component.serialize()))
    except Exception:
        pass
    return component, False


def _read_cache(file: str) -> Optional[bytes]:
    """What ``_write_cache`` wrote to ``file``, or None. Deserializing is as trusting as running
    native code, so a file counts only when it is whole (header and SHA-256) and this user's
    alone (owned by them, writable by no one else): a file planted in a shared directory is
    compiled over, never read."""
    try:
        with open(file, "rb") as f:
            if hasattr(os, "getuid"):
                stat = os.fstat(f.fileno())
                if stat.st_uid != os.getuid() or stat.st_mode & 0o022:
                    return None
            blob = f.read()
    except OSError:
        return None  # no file yet, or unreadable
    head = len(_CACHE_MAGIC)
    body = blob[head + 32 :]
    if blob[:head] != _CACHE_MAGIC or hashlib.sha256(body).digest() != blob[head : head + 32]:
        return None
    return body


def _write_cache(file: str, body: bytes) -> None:
    """Writes ``file`` (readable by this user only) through a temporary file and a rename, so a
    reader sees the old file or the whole new one, then removes the older builds' files beyond
    the newest ``_CACHE_KEEP`` and temporary files a killed process left."""
    directory = os.path.dirname(file)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    temporary = f"{file}.{os.getpid()}.{threading.get_ident()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(_CACHE_MAGIC + hashlib.sha256(body).digest() + body)
    os.replace(temporary, file)
    entries = [e for e in os.scandir(directory) if e.name.startswith("core-") and e.is_file()]
    compiled = sorted((e for e in entries if e.name.endswith(".cwasm")), key=lambda e: e.stat().st_mtime, reverse=True)
    # A temporary file an hour old belongs to no running compile (one takes about a second).
    stale = [e for e in entries if e.name.endswith(".tmp") and e.stat().st_mtime < time.time() - 3600]
    for entry in compiled[_CACHE_KEEP:] + stale:
        if entry.path != file:
            try:
                os.remove(entry.path)
            except OSError:
                pass


def _has_metadata(name: str) -> bool:
    try:
        importlib.metadata.version(name)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


class _Core:
    def __init__(self, path: str) -> None:
        if not os.path.isfile(path):
            raise CompactorError(
                "internal",
                f"the context-compactor component is missing at {path}: build it with "
                "`bash scripts/build-component.sh` (a source checkout) or reinstall the package",
            )
        self.engine = wasmtime.Engine()
        self.component, self.cached = _compiled(self.engine, path)
        self.lock = threading.RLock()
        self._instantiate()

    def _instantiate(self) -> None:
        self.store = wasmtime.Store(self.engine)
        # The core does no IO; wasip2 is linked only because Rust's std for wasm32-wasip2
        # imports it. Nothing is preopened, inherited or allowed.
        self.store.set_wasi(wasmtime.WasiConfig())
        linker = Linker(self.engine)
        linker.add_wasip2()
        self.instance = linker.instantiate(self.store, self.component)
        self.api = self.instance.get_export_index(self.store, INTERFACE)
        self.funcs: Dict[str, Func] = {}
        self.generation = getattr(self, "generation", 0) + 1

    def func(self, name: str) -> Func:
        func = self.funcs.get(name)
        if func is None:
            index = self.instance.get_export_index(self.store, name, self.api)
            found = None if index is None else self.instance.get_func(self.store, index)
            if found is None:
                raise CompactorError("internal", f"the component has no function {name!r}")
            self.funcs[name] = func = found
        return func

    def call(self, name: str, *args: Any) -> Any:
        """Calls ``name``; a WIT ``error`` becomes the typed error, a trap an ``internal`` one
        (and a fresh instance for the calls after it: a trapped instance cannot be reused)."""
        with self.lock:
            try:
                result = self.func(name)(self.store, *args)
            except UnicodeEncodeError as e:
                raise CompactorError(
                    "invalid_messages",
                    f"{name}: text is not valid Unicode ({e.reason} at character {e.start})",
                ) from None
            except (wasmtime.WasmtimeError, wasmtime.Trap) as e:
                self._instantiate()
                raise CompactorError("internal", f"context-compactor core failed: {e}") from e
        if isinstance(result, Record):
            raise from_core(getattr(result, "json"))
        return result


_core: Optional[_Core] = None
_core_lock = threading.Lock()


def core() -> _Core:
    """The process's core, instantiated on first use."""
    global _core
    if _core is None:
        with _core_lock:
            if _core is None:
                _core = _Core(WASM)
    return _core


def call(name: str, *args: Any) -> Any:
    return core().call(name, *args)


def drop(handle: ResourceAny) -> None:
    """Frees a resource of the process's core (a run, the rounds of a call)."""
    c = core()
    try:
        with c.lock:
            handle.drop(c.store)
    except Exception:
        pass  # the instance was replaced after a trap: the handle went with it


class CoreCompactor:
    """The component's ``compactor`` resource: a compactor and the conversation it holds."""

    def __init__(self, config_json: str, state_json: Optional[str]) -> None:
        self._core = core()
        self._generation = self._core.generation
        self._handle: ResourceAny = self._core.call("[static]compactor.create", config_json, state_json)

    def call(self, method: str, *args: Any) -> Any:
        handle = self._handle  # once: a close() on another thread meanwhile is still `disposed`
        if handle is None:
            raise CompactorError("disposed", "this compactor was closed (close()): create a new one")
        if self._core.generation != self._generation:
            raise CompactorError(
                "internal", "this compactor's core instance failed earlier; create a new Compactor"
            )
        return self._core.call(f"[method]compactor.{method}", handle, *args)

    def close(self) -> None:
        handle, self._handle = self._handle, None  # type: ignore[assignment]
        if handle is not None and self._core.generation == self._generation:
            with self._core.lock:
                handle.drop(self._core.store)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
