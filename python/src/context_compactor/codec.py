"""Messages cross to the core as JSON. Values JSON cannot carry (``bytes``, ``bytearray``,
``memoryview`` image and file data) are swapped for ``{"$ccRef": n}`` placeholders on the way in
and restored on the way out, as the npm host does, so they come back as the same objects.

A ``str`` holding lone surrogates (``"\\ud83d"``, e.g. from ``surrogateescape``) cannot cross as
UTF-8: it is written as a JSON ``\\udXXX`` escape, which the core reads as U+FFFD (what tiktoken
counts). Unlike the npm host, the original is not put back in a message the core changed."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Tuple

from .errors import CompactorError, InvalidMessageError

REF_KEY = "$ccRef"


def encode(value: Any, refs: List[Any]) -> str:
    """``value`` as JSON, its binary values appended to ``refs`` and replaced by placeholders."""

    def placeholder(obj: Any) -> Any:
        if isinstance(obj, (bytes, bytearray, memoryview)):
            refs.append(obj)
            return {REF_KEY: len(refs) - 1}
        if isinstance(obj, (tuple, set, frozenset)):
            return list(obj)
        raise TypeError(f"{type(obj).__name__} is not JSON serializable")

    start = len(refs)
    try:
        text = _dumps(value, placeholder, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as e:
        del refs[start:]
        raise _unserializable(value, e) from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates: escaped (ASCII), so the core reads each as U+FFFD.
        del refs[start:]
        text = _dumps(value, placeholder, ensure_ascii=True)
    return text


def _dumps(value: Any, default: Any, ensure_ascii: bool) -> str:
    # allow_nan=False: NaN and Infinity are not JSON; refused here with the message named.
    return json.dumps(value, ensure_ascii=ensure_ascii, default=default, allow_nan=False, separators=(",", ":"))


def _unserializable(value: Any, cause: BaseException) -> CompactorError:
    """A typed error naming the first message that cannot be written as JSON."""
    if isinstance(value, (list, tuple)):
        for index, message in enumerate(value):
            try:
                _dumps(message, lambda o: [] if isinstance(o, (bytes, bytearray, memoryview)) else _refuse(o), False)
            except (TypeError, ValueError, RecursionError) as e:
                return InvalidMessageError(
                    "invalid_messages", f"message {index}: cannot be sent as JSON: {e}", {"index": index}
                )
    return InvalidMessageError("invalid_messages", f"messages: cannot be sent as JSON: {cause}")


def _refuse(obj: Any) -> Any:
    if isinstance(obj, (tuple, set, frozenset)):
        return list(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def decode(text: str, refs: List[Any]) -> Any:
    """The core's JSON with placeholders restored to the original binary values."""
    if not refs:
        return json.loads(text)

    def restore(obj: Dict[str, Any]) -> Any:
        if len(obj) == 1 and REF_KEY in obj:
            n = obj[REF_KEY]
            if isinstance(n, int) and 0 <= n < len(refs):
                return refs[n]
        return obj

    return json.loads(text, object_hook=restore)


def dumps(value: Any) -> str:
    """Plain JSON for options and outcomes (no binary values)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def encoded(value: Any) -> Tuple[str, List[Any]]:
    refs: List[Any] = []
    return encode(value, refs), refs
