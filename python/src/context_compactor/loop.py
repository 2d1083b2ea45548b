"""Loop context (for autonomous loops that run an agent CLI iteration after iteration): a
rolling window of recent iterations, a summary of the older ones written by your LLM, and the
next iteration's prompt. The state is plain data (a dict): keep it, persist it, pass it back.
All logic is in the core (src/loop_context.rs); this module only converts, like the npm
package's ``loopContext``."""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, NamedTuple, Optional, Union, cast

from . import _core
from .codec import dumps

LoopState = Dict[str, Any]


class LoopStep(NamedTuple):
    """The state after a step, and a summary request when one is due (answer it with
    ``apply_summary``: ``request["system"]``/``request["messages"]`` to your LLM)."""

    state: LoopState
    request: Optional[Dict[str, Any]]


def _step(text: str) -> LoopStep:
    step = json.loads(text)
    return LoopStep(step["context"], step["request"])


def create(goal: str, start_unix_ms: int) -> LoopState:
    """A fresh loop state for ``goal``, started at ``start_unix_ms`` (the core reads no
    clock)."""
    return cast(LoopState, json.loads(_core.call("loop-new", goal, max(0, int(start_unix_ms)))))


def add_iteration(state: LoopState, iteration: Mapping[str, Any], config: Optional[Mapping[str, Any]] = None) -> LoopStep:
    """Adds an iteration (``unixMs``, ``cli``, ``model``, ``prompt``, ``output``, ...)."""
    return _step(_core.call("loop-add-iteration", dumps(state), dumps(iteration), dumps(config or {})))


def request_summary(state: LoopState, config: Optional[Mapping[str, Any]] = None) -> LoopStep:
    """A summary request made now (e.g. to retry after a failure)."""
    return _step(_core.call("loop-request-summary", dumps(state), dumps(config or {})))


def apply_summary(state: LoopState, request_id: str, result: Union[str, Mapping[str, str]]) -> LoopState:
    """The state after your answer to request ``request_id``: the summary text, or
    ``{"error": "..."}`` when the LLM failed (the iterations stay for the next request)."""
    summary, error = (result, None) if isinstance(result, str) else (None, result.get("error", "no summary"))
    return cast(LoopState, json.loads(_core.call("loop-apply-summary", dumps(state), request_id, summary, error)))


def build_prompt(state: LoopState, config: Optional[Mapping[str, Any]] = None) -> str:
    """The next iteration's prompt: goal, summary, recent iterations, within the budgets."""
    return str(_core.call("loop-build-prompt", dumps(state), dumps(config or {})))
