"""context-compactor: keeps LLM conversations inside their context window — exact token
counts, tool results offloaded to a store (reversibly), older turns summarized with the
transcript stored first. The same Rust core as the npm package, run as a WebAssembly Component
by ``wasmtime``.

>>> from context_compactor import Compactor, count_tokens
>>> count_tokens("Hello, world!")
4
"""

from __future__ import annotations

import base64
import json
from typing import Any, Dict, List, Mapping, Optional, Sequence, cast

from . import _core, loop, tokenizers
from .codec import well_formed as _well_formed
from .compactor import (
    DEFAULT_STATE_PATH,
    Compactor,
    create_compactor,
    ManageResult,
    Message,
    Plan,
    Summarizer,
    aload_state,
    load_state,
    tool_definitions,
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
from .overflow import is_overflow_error, parse_overflow
from .report import ReportData, ReportRecorder, create_report_recorder, render_report, render_report_chart
from .stores import (
    AGENTS_MD_PATH,
    MAX_PATH_LENGTH,
    MAX_SEGMENT_BYTES,
    MEMORIES_PREFIX,
    AsyncCompositeStore,
    AsyncRedisStore,
    CompositeStore,
    FileStore,
    LocalStore,
    MemoryStore,
    RedisStore,
    aload_agents_md,
    check_path,
    check_prefix,
    load_agents_md,
)
from .tokenizers import check_str as _check_str
from .tokenizers import is_encoding_loaded, load_encoding, load_tokenizer
from .tools import RecoveryTool, grep, ls, read_file, recovery_tools

__version__ = "0.1.0"


def count_tokens(text: str, encoding: str = "o200k_base") -> int:
    """Exact token count of ``text`` in ``encoding``: ``o200k_base`` or ``cl100k_base`` (as
    tiktoken's ``encode_ordinary`` counts), a prebuilt tokenizer the package ships (``qwen3``,
    ``qwen2_5``, ``deepseek_v3``, ``mistral_tekken_*``: loaded on first use) or one loaded with
    ``load_tokenizer``."""
    if not isinstance(text, str):
        raise InvalidMessageError("invalid_messages", f"count_tokens: text must be a str, got {type(text).__name__}")
    _check_str("count_tokens", "encoding", encoding)
    tokenizers.ensure_loaded(encoding)
    return int(_core.call("count-tokens", _well_formed(text), encoding))


def count_breakdown(messages: Sequence[Any], *, tools: Any = None, encoding: str = "o200k_base") -> Dict[str, Any]:
    """Where a request's tokens are, per message, part and tool definition (the npm package's
    ``countBreakdown``): ``{"total", "replyPriming", "messages": [{"role", "total", "overhead",
    "parts"}], "tools": {"total", "definitions"}}``. ``tools``: definitions (``{"name",
    "description", "inputSchema"}``), a mapping of name to definition, or tool objects with
    ``name``, ``description`` and ``input_schema`` / ``args_schema`` (the recovery tools,
    LangChain tools). ``encoding``: ``o200k_base`` or ``cl100k_base``. The counts are a
    compactor's own: exact text, the documented framing, image and file estimates."""
    if not isinstance(messages, (list, tuple)):
        raise InvalidMessageError("invalid_messages", f"count_breakdown: messages must be a list, got {type(messages).__name__}")
    _check_str("count_breakdown", "encoding", encoding)
    # ensure_ascii: a lone surrogate is written as its escape, which the core reads as U+FFFD.
    text = json.dumps(list(messages), default=_json_bytes)
    tokenizers.ensure_loaded(encoding)
    return cast(Dict[str, Any], json.loads(_core.call("count-breakdown", text, json.dumps(tool_definitions(tools), default=str), encoding)))


def _json_bytes(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON")


#: Anthropic accepts at most this many cache breakpoints per request.
ANTHROPIC_MAX_BREAKPOINTS = 4


def anthropic_cache_control(
    messages: Sequence[Mapping[str, Any]], *, max_breakpoints: int = ANTHROPIC_MAX_BREAKPOINTS, ttl: Optional[str] = None
) -> List[Dict[str, Any]]:
    """Anthropic cache breakpoints (``providerOptions.anthropic.cacheControl``) for messages in
    the core's (AI SDK ``ModelMessage``) shape, as the npm package's ``anthropicCacheControl``:
    on the last system message and on the last message, so the next call reads the whole
    conversation so far from the cache; breakpoints already set are kept, newest first, and the
    oldest others taken off to stay within ``max_breakpoints`` (at most 4; fewer when the tools
    carry some). ``ttl``: ``"5m"`` or ``"1h"``. The rule is the core's. Returns a new list (the
    messages it marks or unmarks are copies); the input is not changed."""
    if not isinstance(messages, (list, tuple)):
        raise InvalidMessageError("invalid_messages", f"anthropic_cache_control: messages must be a list, got {type(messages).__name__}")
    if not isinstance(max_breakpoints, int) or isinstance(max_breakpoints, bool) or max_breakpoints < 0:
        raise InvalidConfigError("invalid_config", f"anthropic_cache_control: max_breakpoints must be a whole number >= 0, got {max_breakpoints!r}", {"field": "max_breakpoints"})
    if ttl not in (None, "5m", "1h"):
        raise InvalidConfigError("invalid_config", f"anthropic_cache_control: ttl must be '5m' or '1h', got {ttl!r}", {"field": "ttl"})
    control: Dict[str, Any] = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    out: List[Dict[str, Any]] = [cast(Dict[str, Any], m) for m in messages]
    system = [isinstance(m, Mapping) and m.get("role") == "system" for m in out]
    marked = [_anthropic(m).get("cacheControl") is not None for m in out]
    where = json.loads(_core.call("anthropic-breakpoints", system, marked, min(max_breakpoints, ANTHROPIC_MAX_BREAKPOINTS)))
    for i in where["add"]:
        out[i] = _with_cache_control(out[i], dict(control))
    for i in where["remove"]:
        out[i] = _with_cache_control(out[i], None)
    return out


def _anthropic(message: Any) -> Dict[str, Any]:
    options = message.get("providerOptions") if isinstance(message, Mapping) else None
    anthropic = options.get("anthropic") if isinstance(options, Mapping) else None
    return dict(anthropic) if isinstance(anthropic, Mapping) else {}


def _with_cache_control(message: Dict[str, Any], control: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """A copy of ``message`` with ``control`` as its breakpoint (None: without one), its other
    provider options kept; emptied option objects left out."""
    anthropic = _anthropic(message)
    if control is None:
        anthropic.pop("cacheControl", None)
    else:
        anthropic["cacheControl"] = control
    options = dict(message.get("providerOptions") or {})
    options["anthropic"] = anthropic
    if not anthropic:
        del options["anthropic"]
    copy = {**message, "providerOptions": options}
    if not options:
        del copy["providerOptions"]
    return copy


def model_info(model: str) -> Dict[str, Any]:
    """The model registry's entry for ``model`` (``gpt-4o``, ``claude-sonnet-4-5``,
    ``qwen/qwen3-32b``, ...): ``contextWindow``, ``encoding``, ``tokenizer`` (the Hugging Face
    tokenizer that would count it exactly, or None), ``family``, ``tokenRatio``. An unknown model
    gets the defaults, with ``matched`` None."""
    return cast(Dict[str, Any], json.loads(_core.call("model-info", _model_name("model_info", model))))


def count_model_tokens(text: str, model: str) -> Dict[str, Any]:
    """``text``'s tokens for ``model``, as a compactor for that model counts them before
    calibration: ``{"tokens", "exact", "counter", "ratio"}``. Exact for OpenAI models (both
    encodings are built in) and for models whose tokenizer the package ships or
    ``load_tokenizer`` loaded (Qwen, DeepSeek, Mistral; loaded on first use); the others are
    their encoding's count times the family's factor."""
    if not isinstance(text, str):
        raise InvalidMessageError("invalid_messages", f"count_model_tokens: text must be a str, got {type(text).__name__}")
    name = _model_name("count_model_tokens", model)
    tokenizers.ensure_loaded(model_info(name).get("tokenizer"))
    return cast(Dict[str, Any], json.loads(_core.call("count-model-tokens", _well_formed(text), name)))


def _model_name(what: str, model: object) -> str:
    if not isinstance(model, str):
        raise InvalidConfigError("invalid_config", f"{what}: model must be a str, got {type(model).__name__}", {"field": "model"})
    return _well_formed(model)


def recovery_segment(offload_prefix: str = "/tool_outputs/", history_prefix: str = "/conversation_history/") -> str:
    """The system-prompt segment that tells an agent where offloaded content and transcripts
    are and how to read them back."""
    _check_str("recovery_segment", "offload_prefix", offload_prefix)
    _check_str("recovery_segment", "history_prefix", history_prefix)
    return str(_core.call("recovery-segment", offload_prefix, history_prefix))


def memory_segment(memories_prefix: str = MEMORIES_PREFIX) -> str:
    """The system-prompt segment of the long-term memory protocol (read ``AGENTS.md`` under
    ``memories_prefix`` first, keep it current), as the npm package's ``memorySegment``."""
    _check_str("memory_segment", "memories_prefix", memories_prefix)
    return str(_core.call("memory-segment", memories_prefix))


def with_memory(system: str, agents_md: Optional[str]) -> str:
    """``system`` with the long-term memory file's text appended, when there is one."""
    _check_str("with_memory", "system", system)
    if agents_md is not None:
        _check_str("with_memory", "agents_md", agents_md)
    return str(_core.call("with-memory", system, agents_md))


__all__ = [
    "ANTHROPIC_MAX_BREAKPOINTS",
    "anthropic_cache_control",
    "count_breakdown",
    "is_encoding_loaded",
    "load_encoding",
    "load_tokenizer",
    "count_model_tokens",
    "model_info",
    "AGENTS_MD_PATH",
    "MAX_PATH_LENGTH",
    "MAX_SEGMENT_BYTES",
    "memory_segment",
    "MEMORIES_PREFIX",
    "AsyncCompositeStore",
    "AsyncRedisStore",
    "CompositeStore",
    "DEFAULT_STATE_PATH",
    "Compactor",
    "create_compactor",
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
    "RedisStore",
    "RecoveryTool",
    "Summarizer",
    "check_path",
    "check_prefix",
    "count_tokens",
    "create_report_recorder",
    "render_report",
    "render_report_chart",
    "ReportData",
    "ReportRecorder",
    "grep",
    "load_state",
    "aload_state",
    "load_agents_md",
    "aload_agents_md",
    "parse_overflow",
    "is_overflow_error",
    "loop",
    "ls",
    "read_file",
    "recovery_segment",
    "recovery_tools",
    "with_memory",
]
