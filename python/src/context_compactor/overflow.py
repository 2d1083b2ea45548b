"""A provider's "prompt too long" error. What the error's texts mean is the core's table
(``src/overflow.rs``: OpenAI, Anthropic, Google, Mistral, xAI, Bedrock, vLLM, TGI, llama.cpp,
Ollama; the same for every host); this module only gathers the texts a Python exception
carries: its message, code and response body (the ``openai``, ``anthropic``, ``google-genai``
and ``mistralai`` SDKs' error objects, an ``httpx`` response), and the same for its cause and
context."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from . import _core
from .errors import CompactorError, error as typed_error

#: How much of each text is read: a provider's overflow message is short, and a huge response
#: body (an echoed prompt) must not make every failed call slow.
_TEXT_LIMIT = 16_384


def parse_overflow(error: Any) -> Optional[Dict[str, Any]]:
    """Whether ``error`` is a provider's "prompt too long" error, and what it says:
    ``{"provider", "reportedTokens"?, "limit"?, "message"}`` (for a limit on prompt plus output,
    the limit less the output requested). None for anything else, including a 429 or 5xx
    whatever its text. LangChain's ``ContextOverflowError`` is one whatever its text."""
    texts = _texts(error)
    status = _status(error)
    found = json.loads(_core.call("parse-overflow", texts, status))
    if found is None and _is_langchain_overflow(error):
        found = {"provider": "generic", "message": texts[0] if texts else type(error).__name__}
    return found if isinstance(found, dict) else None


def overflow_verdict(moment: str, info: Optional[Dict[str, Any]], attempt: int, retries: int) -> Dict[str, Any]:
    """What a retry loop does next, by the core's rules (``src/overflow.rs``, the same for every
    host and middleware): ``moment`` is ``"refused"`` (the call raised), ``"cut"`` (it answered,
    stopped at the context window) or ``"nothing-left"`` (``recover`` found nothing to compact);
    ``info`` what the error said (``parse_overflow``; None: not an overflow), ``attempt`` the
    compactions made for this model call so far, ``retries`` how many it may make. Returns
    ``{"verdict": "as-is"}`` (raise or return it as it is), ``{"verdict": "retry", "attempt"}``
    or ``{"verdict": "fail", "error": CompactorError("context_overflow")}``."""
    said: Dict[str, Any] = json.loads(_core.call("overflow-verdict", json.dumps({"moment": moment, "overflow": info, "attempt": attempt, "retries": retries})))
    if said["verdict"] == "fail":
        failure: CompactorError = typed_error("context_overflow", said["message"], said["details"])
        return {"verdict": "fail", "error": failure}
    return said


def is_overflow_error(error: Any) -> bool:
    """``parse_overflow(error) is not None``."""
    return parse_overflow(error) is not None


def _texts(error: Any, depth: int = 0, out: Optional[List[str]] = None) -> List[str]:
    out = [] if out is None else out
    if error is None or depth > 4:
        return out

    def push(text: Any) -> None:
        if isinstance(text, str) and text:
            out.append(text[:_TEXT_LIMIT])
        elif isinstance(text, (dict, list)):
            try:
                out.append(json.dumps(text, ensure_ascii=False, default=str)[:_TEXT_LIMIT])
            except (TypeError, ValueError):
                pass

    if isinstance(error, str):
        push(error)
        return out
    if isinstance(error, dict):
        push(error.get("message"))
        push(error.get("code") if isinstance(error.get("code"), str) else None)
        push(error.get("type") if isinstance(error.get("type"), str) else None)
        _texts(error.get("error"), depth + 1, out)
        return out
    if isinstance(error, BaseException):
        push(str(error))
    message = getattr(error, "message", None)
    if isinstance(message, str) and message not in out:
        push(message)
    code = getattr(error, "code", None)
    if isinstance(code, str):
        push(code)
    body = getattr(error, "body", None)
    push(body if isinstance(body, (str, dict, list)) else None)
    response = getattr(error, "response", None)
    if response is not None:
        try:
            text = getattr(response, "text", None)
            push(text if isinstance(text, str) else None)
        except Exception:  # a streamed response that was not read
            pass
    if isinstance(error, BaseException):
        _texts(error.__cause__, depth + 1, out)
        if not error.__suppress_context__:
            _texts(error.__context__, depth + 1, out)
    errors = getattr(error, "exceptions", None)  # an ExceptionGroup
    if isinstance(errors, (list, tuple)):
        for inner in list(errors)[-2:]:
            _texts(inner, depth + 1, out)
    return out


def _status(error: Any) -> Optional[int]:
    for candidate in (getattr(error, "status_code", None), getattr(error, "status", None), getattr(getattr(error, "response", None), "status_code", None)):
        if isinstance(candidate, int) and not isinstance(candidate, bool) and 0 <= candidate < 65_536:
            return candidate
    # google-genai's errors keep the HTTP status in `code` (an int; other libraries' codes are
    # strings, or gRPC's 0-16, neither an HTTP status).
    code = getattr(error, "code", None)
    if isinstance(code, int) and not isinstance(code, bool) and 100 <= code < 600:
        return code
    return None


def _is_langchain_overflow(error: Any) -> bool:
    try:
        from langchain_core.exceptions import ContextOverflowError
    except ImportError:  # langchain is optional
        return False
    return isinstance(error, ContextOverflowError)
