"""Overflow recovery in the Python host: the core's table reads the provider's error (the same
rows as the npm package: js/test/overflow.test.mjs), ``recover`` compacts harder, and the
LangChain middleware retries the model call on it."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List

import pytest

from context_compactor import InvalidConfigError, Compactor, CompactorError, is_overflow_error, parse_overflow

from conftest import assert_paired, chat


class APIStatusError(Exception):
    """The shape of the ``openai`` / ``anthropic`` SDKs' errors: ``message``, ``status_code``,
    ``body``."""

    def __init__(self, message: str, status_code: int, body: Any) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.body = body


def test_each_provider_text_and_its_counts() -> None:
    openai = parse_overflow(
        APIStatusError(
            "Error code: 400",
            400,
            {"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 204308 tokens.", "code": "context_length_exceeded"}},
        )
    )
    assert openai is not None
    assert (openai["provider"], openai["reportedTokens"], openai["limit"]) == ("openai", 204_308, 128_000)
    anthropic = parse_overflow(RuntimeError("prompt is too long: 219898 tokens > 200000 maximum"))
    assert anthropic == {"provider": "anthropic", "reportedTokens": 219_898, "limit": 200_000, "message": "prompt is too long: 219898 tokens > 200000 maximum"}
    google = parse_overflow(ValueError("400 INVALID_ARGUMENT. The input token count (1200293) exceeds the maximum number of tokens allowed (1048576)."))
    assert google is not None and google["provider"] == "google" and google["limit"] == 1_048_576
    mistral = parse_overflow("Prompt contains 300000 tokens, too large for model with 131072 maximum context length")
    assert mistral is not None and (mistral["reportedTokens"], mistral["limit"]) == (300_000, 131_072)
    # The cause is read too (an SDK error wrapped by the app).
    try:
        try:
            raise APIStatusError("prompt is too long: 9 tokens > 8 maximum", 400, None)
        except APIStatusError as inner:
            raise RuntimeError("the agent failed") from inner
    except RuntimeError as wrapped:
        assert parse_overflow(wrapped)["reportedTokens"] == 9  # type: ignore[index]
    # Throttles and server errors never are, whatever their text.
    assert parse_overflow(APIStatusError("prompt is too long", 429, None)) is None
    assert parse_overflow(APIStatusError("prompt is too long", 503, None)) is None
    assert parse_overflow(RuntimeError("Rate limit reached for tokens per min")) is None

    class GenaiError(Exception):  # google-genai's APIError: the HTTP status in `code`
        def __init__(self, code: int, message: str) -> None:
            super().__init__(f"{code} {message}")
            self.code, self.status = code, "UNAVAILABLE"

    said = "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576)."
    assert parse_overflow(GenaiError(503, said)) is None
    assert parse_overflow(GenaiError(400, said)) is not None
    # The Anthropic text of a prompt that fits only without the reply's room.
    room = parse_overflow(RuntimeError("input length and `max_tokens` exceed context limit: 178959 + 64000 > 200000, decrease input length or `max_tokens` and try again"))
    assert room is not None and (room["reportedTokens"], room["limit"]) == (178_959, 136_000)
    assert not is_overflow_error(ValueError("invalid api key"))
    from langchain_core.exceptions import ContextOverflowError

    assert parse_overflow(ContextOverflowError("too big"))["provider"] == "generic"  # type: ignore[index]


def test_recover_compacts_below_the_provider_limit_and_says_so() -> None:
    events: List[Dict[str, Any]] = []
    compactor = Compactor(context_window=64_000, on_event=events.append)
    messages = chat(14)
    tokens = compactor.usage(messages)["tokens"]
    assert compactor.manage(messages).events == [], "inside the window: manage does nothing"
    error = APIStatusError(f"prompt is too long: {tokens} tokens > 8000 maximum", 400, None)
    result = compactor.recover(messages, error)
    assert result.overflow is not None and result.overflow["limit"] == 8_000
    assert result.events and all(e["overflow"]["provider"] == "anthropic" and e["overflow"]["attempt"] == 1 for e in result.events)
    assert compactor.usage(result.messages)["tokens"] < tokens
    assert_paired(result.messages)
    assert events == result.events
    # Not an overflow: raised again unchanged.
    other = ValueError("invalid api key")
    with pytest.raises(ValueError) as raised:
        compactor.recover(messages, other)
    assert raised.value is other
    # Nothing left to compact: a typed error naming the provider, the original as its cause.
    tiny = [{"role": "user", "content": "hi"}]
    with pytest.raises(CompactorError) as refused:
        Compactor(context_window=64_000).recover(tiny, error)
    assert refused.value.code == "context_overflow" and refused.value.details["provider"] == "anthropic"
    assert refused.value.__cause__ is error
    assert asyncio.run(Compactor(context_window=64_000).arecover(messages, error)).events
    # The provider's text instead of its exception: a typed error naming the call (a user got
    # "exception causes must derive from BaseException").
    with pytest.raises(InvalidConfigError, match=r"^recover: error must be the exception"):
        compactor.recover(messages, "prompt is too long")  # type: ignore[arg-type]
    with pytest.raises(InvalidConfigError, match=r"^arecover: error must be"):
        asyncio.run(compactor.arecover(messages, None))  # type: ignore[arg-type]


def test_the_langchain_middleware_retries_a_refused_model_call_once() -> None:
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage

    from context_compactor.langchain import CompactorMiddleware

    limit = 12_000
    prompts: List[int] = []
    counter = Compactor(context_window=64_000)

    class Refusing(GenericFakeChatModel):
        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            from context_compactor.langchain import to_model_messages

            tokens = counter.usage(to_model_messages(messages))["tokens"]
            prompts.append(tokens)
            if tokens > limit:
                raise APIStatusError(f"prompt is too long: {tokens} tokens > {limit} maximum", 400, None)
            return super()._generate(messages, stop, run_manager, **kwargs)

    model = Refusing(messages=iter([AIMessage(content="done")]))
    middleware = CompactorMiddleware(context_window=64_000)
    agent = create_agent(model=model, tools=[], middleware=[middleware])
    history = []
    for m in chat(14, tool_call=False):
        history.append(HumanMessage(content=m["content"]) if m["role"] == "user" else AIMessage(content=m["content"] if isinstance(m["content"], str) else str(m["content"])))
    state = agent.invoke({"messages": history})
    assert len(prompts) == 2 and prompts[0] > limit >= prompts[1], prompts
    assert state["messages"][-1].content == "done"
    # No retries: the refusal surfaces.
    prompts.clear()
    strict = create_agent(model=Refusing(messages=iter([AIMessage(content="done")])), tools=[], middleware=[CompactorMiddleware(context_window=64_000, overflow_retries=0)])
    with pytest.raises(APIStatusError):
        strict.invoke({"messages": history})
    assert len(prompts) == 1


def test_recover_an_attempt_that_is_not_a_whole_number_is_a_type_error_naming_recover() -> None:
    compactor = Compactor(model="gpt-4o")
    error = Exception("prompt is too long: 250000 tokens > 200000 maximum")
    for attempt in (0, 1.5, "x", None, True):
        with pytest.raises(TypeError, match=r"^recover: attempt must be a whole number >= 1"):
            compactor.recover([{"role": "user", "content": "hi"}], error, attempt=attempt)  # type: ignore[arg-type]
