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
from typing import Any, Dict, List, Mapping, Optional, Tuple

from .errors import CompactorError, InvalidMessageError

REF_KEY = "$ccRef"


Refs = Dict[str, Any]
"""The values behind a conversation's placeholders, by key."""


def _ref_key(obj: Any) -> str:
    data = bytes(obj)
    return f"{type(obj).__name__}:{len(data)}:{hashlib.blake2b(data, digest_size=8).hexdigest()}"


def encode(value: Any, refs: Refs, first: int = 0) -> str:
    """``value`` as JSON, its binary values kept in ``refs`` and replaced by placeholders.
    ``first``: the index of ``value``'s first message in the conversation, for errors."""
    added: List[str] = []

    def placeholder(obj: Any) -> Any:
        if isinstance(obj, (bytes, bytearray, memoryview)):
            key = _ref_key(obj)
            if key not in refs:
                refs[key] = obj
                added.append(key)
            return {REF_KEY: key}
        if isinstance(obj, (tuple, set, frozenset)):
            return _listed(obj)
        raise TypeError(f"{type(obj).__name__} is not JSON serializable")

    try:
        text = _dumps(value, placeholder, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as e:
        for key in added:
            del refs[key]
        raise _unserializable(value, e, first) from None
    collision = _collision(value, first)
    if collision is not None:
        for key in added:
            del refs[key]
        raise collision
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


def _unserializable(value: Any, cause: BaseException, first: int) -> CompactorError:
    """A typed error naming the first message that cannot be written as JSON."""
    if isinstance(value, (list, tuple)):
        for index, message in enumerate(value, first):
            try:
                _dumps(message, lambda o: [] if isinstance(o, (bytes, bytearray, memoryview)) else _refuse(o), False)
            except (TypeError, ValueError, RecursionError) as e:
                return InvalidMessageError(
                    "invalid_messages", f"message {index}: cannot be sent as JSON: {e}", {"index": index}
                )
    return InvalidMessageError("invalid_messages", f"messages: cannot be sent as JSON: {cause}")


def _collision(value: Any, first: int) -> Optional[CompactorError]:
    """A typed error for the first dict whose keys JSON writes alike (``{1: "a", "1": "b"}``,
    both ``"1"``): sent as they are, the core would read one value and the other would be lost
    from what is stored and kept. None when every dict's keys stay apart."""

    def colliding(obj: Any) -> Optional[str]:
        if isinstance(obj, dict) and any(key.__class__ is not str for key in obj):
            seen: Dict[str, Any] = {}
            for key in obj:
                other = seen.setdefault(_json_key(key), key)
                if other is not key:
                    return f"keys {other!r} and {key!r} are both written as JSON key {json.dumps(_json_key(key))}"
        return None

    if isinstance(value, (list, tuple)):
        for index, message in enumerate(value, first):
            found = find(message, colliding, 130)  # deeper than the core reads: it names that
            if found is not None:
                field, what = found
                return InvalidMessageError("invalid_messages", f"message {index}: {field}: {what}" if field else f"message {index}: {what}", {"index": index, "field": field})
        return None
    found = find(value, colliding, 130)
    return None if found is None else InvalidMessageError("invalid_messages", f"messages: {found[1]}")


#: Types no Mapping check is needed for (the JSON types that are not a dict).
_NOT_MAPPINGS = frozenset((str, int, float, bool, type(None), list))


def find(value: Any, check: Any, max_depth: int, path: str = "", leaves: bool = False) -> Optional[Tuple[str, str]]:
    """The first place in ``value`` (its dicts and lists, depth first, to ``max_depth``; with
    ``leaves`` the values in them too) where ``check(obj)`` says what is wrong: ``(path, what)``,
    the path as ``a.b[2]`` under ``path``; None when there is none. The path is spelled only for
    what is found."""

    def walk(obj: Any, depth: int) -> Optional[Tuple[List[str], str]]:
        mapping = obj.__class__ is dict or (obj.__class__ not in _NOT_MAPPINGS and isinstance(obj, Mapping))
        if not mapping and not isinstance(obj, (list, tuple)):
            what = check(obj) if leaves else None
            return None if what is None else ([], what)
        what = check(obj)
        if what is not None:
            return [], what
        if depth >= max_depth:
            return None
        for key, item in obj.items() if mapping else enumerate(obj):
            found = walk(item, depth + 1)
            if found is not None:
                found[0].append(f".{key}" if mapping else f"[{key}]")
                return found
        return None

    found = walk(value, 0)
    if found is None:
        return None
    spelled = path + "".join(reversed(found[0]))
    return spelled.removeprefix(".") if not path else spelled, found[1]


def _json_key(key: Any) -> str:
    """A dict key as ``json.dumps`` writes it."""
    if isinstance(key, str):
        return key
    if key is True or key is False or key is None:
        return json.dumps(key)
    return repr(float(key)) if isinstance(key, float) else str(int(key)) if isinstance(key, int) else str(key)


def _listed(obj: Any) -> List[Any]:
    """A tuple as a list; a set as a sorted list (its own order is the process's hash seed, and
    the core names stored files by content: the same set must cross the same way in every
    process), by value where its members compare, else by type and ``repr``."""
    if isinstance(obj, tuple):
        return list(obj)
    try:
        return sorted(obj)
    except TypeError:
        return sorted(obj, key=lambda v: (type(v).__name__, repr(v)))


def _refuse(obj: Any) -> Any:
    if isinstance(obj, (tuple, set, frozenset)):
        return _listed(obj)
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
