"""The Python host end to end: tier 1 (the slice scenario), tier 2, tier 3 with a failing
summarizer, the sync and async APIs, state, incremental sync."""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
import time
from typing import Any, Dict, List, Tuple

import pytest

from context_compactor import Compactor, InvalidConfigError, InvalidMessageError, LocalStore, MemoryStore, count_tokens, read_file, recovery_tools

from conftest import assert_paired, chat, coding_session


def huge_tool_result(tokens: int) -> str:
    """Log-like lines of ~21 tokens each, every line distinct."""
    return "".join(f"2026-11-25T10:{i // 60 % 60:02d}:{i % 60:02d} worker-{i % 7} processed item {i}\n" for i in range(tokens * 10 // 205))


def slice_conversation(output: str) -> List[Dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a research agent."},
        {"role": "user", "content": "Search the logs for failures."},
        {"role": "assistant", "content": [{"type": "text", "text": "Searching."}, {"type": "tool-call", "toolCallId": "s1", "toolName": "search_logs", "input": {"query": "failure"}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "s1", "toolName": "search_logs", "output": {"type": "text", "value": output}}]},
        {"role": "assistant", "content": "I found the logs."},
        {"role": "user", "content": "Summarize what failed."},
    ]


def test_slice_a_100k_token_tool_result_is_offloaded_at_a_16k_window(tmp_path) -> None:
    output = huge_tool_result(100_000)
    tokens = count_tokens(output)
    assert 100_000 < tokens < 105_000, tokens
    store = LocalStore(tmp_path / "store")
    events: List[Dict[str, Any]] = []
    compactor = Compactor(model="gpt-4o", context_window=16_000, store=store, on_event=events.append)
    messages = slice_conversation(output)
    assert compactor.usage(messages)["tokens"] > 100_000

    result = compactor.manage(messages)

    [event] = result.events
    assert event["status"] == "applied" and event["strategy"] == "offload" and events == result.events
    assert compactor.usage(result.messages)["tokens"] < 16_000 * 0.85
    # Stored byte for byte, on disk, at the path the preview names.
    path = event["path"]
    assert store.read(path) == output
    assert (tmp_path / "store" / path.lstrip("/")).read_bytes() == output.encode("utf-8")
    preview = result.messages[3]["content"][0]["output"]["value"]
    assert path in preview and preview.startswith("[Tool output offloaded:")
    assert_paired(result.messages)
    # Everything else is untouched, and the input was not mutated.
    assert [m for i, m in enumerate(result.messages) if i != 3] == [m for i, m in enumerate(messages) if i != 3]
    assert messages[3]["content"][0]["output"]["value"] == output
    # The messages left as they were are the app's own objects (they cross as indices:
    # src/bindings/json.rs ``as_given``); the one changed is new.
    assert all(result.messages[i] is messages[i] for i in range(len(messages)) if i != 3)
    assert result.messages[3] is not messages[3]
    # The agent reads it back with the recovery tools.
    page = read_file(store, path, offset=10, limit=2)
    assert page.splitlines()[0].split("\t")[1] == output.split("\n")[10]
    assert "more lines: read_file with offset=12" in page
    assert "worker-3 processed item 10" in recovery_tools(store)["grep"](pattern="processed item 10\n".strip(), path="/tool_outputs/")
    # Idempotent: the next call has nothing to do.
    assert compactor.manage(result.messages).events == []


def test_tier_2_evicts_dedupes_and_masks_storing_everything() -> None:
    compactor = Compactor(
        model="gpt-4o",
        context_window=11_000,
        compaction={"target_fraction": 0.55},
        history={"strategy": "off"},
    )
    messages = coding_session()
    before = compactor.usage(messages)["tokens"]
    assert 9_350 < before < 11_000, before
    result = compactor.manage(messages)
    kinds = [a["type"] for a in result.plan["actions"]]
    assert "evict-input" in kinds and "dedupe" in kinds, kinds
    assert result.plan["trigger"]["tier2"]
    assert compactor.usage(result.messages)["tokens"] == result.plan["tokensAfter"] <= result.plan["trigger"]["target"]
    for action in result.plan["actions"]:
        assert compactor.store.read(action["path"]) == action["content"]
        assert action["path"] in json.dumps(result.messages[action["messageIndex"]])
    assert all(e["status"] == "applied" for e in result.events)
    assert_paired(result.messages)
    assert compactor.manage(result.messages + [{"role": "user", "content": "and now?"}]).events == []


def failing(request: Dict[str, Any]) -> str:
    raise RuntimeError("rate limited")


async def failing_async(request: Dict[str, Any]) -> str:
    await asyncio.sleep(0)
    raise RuntimeError("rate limited")


def check_fallback(compactor: Compactor, messages: List[Dict[str, Any]], result: Any, why: str) -> None:
    event = next(e for e in result.events if e["strategy"] == "summarize")
    assert event["status"] == "fallback" and why in event["error"], event
    transcript = next(a for a in result.plan["actions"] if a["type"] == "save-transcript")
    # Transcript first: the whole input is in the store, as JSON and as Markdown.
    assert json.loads(compactor.store.read(transcript["path"])) == messages
    assert compactor.store.read(transcript["readablePath"]).startswith("# Conversation transcript")
    # The result's plan reads as written, after the core moved on to the compacted conversation
    # (it raised plan_mismatch here once: rendered again from the input).
    assert transcript["json"] == compactor.store.read(transcript["path"])
    assert transcript["markdown"] == compactor.store.read(transcript["readablePath"])
    assert "save-transcript" in repr(result) and json.loads(json.dumps(result.plan)) == result.plan
    summary = result.messages[1]["content"]
    assert summary.startswith("[Conversation summary]") and transcript["path"] in summary
    assert "## Session Intent\nTurn 0:" in summary
    assert result.messages[0] == messages[0] and result.messages[-1] == messages[-1]
    assert_paired(result.messages)
    assert compactor.usage(result.messages)["tokens"] <= result.plan["trigger"]["target"]


def test_tier_3_with_a_failing_summarizer_falls_back_to_the_heuristic_summary_transcript_first() -> None:
    messages = chat(30)
    compactor = Compactor(context_window=8_000, summarize=failing)
    assert compactor.usage(messages)["tokens"] > 8_000
    check_fallback(compactor, messages, compactor.manage(messages), "summarizer failed: rate limited")
    # No summarizer at all: the same fallback, saying why.
    bare = Compactor(context_window=8_000)
    check_fallback(bare, messages, bare.manage(messages), "no summarizer configured")


def test_tier_3_async_summarizers_through_amanage() -> None:
    messages = chat(30)
    compactor = Compactor(context_window=8_000, summarize=failing_async)
    check_fallback(compactor, messages, asyncio.run(compactor.amanage(messages)), "rate limited")

    requests: List[Dict[str, Any]] = []

    async def summarize(request: Dict[str, Any]) -> str:
        requests.append(request)
        # Transcript first: it is in the store when the LLM is asked.
        assert len(store.list("/conversation_history/")) == 2
        return "## Session Intent\nChat about many things."

    store = MemoryStore()
    good = Compactor(context_window=8_000, store=store, summarize=summarize)
    result = asyncio.run(good.amanage(messages))
    [request] = requests
    assert request["messages"] == [{"role": "user", "content": request["prompt"]}]
    assert 0 < request["maxTokens"] <= 800
    assert "Chat about many things." in result.messages[1]["content"]
    assert next(e for e in result.events if e["strategy"] == "summarize")["status"] == "applied"


def test_an_async_summarizer_from_sync_code_awaits_on_its_own_loop_or_says_why_it_cannot() -> None:
    """Sync ``manage`` over an async summarizer: awaited on the sync API's own event loop; inside
    a running loop (which a sync call cannot wait on) a typed error saying what to use."""
    messages = chat(30)

    async def summarize(request: Dict[str, Any]) -> str:
        await asyncio.sleep(0)
        return "## Session Intent\nChat about many things."

    result = Compactor(context_window=8_000, summarize=summarize, background=False).manage(messages)
    assert next(e for e in result.events if e["strategy"] == "summarize")["status"] == "applied"

    async def cell() -> None:
        Compactor(context_window=8_000, summarize=summarize, background=False).manage(messages)

    with pytest.raises(InvalidConfigError, match=r"async summarizer called from sync code inside a running event loop.*amanage/acompact \(a LangChain agent: ainvoke"):
        asyncio.run(cell())


def test_an_async_summarizer_that_never_answers_times_out_into_the_fallback() -> None:
    async def never(request: Dict[str, Any]) -> str:
        await asyncio.sleep(60)
        return "late"

    compactor = Compactor(context_window=8_000, summarize=never, summarize_timeout=0.2)
    result = asyncio.run(compactor.amanage(chat(30)))
    event = next(e for e in result.events if e["strategy"] == "summarize")
    assert event["status"] == "fallback" and "no summary within 0.2 s" in event["error"]
    # The sync API runs an async summarizer on a private loop, with the same timeout.
    sync = Compactor(context_window=8_000, summarize=never, summarize_timeout=0.2)
    event = next(e for e in sync.manage(chat(30)).events if e["strategy"] == "summarize")
    assert event["status"] == "fallback"


def test_a_synchronous_summarizer_that_stalls_is_left_behind_within_the_timeout() -> None:
    release = threading.Event()
    seen: List[str] = []
    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="none")

    def stalls(request: Dict[str, Any]) -> str:
        seen.append(marker.get())
        release.wait(30)
        return "late"

    try:
        marker.set("the caller's")
        started = time.monotonic()
        sync = Compactor(context_window=8_000, background=False, summarize=stalls, summarize_timeout=0.3)
        event = next(e for e in sync.manage(chat(30)).events if e["strategy"] == "summarize")
        assert event["status"] == "fallback" and "no summary within 0.3 s" in event["error"]
        assert time.monotonic() - started < 5
        assert seen == ["the caller's"], "run in the caller's context"

        # amanage: the summarizer is off the event loop, which goes on meanwhile.
        async def both() -> Tuple[Dict[str, Any], int]:
            ticks = 0

            async def tick() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.02)
                    ticks += 1

            ticker = asyncio.ensure_future(tick())
            compactor = Compactor(context_window=8_000, background=False, summarize=stalls, summarize_timeout=0.3)
            result = await compactor.amanage(chat(30))
            ticker.cancel()
            return next(e for e in result.events if e["strategy"] == "summarize"), ticks

        event, ticks = asyncio.run(both())
        assert event["status"] == "fallback" and "no summary within 0.3 s" in event["error"]
        assert ticks >= 5, f"the event loop was blocked ({ticks} ticks in 0.3 s)"
    finally:
        release.set()


