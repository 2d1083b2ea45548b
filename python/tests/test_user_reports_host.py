"""Found by trying the package as a new user would: each test failed before its fix."""

from __future__ import annotations

import asyncio
import inspect
import json
import time

import pytest

from context_compactor import Compactor, CompactorError, InvalidConfigError, MemoryStore, create_compactor

from conftest import chat


def test_an_async_on_pre_compact_that_never_settles_is_no_decision_after_summarize_timeout() -> None:
    asked = []

    async def hook(context: object) -> None:
        asked.append(context)
        await asyncio.Event().wait()  # never

    compactor = Compactor(context_window=8_000, summarize_timeout=0.2, on_pre_compact=hook)
    started = time.monotonic()
    result = asyncio.run(compactor.amanage(chat(30)))
    assert len(asked) == 1 and any(e["strategy"] == "summarize" for e in result.events)
    assert time.monotonic() - started < 5
    # From the sync API too (the hook's coroutine on a private loop).
    again = Compactor(context_window=8_000, summarize_timeout=0.2, on_pre_compact=hook)
    assert any(e["strategy"] == "summarize" for e in again.manage(chat(30)).events)


def test_an_on_pre_compact_answer_that_is_not_a_dict_is_an_invalid_config_error_naming_the_hook() -> None:
    compactor = Compactor(context_window=8_000, on_pre_compact=lambda context: "cancel")
    with pytest.raises(InvalidConfigError) as caught:
        compactor.manage(chat(30))
    assert caught.value.field == "on_pre_compact"


def test_host_options_of_the_wrong_type_and_the_overflow_option() -> None:
    for kwargs, field in (
        ({"summarize_timeout": True}, "summarize_timeout"),
        ({"store_timeout": True}, "store_timeout"),
        ({"background": "no"}, "background"),
        ({"overflow": {"retries": -1}}, "overflow.retries"),
        ({"overflow": {"retry": 2}}, "overflow.retry"),
        ({"overflow": 2}, "overflow"),
    ):
        with pytest.raises(InvalidConfigError) as caught:
            Compactor(**kwargs)
        assert caught.value.field == field, kwargs
    assert Compactor().overflow_retries == 1
    assert Compactor(overflow={"retries": 3}).overflow_retries == 3


def test_the_signature_defaults_are_the_cores() -> None:
    from context_compactor import _core

    defaults = json.loads(_core.call("host-settings", "{}"))
    signature = inspect.signature(Compactor.__init__).parameters
    assert signature["summarize_timeout"].default * 1000 == defaults["summarizeTimeoutMs"]
    assert signature["store_timeout"].default * 1000 == defaults["storeTimeoutMs"]


def test_system_prompt_types_and_a_failing_memory_read() -> None:
    compactor = Compactor()
    with pytest.raises(TypeError, match="system_prompt: base must be a str"):
        compactor.system_prompt(42)  # type: ignore[arg-type]

    class Failing(MemoryStore):
        def read(self, path: str):  # type: ignore[no-untyped-def]
            if path.startswith("/memories/"):
                raise ConnectionResetError("ECONNRESET")
            return super().read(path)

    failing = Compactor(store=Failing())
    with pytest.raises(CompactorError) as caught:
        failing.system_prompt("You are an agent.")
    assert caught.value.code == "store_failed" and caught.value.details["path"] == "/memories/AGENTS.md"
    assert failing.system_prompt("You are an agent.", memory=False).startswith("You are an agent.")


def test_an_app_file_at_state_path_that_is_not_a_state_is_refused_and_kept() -> None:
    for text in ("{}", '{"not": "a state"}'):
        store = MemoryStore()
        store.write("/chat/data.json", text)
        with pytest.raises(InvalidConfigError):
            Compactor(store=store, state_path="/chat/data.json")
        with pytest.raises(InvalidConfigError):
            asyncio.run(create_compactor(store=store, state_path="/chat/data.json"))
        assert store.read("/chat/data.json") == text
    with pytest.raises(InvalidConfigError):
        Compactor(state={"foo": 1})


def test_close_twice_is_nothing_and_a_call_after_it_is_a_typed_disposed_error() -> None:
    compactor = Compactor()
    compactor.close()
    compactor.close()
    for call in (compactor.stats, lambda: compactor.usage([{"role": "user", "content": "hi"}]), lambda: compactor.manage([{"role": "user", "content": "hi"}])):
        with pytest.raises(CompactorError) as caught:
            call()
        assert caught.value.code == "disposed"


def test_a_result_says_the_tokens_it_started_from_and_the_tokens_it_sends() -> None:
    big = "\n".join(f"row {i}: " + "data " * 8 for i in range(4000))
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "t1", "toolName": "dump", "input": {}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "t1", "toolName": "dump", "output": {"type": "text", "value": big}}]},
    ]
    compactor = Compactor(context_window=16_000)
    done = compactor.manage(messages)
    assert done.tokens_before == done.plan["tokensBefore"] > 16_000
    assert done.tokens_after == compactor.usage(done.messages)["tokens"] < 16_000

    class Refusing(MemoryStore):
        def write(self, path: str, content: str) -> None:
            raise OSError("disk full")

    kept = Compactor(context_window=16_000, store=Refusing()).manage(messages)
    assert kept.tokens_after == kept.tokens_before > kept.plan["tokensAfter"]


def test_the_sync_api_over_an_async_store_inside_a_running_loop_is_an_error_not_a_failed_write() -> None:
    class AsyncStore(MemoryStore):
        async def write(self, path: str, content: str) -> None:  # type: ignore[override]
            MemoryStore.write(self, path, content)

    big = "\n".join(f"row {i}: " + "data " * 8 for i in range(4000))
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "t1", "toolName": "dump", "input": {}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "t1", "toolName": "dump", "output": {"type": "text", "value": big}}]},
    ]

    async def inside() -> None:
        with pytest.raises(InvalidConfigError, match="use amanage") as caught:
            Compactor(context_window=16_000, store=AsyncStore(), store_timeout=None).manage(messages)
        assert caught.value.field == "store"

    asyncio.run(inside())


def test_compact_instructions_that_are_not_a_str_are_a_type_error() -> None:
    with pytest.raises(TypeError, match="compact: instructions must be a str"):
        Compactor().compact([{"role": "user", "content": "hi"}], instructions=5)  # type: ignore[arg-type]


def test_a_hooks_own_timeout_error_is_raised_not_taken_for_no_answer() -> None:
    def sync_hook(context: object) -> None:
        raise TimeoutError("approval timed out")

    async def async_hook(context: object) -> None:
        raise TimeoutError("approval timed out")

    for hook in (sync_hook, async_hook):
        with pytest.raises(TimeoutError, match="approval timed out"):
            Compactor(context_window=8_000, on_pre_compact=hook).manage(chat(30))
        with pytest.raises(TimeoutError, match="approval timed out"):
            asyncio.run(Compactor(context_window=8_000, on_pre_compact=hook).amanage(chat(30)))


def test_config_errors_keep_the_apps_names_by_path_and_leave_values_alone() -> None:
    with pytest.raises(InvalidConfigError) as caught:
        Compactor({"compaction": {"trigger_fraction": 0.5}}, history={"triggerFraction": 1.5})
    assert caught.value.field == "history.triggerFraction", caught.value
    with pytest.raises(InvalidConfigError) as caught:
        Compactor(cache={"provider": "openAi"})
    assert "`openAi`" in str(caught.value), caught.value
