"""Typed errors. Every error carries the core's machine-readable ``code`` (the same codes as the
npm package's ``CompactorError``) and, when the error concerns one message or option, its
``index`` and ``field``."""

from __future__ import annotations

import json
from typing import Any, Dict, Optional


class CompactorError(Exception):
    """Every error the library raises. ``code`` is one of ``malformed_json``,
    ``invalid_message``, ``invalid_messages``, ``orphan_tool_result``, ``invalid_config``,
    ``plan_mismatch``, ``unknown_encoding``, ``encoding_not_loaded``, ``invalid_rank_data``
    (the core's), or ``invalid_path``, ``store_failed`` (a store that failed: ``path``, ``op``),
    ``context_overflow`` (``recover`` with nothing left to compact), ``busy`` (a call of a
    compactor made from inside one of its own calls: its ``on_pre_compact`` hook, summarizer or
    store; ``details["call"]``), ``disposed`` (a call after ``close()``), ``internal`` (the
    host's). ``details`` holds every field
    the core reported (``index``, ``field``, ``toolCallId``, ``line``, ...)."""

    code: str
    index: Optional[int]
    field: Optional[str]
    details: Dict[str, Any]

    def __init__(self, code: str, message: str, details: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = dict(details or {})
        index = self.details.get("index")
        field = self.details.get("field")
        self.index = index if isinstance(index, int) else None
        self.field = field if isinstance(field, str) else None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


class MalformedJsonError(CompactorError):
    """Input that is not JSON at all (``details``: ``what``, ``line``, ``column``)."""


class InvalidMessageError(CompactorError):
    """A conversation that does not have the AI SDK ``ModelMessage`` shape: ``invalid_message``
    (``index``, ``field``), ``invalid_messages`` (not a list) or ``orphan_tool_result`` (a tool
    result with no earlier tool call: providers reject those)."""


class InvalidConfigError(CompactorError):
    """An option missing, of the wrong type or out of range (``field`` names it)."""


class PlanMismatchError(CompactorError):
    """Outcomes or a plan given to ``apply`` that do not fit the plan or the messages."""


class EncodingError(CompactorError):
    """``unknown_encoding``, ``encoding_not_loaded`` or ``invalid_rank_data``."""


class InvalidPathError(CompactorError):
    """A store path that could escape the store's root or confuse a backend."""


_CLASSES = {
    "malformed_json": MalformedJsonError,
    "invalid_message": InvalidMessageError,
    "invalid_messages": InvalidMessageError,
    "orphan_tool_result": InvalidMessageError,
    "invalid_config": InvalidConfigError,
    "plan_mismatch": PlanMismatchError,
    "unknown_encoding": EncodingError,
    "encoding_not_loaded": EncodingError,
    "invalid_rank_data": EncodingError,
    "invalid_path": InvalidPathError,
}


def error(code: str, message: str, details: Optional[Dict[str, Any]] = None) -> CompactorError:
    """The typed error for ``code``."""
    return _CLASSES.get(code, CompactorError)(code, message, details)


#: The npm package's function and option names in the core's messages, as this package spells
#: them (an error names what the Python caller can call).
_PYTHON_NAMES = (
    ("loadTokenizer", "load_tokenizer"),
    ("loadEncoding", "load_encoding"),
    ("countTokens", "count_tokens"),
    ("onPreCompact", "on_pre_compact"),
    ("customInstructions", "custom_instructions"),
    ("customSummary", "custom_summary"),
    ("statePath", "state_path"),
)


def python_names(message: str) -> str:
    """``message`` with the npm package's names as this package's."""
    for js, py in _PYTHON_NAMES:
        message = message.replace(js, py)
    return message


def from_core(json_text: str) -> CompactorError:
    """The typed error for the core's error object (``{"code", "message", ...fields}``), its
    message naming this package's functions."""
    try:
        fields = json.loads(json_text)
        code = fields.pop("code")
        message = fields.pop("message")
    except (ValueError, KeyError, AttributeError):
        return CompactorError("internal", f"context-compactor core failed: {json_text}")
    if isinstance(fields.get("field"), str):
        fields["field"] = python_names(fields["field"])
    return error(code, python_names(message), fields)