def test_a_summarize_timeout_past_what_a_thread_wait_takes_still_waits_for_the_summary() -> None:
    compactor = Compactor(context_window=8_000, background=False, summarize=lambda request: "## S\nMade.", summarize_timeout=1e12)
    event = next(e for e in compactor.manage(chat(30)).events if e["strategy"] == "summarize")
    assert event["status"] == "applied", event.get("error")


def test_a_failed_transcript_write_blocks_the_summary_and_removes_nothing() -> None:
    class Broken(MemoryStore):
        def write(self, path: str, text: str) -> None:
            if path.startswith("/conversation_history/"):
                raise OSError("disk full")
            super().write(path, text)

    calls: List[Any] = []
    compactor = Compactor(context_window=8_000, store=Broken(), summarize=lambda r: calls.append(r) or "x")
    messages = chat(30)
    result = compactor.manage(messages)
    assert calls == []
    assert result.messages == messages
    assert any(e["status"] == "failed" and "disk full" in (e.get("error") or "") for e in result.events)


def test_compact_runs_on_demand_with_instructions() -> None:
    prompts: List[str] = []
    compactor = Compactor(context_window=128_000, summarize=lambda r: prompts.append(r["prompt"]) or "Short.")
    messages = chat(12)
    assert compactor.manage(messages).events == []
    result = compactor.compact(messages, instructions="Keep the file names.")
    assert "Keep the file names." in prompts[0]
    assert any(e["strategy"] == "summarize" and e["status"] == "applied" for e in result.events)


