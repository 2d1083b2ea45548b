"""Messages cross to the core as JSON. Values JSON cannot carry (``bytes``, ``bytearray``,
``memoryview`` image and file data) are swapped for ``{"$ccRef": "<type>:<length>:<hash>"}``
placeholders on the way in and restored on the way out, as the npm host does, so they come back
as the same objects. A placeholder names its value by content, never by the order it was met:
the core fingerprints and names stored files from what it is given, and a compactor made anew
each request must give it what a long-lived one does. In what goes to the store (a transcript,
an offloaded JSON output) each placeholder becomes the bytes in base64, so the store holds the
data itself.

A ``str`` holding lone surrogates (``"\\ud83d"``, e.g. from ``surrogateescape``) cannot cross as
UTF-8: it is written as a JSON ``\\udXXX`` escape, which the core reads as U+FFFD (what tiktoken
counts). Unlike the npm host, the original is not put back in a message the core changed."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any, Dict, List, Tuple

from .errors import CompactorError, InvalidMessageError

REF_KEY = "$ccRef"


Refs = Dict[str, Any]
"""The values behind a conversation's placeholders, by key."""


def _ref_key(obj: Any) -> str:
    data = bytes(obj)
    return f"{type(obj).__name__}:{len(data)}:{hashlib.blake2b(data, digest_size=8).hexdigest()}"


def encode(value: Any, refs: Refs) -> str:
    """``value`` as JSON, its binary values kept in ``refs`` and replaced by placeholders."""
    added: List[str] = []

    def placeholder(obj: Any) -> Any:
        if isinstance(obj, (bytes, bytearray, memoryview)):
            key = _ref_key(obj)
            if key not in refs:
                refs[key] = obj
                added.append(key)
            return {REF_KEY: key}
        if isinstance(obj, (tuple, set, frozenset)):
            return list(obj)
        raise TypeError(f"{type(obj).__name__} is not JSON serializable")

    try:
        text = _dumps(value, placeholder, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as e:
        for key in added:
            del refs[key]
        raise _unserializable(value, e) from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates: escaped (ASCII), so the core reads each as U+FFFD.
        text = _dumps(value, placeholder, ensure_ascii=True)
    return text


_PLACEHOLDER = re.compile(r'\{\s*"\$ccRef"\s*:\s*"([^"\\]+)"\s*\}')


def storable(content: str, refs: Refs) -> str:
    """``content`` for the store: each placeholder of a known value as the JSON string of its
    bytes in base64 (what the AI SDK accepts for image and file data)."""
    if not refs or REF_KEY not in content:
        return content

    def value(match: "re.Match[str]") -> str:
        obj = refs.get(match.group(1))
        if obj is None:
            return match.group(0)
        return json.dumps(base64.b64encode(bytes(obj)).decode("ascii"))

    return _PLACEHOLDER.sub(value, content)


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


def decode(text: str, refs: Refs) -> Any:
    """The core's JSON with placeholders restored to the original binary values."""
    if not refs:
        return json.loads(text)

    def restore(obj: Dict[str, Any]) -> Any:
        if len(obj) == 1 and REF_KEY in obj:
            key = obj[REF_KEY]
            if isinstance(key, str) and key in refs:
                return refs[key]
        return obj

    return json.loads(text, object_hook=restore)


def dumps(value: Any) -> str:
    """Plain JSON for options and outcomes (no binary values)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def encoded(value: Any) -> Tuple[str, Refs]:
    refs: Refs = {}
    return encode(value, refs), refs


def well_formed(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD (a split pair joined), as tiktoken
    itself does and the core takes text (UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text
