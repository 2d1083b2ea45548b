"""Bugs a user test found (python/README.md, the npm package's behaviour): ``load_tokenizer``
takes a tokenizer.json's text, bytes or parsed object, as npm's ``loadTokenizer``; an argument
of the wrong type to the counting functions is a ``TypeError`` naming the function and the
argument, not wasmtime's "expected string type"; ``CompactorMiddleware`` given a compactor
refuses ``summary_model`` and the compactor's options instead of dropping them, and retries as
the compactor's ``overflow`` says."""

from __future__ import annotations

import json
import os
import types
from typing import Any, Callable, List

import pytest

import context_compactor as cc
from context_compactor import Compactor, InvalidConfigError, InvalidMessageError

from conftest import REPO

LLAMA = os.path.join(REPO, ".tools", "tokenizers", "llama3", "tokenizer.json")
TEXTS = ["Hello, 世界! def f(x): return x ** 2", "naïve café — ½ 🎉🎉", "  indented\n\tcode();\n"]


@pytest.mark.skipif(not os.path.isfile(LLAMA), reason="no Llama 3 tokenizer.json in .tools/tokenizers")
def test_load_tokenizer_takes_the_text_the_bytes_or_the_parsed_object() -> None:
    with open(LLAMA, "rb") as f:
        raw = f.read()
    forms = {
        "ur_text": raw.decode("utf-8"),
        "ur_bytes": raw,
        "ur_bom": bytearray(b"\xef\xbb\xbf" + raw),  # a BOM dropped, as npm's TextDecoder does
        "ur_dict": json.loads(raw),
        "ur_mapping": types.MappingProxyType(json.loads(raw)),  # any Mapping
    }
    for name, value in forms.items():
        info = cc.load_tokenizer(name, value)
        assert info["name"] == name and info["tokens"] > 100_000, name
        assert cc.is_encoding_loaded(name)
    expected = [cc.count_tokens(t, "ur_text") for t in TEXTS]
    for name in forms:
        assert [cc.count_tokens(t, name) for t in TEXTS] == expected, name


@pytest.mark.parametrize(
    "value, got",
    [(None, "NoneType"), (42, "int"), (["{}"], "list"), ({"model"}, "set")],
)
def test_load_tokenizer_refuses_anything_else_naming_the_argument(value: Any, got: str) -> None:
    with pytest.raises(TypeError, match=rf"^load_tokenizer: tokenizer_json must be .* got {got}$"):
        cc.load_tokenizer("ur_bad", value)


def test_load_tokenizer_refuses_a_name_that_is_not_a_non_empty_str() -> None:
    for name in (None, 3, b"llama", ""):
        with pytest.raises(TypeError, match=r"^load_tokenizer: name must be a non-empty str"):
            cc.load_tokenizer(name, "{}")  # type: ignore[arg-type]


def test_load_tokenizer_refuses_an_object_that_is_not_json() -> None:
    with pytest.raises(TypeError, match=r"^load_tokenizer: tokenizer_json is not JSON"):
        cc.load_tokenizer("ur_bad", {"model": object()})


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: cc.count_tokens("x", None), "count_tokens: encoding must be a str, got NoneType"),
        (lambda: cc.count_tokens("x", 5), "count_tokens: encoding must be a str, got int"),
        (lambda: cc.count_breakdown([], encoding=None), "count_breakdown: encoding must be a str, got NoneType"),
        (lambda: cc.load_encoding(None), "load_encoding: name must be a str, got NoneType"),
        (lambda: cc.load_encoding("qwen3", "not bytes"), "load_encoding: data must be bytes (rank or prebuilt tokenizer data) or None, got str"),
        (lambda: cc.recovery_segment(None), "recovery_segment: offload_prefix must be a str, got NoneType"),
        (lambda: cc.recovery_segment("/a/", 1), "recovery_segment: history_prefix must be a str, got int"),
        (lambda: cc.memory_segment(None), "memory_segment: memories_prefix must be a str, got NoneType"),
        (lambda: cc.with_memory(None, None), "with_memory: system must be a str, got NoneType"),
        (lambda: cc.with_memory("sys", 5), "with_memory: agents_md must be a str, got int"),
    ],
)
def test_a_wrong_argument_type_is_a_type_error_naming_it(call: Callable[[], Any], message: str) -> None:
    with pytest.raises(TypeError) as raised:
        call()
    assert str(raised.value) == message


def test_the_documented_defaults_and_the_earlier_checks_stand() -> None:
    assert cc.count_tokens("Hello, world!") == 4 == cc.count_tokens("Hello, world!", "o200k_base")
    assert cc.with_memory("sys", None) == "sys"
    assert cc.recovery_segment() and cc.memory_segment()
    assert cc.is_encoding_loaded(None) is False  # type: ignore[arg-type]  # as npm's isEncodingLoaded
    with pytest.raises(InvalidMessageError):
        cc.count_tokens(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidConfigError) as model:
        cc.count_model_tokens("x", None)  # type: ignore[arg-type]
    assert model.value.field == "model"


langchain = pytest.importorskip("langchain")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402

from context_compactor.langchain import CompactorMiddleware  # noqa: E402


class Fake(FakeMessagesListChatModel):
    def bind_tools(self, tools: Any, **kw: Any) -> "Fake":
        return self


def history() -> List[Any]:
    return [HumanMessage(f"turn {i} " + "blah " * 400) if i % 2 == 0 else AIMessage(f"reply {i} " + "meh " * 400) for i in range(30)]


def test_middleware_given_a_compactor_refuses_summary_model_and_options() -> None:
    compactor = Compactor(model="gpt-4o", context_window=12_000)
    with pytest.raises(InvalidConfigError) as summary:
        CompactorMiddleware(compactor, summary_model=Fake(responses=[AIMessage("MODEL SUMMARY")]))
    assert summary.value.code == "invalid_config" and summary.value.field == "summary_model"
    assert "CompactorMiddleware(model=..., summary_model=llm)" in summary.value.message
    with pytest.raises(InvalidConfigError) as option:
        CompactorMiddleware(compactor, context_window=5)
    assert option.value.code == "invalid_config" and option.value.field == "context_window"
    # Its own keywords are still its own.
    assert CompactorMiddleware(compactor, overflow_retries=2, offload_at_return=False).compactor is compactor


def test_middleware_summary_model_writes_the_summary_of_the_compactor_it_makes() -> None:
    results: List[Any] = []
    middleware = CompactorMiddleware(
        model="gpt-4o", context_window=12_000, summary_model=Fake(responses=[AIMessage("MODEL SUMMARY")] * 3), on_result=results.append
    )
    create_agent(Fake(responses=[AIMessage("ok")]), tools=[], middleware=[middleware]).invoke({"messages": history()})
    summaries = [e for r in results for e in r.events if e["strategy"] == "summarize"]
    assert summaries and all(e["status"] == "applied" for e in summaries), summaries


def test_middleware_retries_as_the_compactor_says_unless_told_otherwise() -> None:
    """As npm's middleware (``options.overflowRetries ?? compactor.overflowRetries``)."""
    compactor = Compactor(model="gpt-4o", overflow={"retries": 3})
    assert CompactorMiddleware(compactor)._overflow_retries == 3
    assert CompactorMiddleware(compactor, overflow_retries=0)._overflow_retries == 0
    assert CompactorMiddleware(model="gpt-4o", overflow={"retries": 2})._overflow_retries == 2
    assert CompactorMiddleware(Compactor(model="gpt-4o"))._overflow_retries == 1