def test_the_recovery_tools_ls_and_grep_leave_the_state_and_its_leases_out() -> None:
    store = MemoryStore()
    compactor = Compactor(model="gpt-4o", context_window=16_000, store=store, state_path="/chats/c1/state.json")
    [event] = [e for e in compactor.manage(slice_conversation(huge_tool_result(20_000))).events if e["strategy"] == "offload"]
    store.write("/chats/c1/state.json.summaries/ahead-ab.json", '{"summary": "worker-3 processed item 3"}')
    assert "worker-3 processed item 3" in (store.read("/chats/c1/state.json") or "")
    tools = compactor.tools()
    assert tools["ls"](path="/") == "/" + event["path"].split("/")[1] + "/"
    found = tools["grep"](pattern="worker-3 processed item 3")
    assert found.splitlines()[0].startswith(event["path"] + ":4: "), found
    assert not any(line.startswith("/chats/") for line in found.splitlines())
    assert tools["read_file"](path="/chats/c1/state.json").startswith("1\t{")
    # The standalone functions leave the default state path out, or the one they are given.
    from context_compactor import ls

    store.write("/state/compactor.json", "{}")
    assert ls(store, "/state/").startswith("Nothing stored")
    assert ls(store, "/state/", state_path="/chats/c1/state.json") == "/state/compactor.json"
    assert ls(store, "/chats/c1/", state_path="/chats/c1/state.json").startswith("Nothing stored")


