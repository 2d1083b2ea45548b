"""The core: the WebAssembly Component ``core.wasm`` (world ``core`` of ``wit/``), run by
``wasmtime``. This module only converts: it calls the component's functions with the JSON
strings they take and turns a WIT ``error`` record into a typed :class:`CompactorError`.

One engine, one compiled component and one instance serve the process (the rank tables are
parsed once per instance); a lock serializes calls, since a wasmtime store is not
thread-safe."""

from __future__ import annotations

import os
import threading
from typing import Any, Dict, Optional

import wasmtime
from wasmtime.component import Component, Func, Linker, Record, ResourceAny

from .errors import CompactorError, from_core

INTERFACE = "context-compactor:core/api@0.1.0"

#: The component, packaged beside this module.
WASM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "core.wasm")


class _Core:
    def __init__(self, path: str) -> None:
        if not os.path.isfile(path):
            raise CompactorError(
                "internal",
                f"the context-compactor component is missing at {path}: build it with "
                "`bash scripts/build-component.sh` (a source checkout) or reinstall the package",
            )
        self.engine = wasmtime.Engine()
        self.component = Component.from_file(self.engine, path)
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


class CoreCompactor:
    """The component's ``compactor`` resource: a compactor and the conversation it holds."""

    def __init__(self, config_json: str, state_json: Optional[str]) -> None:
        self._core = core()
        self._generation = self._core.generation
        self._handle: ResourceAny = self._core.call("[static]compactor.create", config_json, state_json)

    def call(self, method: str, *args: Any) -> Any:
        if self._core.generation != self._generation:
            raise CompactorError(
                "internal", "this compactor's core instance failed earlier; create a new Compactor"
            )
        return self._core.call(f"[method]compactor.{method}", self._handle, *args)

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
