"""context-compactor: keeps LLM conversations inside their context window — exact token
counts, tool results offloaded to a store (reversibly), older turns summarized with the
transcript stored first. The same Rust core as the npm package, run as a WebAssembly Component
by ``wasmtime``.

>>> from context_compactor import Compactor, count_tokens
>>> count_tokens("Hello, world!")
4
"""

from __future__ import annotations

from typing import Optional

from . import _core, loop
from .compactor import (
    AGENTS_MD_PATH,
    DEFAULT_STATE_PATH,
    Compactor,
    ManageResult,
    Message,
    Plan,
    Summarizer,
    load_state,
)
from .errors import (
    CompactorError,
    EncodingError,
    InvalidConfigError,
    InvalidMessageError,
    InvalidPathError,
    MalformedJsonError,
    PlanMismatchError,
)
from .stores import FileStore, LocalStore, MemoryStore, check_path
from .tools import RecoveryTool, grep, ls, read_file, recovery_tools

__version__ = "0.1.0"


def count_tokens(text: str, encoding: str = "o200k_base") -> int:
    """Exact token count of ``text`` in ``encoding`` (``o200k_base`` or ``cl100k_base``), as
    tiktoken's ``encode_ordinary`` counts."""
    if not isinstance(text, str):
        raise InvalidMessageError("invalid_messages", f"count_tokens: text must be a str, got {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates: replaced by U+FFFD (a split pair joined), as tiktoken itself does.
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return int(_core.call("count-tokens", text, encoding))


def recovery_segment(offload_prefix: str = "/tool_outputs/", history_prefix: str = "/conversation_history/") -> str:
    """The system-prompt segment that tells an agent where offloaded content and transcripts
    are and how to read them back."""
    return str(_core.call("recovery-segment", offload_prefix, history_prefix))


def with_memory(system: str, agents_md: Optional[str]) -> str:
    """``system`` with the long-term memory file's text appended, when there is one."""
    return str(_core.call("with-memory", system, agents_md))


__all__ = [
    "AGENTS_MD_PATH",
    "DEFAULT_STATE_PATH",
    "Compactor",
    "CompactorError",
    "EncodingError",
    "FileStore",
    "InvalidConfigError",
    "InvalidMessageError",
    "InvalidPathError",
    "LocalStore",
    "MalformedJsonError",
    "ManageResult",
    "MemoryStore",
    "Message",
    "Plan",
    "PlanMismatchError",
    "RecoveryTool",
    "Summarizer",
    "check_path",
    "count_tokens",
    "grep",
    "load_state",
    "loop",
    "ls",
    "read_file",
    "recovery_segment",
    "recovery_tools",
    "with_memory",
]