def test_state_round_trips_and_plans_are_deterministic(tmp_path) -> None:
    store = LocalStore(tmp_path)
    first = Compactor(context_window=8_000, store=store, state_path="/state/c.json")
    result = first.manage(chat(30))
    assert result.state_error is None
    saved = json.loads(store.read("/state/c.json"))
    # The core's state, with the revision and the conversation it was saved for.
    assert saved.pop("revision") == 1 and len(saved.pop("conversation")) == 8 * len(chat(30))
    assert saved == first.state() and saved["stats"]["byStrategy"]["summarize"]["events"] == 1
    # A new compactor (another process, say) continues from the saved state.
    second = Compactor(context_window=8_000, store=store, state_path="/state/c.json")
    assert second.stats() == first.stats()
    assert Compactor(context_window=8_000).plan(chat(30)) == Compactor(context_window=8_000).plan(chat(30))


def test_the_held_conversation_syncs_incrementally_and_sees_edits_in_place() -> None:
    compactor = Compactor(model="gpt-4o")
    messages = chat(20)
    first = compactor.usage(messages)["tokens"]
    messages.append({"role": "user", "content": "one more question"})
    assert compactor.usage(messages)["tokens"] == first + count_tokens("one more question") + 4
    # An edit in place that changes a size is seen.
    messages[1]["content"] += " and more"
    assert compactor.usage(messages)["tokens"] == Compactor(model="gpt-4o").usage(messages)["tokens"]


def test_binary_values_cross_untouched() -> None:
    image = bytes(range(256))
    looked = {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image", "image": image, "mediaType": "image/png"}]}
    messages = slice_conversation(huge_tool_result(30_000)) + [looked]
    compactor = Compactor(model="gpt-4o", context_window=16_000)
    result = compactor.manage(messages)
    assert result.events and result.events[0]["strategy"] == "offload"
    # The same bytes object comes back, not a copy or a list of numbers.
    assert result.messages[-1]["content"][1]["image"] is image
    assert compactor.usage([looked])["tokens"] > 1_000  # an image counts (1,600 by default)


def test_binary_values_in_a_summarized_span_reach_the_transcript_and_name_it_by_content() -> None:
    """Bytes in a truncated span: the transcript holds them (base64), not a placeholder, and a
    compactor made anew each call with the saved state names and sends what a long-lived one
    does (placeholders are named by content, not by the order a host met them)."""
    import base64

    image = bytes(range(200)) * 3
    store, shared = MemoryStore(), MemoryStore()
    long_lived = Compactor(context_window=4_000, store=store, history={"strategy": "truncate"})
    raw: List[Dict[str, Any]] = [{"role": "system", "content": "You are an agent."}]
    transcripts = 0
    for t in range(30):
        if t % 8 == 0:
            raw.append({"role": "user", "content": [{"type": "text", "text": f"look {t}"}, {"type": "image", "image": bytes(image), "mediaType": "image/png"}]})
        else:
            raw.append({"role": "user", "content": f"Q {t}: " + " ".join(f"w{(i * 7 + t) % 101}" for i in range(120))})
        a = long_lived.manage(raw)
        fresh = Compactor(context_window=4_000, store=shared, state_path="/state/c.json", history={"strategy": "truncate"})
        b = fresh.manage([dict(m) for m in raw])
        assert json.dumps(a.messages, default=repr) == json.dumps(b.messages, default=repr), f"turn {t}"
        for action in a.plan["actions"]:
            if action["type"] == "save-transcript":
                text = store.read(action["path"])
                assert "$ccRef" not in text and shared.read(action["path"]) == text
                transcripts += 1 if base64.b64encode(image).decode() in text else 0
        raw.append({"role": "assistant", "content": f"Answer {t}: " + " ".join(f"w{(i * 7 + t + 5) % 101}" for i in range(120))})
    assert transcripts >= 1, "a transcript held the image"


def test_options_json_cannot_carry_are_typed_errors_naming_the_field() -> None:
    import math

    from context_compactor import CompactorError

    for kwargs, field in (
        ({"context_window": math.nan}, "context_window"),
        ({"compaction": {"trigger_fraction": math.inf}}, "compaction.trigger_fraction"),
        ({"on_event": 5}, "on_event"),
    ):
        with pytest.raises(CompactorError) as caught:
            Compactor(**kwargs)
        assert caught.value.code == "invalid_config" and caught.value.field == field, (kwargs, caught.value)
    with pytest.raises(CompactorError) as caught:
        Compactor("gpt-4o")  # type: ignore[arg-type]
    assert caught.value.code == "invalid_config" and caught.value.field == "config"


def test_system_prompt_names_the_recovery_paths_and_the_memory_file() -> None:
    store = MemoryStore()
    compactor = Compactor(store=store)
    plain = compactor.system_prompt("You are helpful.")
    assert plain.startswith("You are helpful.") and "/tool_outputs/" in plain and "/memories/AGENTS.md" not in plain
    store.write("/memories/AGENTS.md", "The user prefers tabs.")
    with_memory = compactor.system_prompt("You are helpful.")
    assert "The user prefers tabs." in with_memory and "/memories/" in with_memory


def test_loop_context_rolling_window_summary_request_failure_and_prompt() -> None:
    from context_compactor import PlanMismatchError, loop
    from context_compactor.errors import InvalidConfigError

    state = loop.create("Build the login endpoint", 0)
    request = None
    for i in range(1, 11):
        step = loop.add_iteration(state, {"unixMs": i * 1000, "cli": "codex", "model": "gpt-5", "output": "" if i == 3 else f"<progress>step {i}</progress>"})
        state = step.state
        request = step.request or request
    assert len(state["iterations"]) == 5
    assert request is not None and [m["role"] for m in request["messages"]] == ["user"]
    failed = loop.apply_summary(state, request["id"], {"error": "timeout"})
    assert failed["summary"] == "" and len(failed["pending"]) == 5
    done = loop.apply_summary(state, request["id"], "Steps 1-5 done.")
    prompt = loop.build_prompt(done)
    assert "# Goal\nBuild the login endpoint" in prompt and "Steps 1-5 done." in prompt
    with pytest.raises(PlanMismatchError):
        loop.apply_summary(done, "stale-id", "x")
    with pytest.raises(InvalidConfigError) as e:
        loop.add_iteration(done, {"unixMs": 1, "ouput": "typo"})
    assert e.value.field == "iteration" and "ouput" in str(e.value)


def test_offload_tool_output_refuses_bad_names_and_outputs_naming_the_call() -> None:
    compactor = Compactor(model="gpt-4o", store=MemoryStore())
    big = huge_tool_result(20_000)
    for name, call_id, field in ((None, "c1", "tool_name"), ("t", 3, "tool_call_id")):
        with pytest.raises(InvalidMessageError) as e:
            compactor.offload_tool_output(name, call_id, big)  # type: ignore[arg-type]
        assert e.value.code == "invalid_message" and e.value.field == field
    cyclic: Dict[str, Any] = {}
    cyclic["self"] = cyclic
    for output in (object(), {"a": float("nan")}, cyclic):
        with pytest.raises(InvalidMessageError) as e:
            compactor.offload_tool_output("search", "c2", output)
        assert str(e.value).startswith("offload_tool_output: the output of tool search (call c2): ")
        assert e.value.details["tool_call_id"] == "c2"
    assert compactor.offload_tool_output("search", "c3", big).startswith("[Tool output offloaded:")


def test_offload_tool_output_at_return_time() -> None:
    store = MemoryStore()
    events: List[Dict[str, Any]] = []
    compactor = Compactor(model="gpt-4o", context_window=16_000, store=store, on_event=events.append)
    assert compactor.offload_tool_output("search", "c1", "small") == "small"
    assert events == []
    data = {"rows": [{"n": i, "text": f"row {i} of the table"} for i in range(3_000)]}
    as_json = compactor.offload_tool_output("search", "c2", data)  # JSON data: stored as JSON text
    assert isinstance(as_json, str) and as_json.startswith("[Tool output offloaded:")
    [json_path] = store.list("/tool_outputs/")
    assert json.loads(store.read(json_path)) == data
    big = huge_tool_result(20_000)
    preview = compactor.offload_tool_output("search", "c3", big)
    assert isinstance(preview, str) and preview.startswith("[Tool output offloaded:")
    [path] = [p for p in store.list("/tool_outputs/") if p != json_path]
    assert store.read(path) == big and path in preview
    # on_event hears each offload at return time, as npm's onEvent does.
    assert [(e["strategy"], e["status"], e["path"]) for e in events] == [("offload", "applied", json_path), ("offload", "applied", path)]
    assert asyncio.run(compactor.aoffload_tool_output("search", "c4", big)).startswith("[Tool output offloaded:")

    class Full(MemoryStore):
        def write(self, path: str, text: str) -> None:
            raise OSError("disk full")

    assert Compactor(model="gpt-4o", context_window=16_000, store=Full()).offload_tool_output("search", "c5", big) is big


def test_a_dry_plan_renders_its_transcript_when_first_read() -> None:
    import copy
    import pickle

    from context_compactor import PlanMismatchError

    compactor = Compactor(context_window=8_000)
    messages = chat(30)
    asked: List[str] = []
    call = compactor._core.call

    def spy(name: str, *args: Any) -> Any:
        asked.append(name)
        return call(name, *args)

    compactor._core.call = spy  # type: ignore[method-assign]
    plan = compactor.plan(messages, trigger="manual")
    transcript = next(a for a in plan["actions"] if a["type"] == "save-transcript")
    assert "transcript" not in asked, "a dry plan renders no transcript"
    assert "json" in transcript and len(transcript) > 4
    # Every way of reading it reads the rendered transcript, rendered once.
    assert json.loads(transcript["json"]) == messages
    assert transcript["markdown"].startswith("# Conversation transcript")
    assert asked.count("transcript") == 1
    for seen in (json.loads(json.dumps(plan))["actions"], [dict(transcript)], [copy.copy(transcript)], [pickle.loads(pickle.dumps(transcript))]):
        plain = next(a for a in seen if a["type"] == "save-transcript")
        assert type(plain) is dict and plain == transcript and plain["json"] == transcript["json"]
    assert asked.count("transcript") == 1
    # Read late, after the planned messages changed in place: a typed plan_mismatch, every time.
    late = next(a for a in compactor.plan(messages, trigger="manual")["actions"] if a["type"] == "save-transcript")
    messages.append({"role": "user", "content": "appended after planning"})
    for _ in range(2):
        with pytest.raises(PlanMismatchError):
            late.get("json")


class _InFlight(MemoryStore):
    """An async store that counts the writes under way at once."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        self.most = 0

    async def write(self, path: str, text: str) -> None:  # type: ignore[override]
        self.now += 1
        self.most = max(self.most, self.now)
        await asyncio.sleep(0.01)
        super().write(path, text)
        self.now -= 1


def test_amanage_writes_a_plans_files_at_once_as_npm_does() -> None:
    # Three large tool results in one conversation: three offloads, one batch of writes, which
    # an event loop runs together (npm's Promise.all); the sync manage runs them in turn.
    messages: List[Dict[str, Any]] = [{"role": "user", "content": "read them"}]
    for i in range(3):
        messages += [
            {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": f"c{i}", "toolName": "read", "input": {"i": i}}]},
            {"role": "tool", "content": [{"type": "tool-result", "toolCallId": f"c{i}", "toolName": "read", "output": {"type": "text", "value": huge_tool_result(20_000 + 1_000 * i)}}]},
        ]
    store = _InFlight()
    result = asyncio.run(Compactor(model="gpt-4o", store=store, store_timeout=None).amanage(messages))
    assert [e["status"] for e in result.events] == ["applied"] * 3
    assert store.most == 3 and len(store.list("/tool_outputs/")) == 3


def test_a_result_plan_reads_its_transcript_as_written_sync_async_and_recover() -> None:
    from context_compactor import Compactor as C

    messages = chat(30)
    for run in ("manage", "amanage", "recover"):
        compactor = C(context_window=8_000)
        if run == "manage":
            result = compactor.manage(messages)
        elif run == "amanage":
            result = asyncio.run(compactor.amanage(messages))
        else:
            error = Exception("This model's maximum context length is 8000 tokens. However, your messages resulted in 9500 tokens. Please reduce the length of the messages.")
            result = compactor.recover(messages, error)
        transcript = next(a for a in result.plan["actions"] if a["type"] == "save-transcript")
        assert transcript["json"] == compactor.store.read(transcript["path"]), run
        assert transcript["markdown"] == compactor.store.read(transcript["readablePath"]), run
        repr(result)
        # The next call still plans on the compacted conversation.
        compactor.manage([*result.messages, {"role": "user", "content": "next"}])


def test_options_in_snake_case_at_every_depth_and_errors_in_the_names_python_spells() -> None:
    from context_compactor import InvalidConfigError

    # The config mapping takes snake_case as the keywords do, at every depth.
    assert Compactor({"model": "gpt-4o", "context_window": 20_000}).model["contextWindow"] == 20_000
    same = Compactor(model="gpt-4o", compaction={"working_files": {"max_files": 3}})
    assert same.plan(chat(4))["trigger"] == Compactor(model="gpt-4o", compaction={"workingFiles": {"maxFiles": 3}}).plan(chat(4))["trigger"]
    for kwargs, field, named in (
        ({"context_window": "16000"}, "context_window", "`context_window`"),
        ({"contex_window": 1}, "contex_window", "`context_window`"),
        ({"compaction": {"working_files": {"max_filez": 3}}}, "compaction.working_files.max_filez", "`max_files`"),
    ):
        with pytest.raises(InvalidConfigError) as caught:
            Compactor(model="gpt-4o", **kwargs)
        assert caught.value.field == field and named in str(caught.value), (kwargs, caught.value)


@pytest.mark.parametrize("option", [{"default_limit": 0}, {"max_page_chars": 0}, {"max_page_chars": -1}, {"context_window": 0}])
def test_recovery_tool_limits_below_one_are_invalid_config(option: Dict[str, int]) -> None:
    from context_compactor import InvalidConfigError, MemoryStore, recovery_tools

    with pytest.raises(InvalidConfigError, match="whole number from 1"):
        recovery_tools(MemoryStore(), **option)


def test_a_page_limit_of_a_fraction_is_floored_and_inf_is_none() -> None:
    from context_compactor import InvalidConfigError, MemoryStore, recovery_tools

    store = MemoryStore()
    store.write("/a.txt", "\n".join("x" * 9 for _ in range(10)))
    page = recovery_tools(store, max_page_chars=25.9)["read_file"](path="/a.txt")
    assert page == recovery_tools(store, max_page_chars=25)["read_file"](path="/a.txt")
    assert page != recovery_tools(store, max_page_chars=26)["read_file"](path="/a.txt")
    assert "10\t" in recovery_tools(store, max_page_chars=float("inf"))["read_file"](path="/a.txt")
    for bad in (float("nan"), float("-inf")):
        with pytest.raises(InvalidConfigError, match="max_page_chars"):
            recovery_tools(store, max_page_chars=bad)


def test_tool_lists_in_openai_and_mastra_shapes_count_as_the_same_definitions() -> None:
    from context_compactor import count_breakdown

    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    core = count_breakdown([], tools=[{"name": "search", "description": "Search the logs.", "inputSchema": schema}])["tools"]
    nested = [{"type": "function", "function": {"name": "search", "description": "Search the logs.", "parameters": schema}}]
    by_id = [{"id": "search", "description": "Search the logs.", "input_schema": schema}]
    for shape in (nested, by_id):
        assert count_breakdown([], tools=shape)["tools"] == core


def test_an_unknown_model_is_logged_once_per_name(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="context_compactor"):
        Compactor(model="my-warned-local-model-py")
        Compactor(model="my-warned-local-model-py")
        Compactor(model="my-other-local-model-py", context_window=32_000)
        Compactor(model="gpt-4o")
        Compactor(model="claud-sonet-4")
    warnings = [r.getMessage() for r in caplog.records if r.name == "context_compactor"]
    assert warnings == [
        'unknown model "my-warned-local-model-py": planned against a 8,192-token window. Give its context_window (and max_output_tokens), or a name the registry knows (model_info).',
        'unknown model "claud-sonet-4": planned against a 8,192-token window. Did you mean "claude-sonnet-4"? Give its context_window (and max_output_tokens), or a name the registry knows (model_info).',
    ]
