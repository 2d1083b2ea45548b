"""The LangChain v1 middleware: a `create_agent` agent driven by a scripted chat model for 30
model calls, each tool call returning pages of ~2.5k tokens (every seventh ~12k), at a 16k
window. Every prompt the model receives stays under the window, tool calls and results stay
paired, offloaded pages are in the store byte for byte, and the agent finishes."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, List

import pytest


from langchain.agents import create_agent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import InjectedToolCallId, tool

from context_compactor import Compactor, MemoryStore
from context_compactor.langchain import CompactorMiddleware, from_model_messages, recovery_langchain_tools, to_model_messages

from conftest import assert_paired

WINDOW = 16_000
STEPS = 30


def page(n: int) -> str:
    lines = 600 if n % 7 == 3 else 125
    return "\n".join(f"page {n} line {i}: the quarterly figure for region {i % 13} was {(n * 7919 + i * 31) % 10_007}" for i in range(lines))


@tool
def fetch_page(page_number: int) -> str:
    """Fetch one page of the report."""
    return page(page_number)


class ScriptedModel(BaseChatModel):
    """Asks for page n at call n, then answers; records every prompt it is sent."""

    prompts: List[List[BaseMessage]] = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedModel":
        return self

    def _generate(self, messages: List[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        n = len(self.prompts)
        self.prompts.append(list(messages))
        if n < STEPS - 1:
            message = AIMessage(content=f"Reading page {n}.", tool_calls=[{"id": f"call_{n}", "name": "fetch_page", "args": {"page_number": n}}])
        else:
            message = AIMessage(content="The report is read.")
        return ChatResult(generations=[ChatGeneration(message=message)])


def run_agent(use_async: bool) -> tuple:
    store = MemoryStore()
    results: List[Any] = []
    middleware = CompactorMiddleware(
        model="gpt-4o",
        context_window=WINDOW,
        store=store,
        summarize=lambda request: "## Session Intent\nRead the quarterly report page by page.",
        on_result=results.append,
        offload_at_return=False,  # big pages enter the history: ``before_model`` offloads them
    )
    model = ScriptedModel(prompts=[])
    agent = create_agent(model, tools=[fetch_page, *recovery_langchain_tools(store)], system_prompt="You read reports.", middleware=[middleware])
    question = {"messages": [HumanMessage(content="Read the whole report, page by page.")]}
    config = {"recursion_limit": 4 * STEPS}
    final = asyncio.run(agent.ainvoke(question, config)) if use_async else agent.invoke(question, config)
    return model.prompts, final, store, results


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_an_agent_stays_under_the_window_over_30_steps(use_async: bool) -> None:
    prompts, final, store, results = run_agent(use_async)
    assert len(prompts) == STEPS
    assert final["messages"][-1].content == "The report is read."
    counter = Compactor(model="gpt-4o", context_window=WINDOW)
    sizes = [counter.usage(to_model_messages(p))["tokens"] for p in prompts]
    assert max(sizes) < WINDOW, sizes
    # Without the middleware the last prompt would be several windows long.
    raw = sum(counter.usage([{"role": "user", "content": page(n)}])["tokens"] for n in range(STEPS - 1))
    assert raw > 4 * WINDOW
    for p in prompts:
        assert_paired(to_model_messages(p))
    events = [e for r in results for e in r.events]
    strategies = {e["strategy"] for e in events if e["status"] == "applied"}
    assert "offload" in strategies and strategies & {"summarize", "mask", "truncate"}, strategies
    # Offloaded pages are in the store byte for byte.
    offloaded = [e for e in events if e["strategy"] == "offload" and e["status"] == "applied"]
    assert offloaded and all(store.read(e["path"]) == page(int(e["toolCallId"].split("_")[1])) for e in offloaded)


def test_unchanged_messages_come_back_as_the_same_objects() -> None:
    messages: List[BaseMessage] = [
        HumanMessage(content="hi", id="h1"),
        AIMessage(content="", tool_calls=[{"id": "c1", "name": "fetch_page", "args": {"page_number": 1}}], id="a1"),
        ToolMessage(content=page(3), tool_call_id="c1", name="fetch_page", id="t1"),
        AIMessage(content="done", id="a2"),
    ]
    converted = to_model_messages(messages)
    result = Compactor(model="gpt-4o", context_window=WINDOW).manage(converted)
    back = from_model_messages(result.messages, messages, converted)
    assert back[0] is messages[0] and back[1] is messages[1] and back[3] is messages[3]
    assert isinstance(back[2], ToolMessage) and back[2].id == "t1" and back[2].tool_call_id == "c1"
    assert back[2].content.startswith("[Tool output offloaded:")


def test_a_changed_tool_message_keeps_its_fields_when_a_summary_removes_messages_before_it() -> None:
    # Found by a user test: past a summary the messages no longer line up, and the offloaded
    # ToolMessage came back without its id, artifact and metadata (app data stored nowhere).
    messages: List[BaseMessage] = []
    for i in range(30):
        messages.append(HumanMessage(content=f"question {i} " + "lorem ipsum dolor " * 120, id=f"h{i}"))
        messages.append(AIMessage(content=f"answer {i} " + "sit amet " * 120, id=f"a{i}"))
    messages.append(HumanMessage(content="run the tool", id="hq"))
    messages.append(AIMessage(content="", tool_calls=[{"id": "t1", "name": "logs", "args": {"n": 1}}], id="acall"))
    messages.append(ToolMessage(content="\n".join(f"log line {i} ok" for i in range(8000)), tool_call_id="t1", name="logs", id="tm1", artifact={"raw": [1, 2, 3]}, additional_kwargs={"x": 1}, response_metadata={"y": 2}))
    converted = to_model_messages(messages)
    result = Compactor(model="gpt-4o", context_window=16_000, store=MemoryStore()).manage(converted)
    assert len(result.messages) < len(messages), "summarized"
    back = from_model_messages(result.messages, messages, converted)
    tool_message = next(m for m in back if isinstance(m, ToolMessage))
    assert tool_message.content.startswith("[Tool output offloaded:")
    assert (tool_message.id, tool_message.artifact, tool_message.additional_kwargs, tool_message.response_metadata) == ("tm1", {"raw": [1, 2, 3]}, {"x": 1}, {"y": 2})
    assert back[-2] is messages[-2] and back[-3] is messages[-3]
    summary = next(m for m in back if "[Conversation summary]" in str(m.content))
    assert summary.id is None, "the summary takes no original's id"


def test_offload_at_return_keeps_big_outputs_out_of_the_history() -> None:
    store = MemoryStore()
    middleware = CompactorMiddleware(model="gpt-4o", context_window=WINDOW, store=store, offload_at_return=True)
    model = ScriptedModel(prompts=[])
    agent = create_agent(model, tools=[fetch_page], middleware=[middleware])
    agent.invoke({"messages": [HumanMessage(content="Read it.")]}, {"recursion_limit": 4 * STEPS})
    big = {f"call_{n}": page(n) for n in range(STEPS - 1) if n % 7 == 3}
    seen = 0
    for prompt in model.prompts:
        for message in prompt:
            if isinstance(message, ToolMessage) and message.tool_call_id in big:
                # Never the page itself: from its first prompt on, a preview naming the path.
                seen += 1
                assert message.content != big[message.tool_call_id]
                path = message.content.split("Full content: ")[1].split("]")[0]
                assert store.read(path) == big[message.tool_call_id]
    assert seen >= len(big)


def test_the_middleware_calibrates_from_each_replys_usage_once() -> None:
    """Each model reply's ``usage_metadata`` calibrates the compactor when the next call is
    planned (the last reply of a turn when the next turn starts); each reply counts once."""
    probe = Compactor(model="claude-sonnet-4-5", context_window=WINDOW)
    calls: List[int] = []

    class ReportingModel(BaseChatModel):
        """Three tool calls, then an answer; every reply reports the provider's input tokens
        (0.9 of the uncalibrated estimate of the prompt)."""

        @property
        def _llm_type(self) -> str:
            return "reporting"

        def bind_tools(self, tools: Any, **kwargs: Any) -> "ReportingModel":
            return self

        def _generate(self, messages: List[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
            n = len(calls)
            calls.append(n)
            tokens = round(0.9 * probe.usage(to_model_messages(messages))["tokens"])
            usage = {"input_tokens": tokens, "output_tokens": 5, "total_tokens": tokens + 5}
            if n % 4 < 3:
                message = AIMessage(content="", tool_calls=[{"id": f"call_{n}", "name": "fetch_page", "args": {"page_number": n}}], usage_metadata=usage)
            else:
                message = AIMessage(content="Done.", usage_metadata=usage)
            return ChatResult(generations=[ChatGeneration(message=message)])

    middleware = CompactorMiddleware(model="claude-sonnet-4-5", context_window=WINDOW, store=MemoryStore())
    agent = create_agent(ReportingModel(), tools=[fetch_page], system_prompt="You read reports.", middleware=[middleware])
    assert middleware.compactor.state().get("calibration") is None
    first = agent.invoke({"messages": [HumanMessage(content="Read pages 0 to 2.")]})
    # Four model calls: the replies to the first three were observed before the next call.
    assert len(calls) == 4
    assert middleware.compactor.state()["calibration"]["samples"] == 3
    agent.invoke({"messages": [*first["messages"], HumanMessage(content="And the next three?")]})
    # The first turn's last reply is observed when the second turn starts, then three more.
    assert len(calls) == 8
    calibration = middleware.compactor.state()["calibration"]
    assert calibration["samples"] == 7
    assert calibration["ratio"] < 1.2, calibration


def png(width: int, height: int) -> bytes:
    """A real PNG (noise, so it does not compress): `width` x `height` RGB, about 3 bytes a pixel."""
    import random
    import struct
    import zlib

    rng = random.Random(7)
    rows = b"".join(b"\x00" + bytes(rng.getrandbits(8) for _ in range(width * 3)) for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 0)) + chunk(b"IEND", b"")


def test_images_and_files_in_human_messages_count_as_images_and_come_back_as_given() -> None:
    """A 300 kB PNG as each LangChain block form counts as an image (it counted 272,872 tokens as
    JSON text and was offloaded), is not offloaded, and comes back as the very block, also when
    the message around it is rebuilt (a long pasted text in it offloaded)."""
    import base64

    data = base64.b64encode(png(320, 312)).decode()
    assert len(data) > 300_000
    forms = {
        "v1 base64": {"type": "image", "base64": data, "mime_type": "image/png"},
        "v1 url": {"type": "image", "url": "https://example.com/chart.png"},
        "v0 source_type": {"type": "image", "source_type": "base64", "data": data, "mime_type": "image/png"},
        "openai image_url": {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}},
        "anthropic source": {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
        "v1 file": {"type": "file", "base64": base64.b64encode(b"%PDF-1.4 " + b"x" * 200_000).decode(), "mime_type": "application/pdf", "extras": {"filename": "r.pdf"}},
    }
    for name, block in forms.items():
        compactor = Compactor(model="gpt-4o", context_window=16_000, store=MemoryStore())
        messages = [HumanMessage(content=[{"type": "text", "text": "What does this show?"}, block])]
        converted = to_model_messages(messages)
        tokens = compactor.usage(converted)["tokens"]
        assert tokens < 5_000, f"{name}: {tokens} tokens"
        result = compactor.manage(converted)
        assert not result.events, f"{name}: {result.events}"
        back = from_model_messages(result.messages, messages, converted)
        assert back[0] is messages[0], name
        # A pasted log beside it is offloaded: the message is rebuilt, the block stays itself.
        log = "\n".join(f"log line {i}: status ok, latency {i % 97} ms" for i in range(3_000))
        messages = [HumanMessage(content=[{"type": "text", "text": log}, block], id="h1")]
        converted = to_model_messages(messages)
        result = compactor.manage(converted)
        assert [e["strategy"] for e in result.events] == ["offload"], f"{name}: {result.events}"
        [rebuilt] = from_model_messages(result.messages, messages, converted)
        # (LangChain copies a message's blocks when it is made: equal, keys in the same order.)
        assert rebuilt.id == "h1" and list(rebuilt.content[1].items()) == list(block.items()), name
        assert rebuilt.content[0]["text"].startswith("[Long message text stored: "), name


def test_audio_and_file_id_blocks_count_as_files_and_come_back_as_given() -> None:
    """The forms the image test does not cover: v1 audio (base64), OpenAI input_audio, a v1
    file by URL and an image by provider file id."""
    import base64

    audio = base64.b64encode(png(320, 312)).decode()  # 300 kB of noise: only its size matters
    forms = {
        "v1 audio": {"type": "audio", "base64": audio, "mime_type": "audio/wav"},
        "openai input_audio": {"type": "input_audio", "input_audio": {"data": audio, "format": "wav"}},
        "v1 file url": {"type": "file", "url": "https://example.com/report.pdf", "mime_type": "application/pdf"},
        "v1 image file_id": {"type": "image", "file_id": "file-abc123"},
        "anthropic document (base64)": {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": audio}, "title": "r.pdf"},
        "anthropic document (url)": {"type": "document", "source": {"type": "url", "url": "https://example.com/report.pdf"}},
        "anthropic document (text)": {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "All good."}, "context": "a status report"},
    }
    for name, block in forms.items():
        compactor = Compactor(model="gpt-4o", context_window=16_000, store=MemoryStore())
        messages = [HumanMessage(content=[{"type": "text", "text": "Transcribe this."}, block])]
        converted = to_model_messages(messages)
        assert converted[0]["content"][1]["type"] in ("image", "file"), name
        assert compactor.usage(converted)["tokens"] < 5_000, name
        result = compactor.manage(converted)
        assert not result.events and from_model_messages(result.messages, messages, converted)[0] is messages[0], name
    document = to_model_messages([HumanMessage(content=[forms["anthropic document (base64)"]])])[0]["content"][0]
    document.pop("providerOptions", None)  # which block it was, to give it back
    assert document == {"type": "file", "data": audio, "mediaType": "application/pdf", "filename": "r.pdf"}
    text = to_model_messages([HumanMessage(content=[forms["anthropic document (text)"]])])[0]["content"][0]
    text.pop("providerOptions", None)
    assert text == {"type": "file", "data": {"type": "text", "text": "All good."}, "mediaType": "text/plain"}


def test_an_agent_sends_the_model_the_very_image_blocks_it_was_given() -> None:
    """Through create_agent and the middleware: the model receives the user's image and audio
    blocks as given (key order too), and nothing is offloaded."""
    import base64

    data = base64.b64encode(png(320, 312)).decode()
    blocks = [
        {"type": "text", "text": "What does this chart show?"},
        {"type": "image", "base64": data, "mime_type": "image/png"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}},
        {"type": "audio", "base64": data, "mime_type": "audio/wav"},
    ]
    prompts: List[List[BaseMessage]] = []

    class Answering(ScriptedModel):
        def _generate(self, messages: List[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
            prompts.append(list(messages))
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="A bar chart."))])

    results: List[Any] = []
    middleware = CompactorMiddleware(model="gpt-4o", context_window=WINDOW, store=MemoryStore(), on_result=results.append)
    agent = create_agent(Answering(prompts=[]), tools=[fetch_page], middleware=[middleware])
    agent.invoke({"messages": [HumanMessage(content=[dict(b) for b in blocks])]})
    [[question]] = prompts
    assert [list(b.items()) for b in question.content] == [list(b.items()) for b in blocks]
    assert [r.events for r in results] == [[]]
    counter = Compactor(model="gpt-4o", context_window=WINDOW)
    assert counter.usage(to_model_messages([question]))["tokens"] < 5_000


def test_tool_results_with_images_count_as_images_and_come_back_as_given() -> None:
    """A screenshot tool's ToolMessage (text and an image block) crosses as the core's content
    output (an image item), not as JSON text; unchanged it is the same object, and when its text
    is offloaded the message keeps the image block itself."""
    import base64

    data = base64.b64encode(png(320, 312)).decode()
    for block in (
        {"type": "image", "base64": data, "mime_type": "image/png"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}},
    ):
        call = AIMessage(content="", tool_calls=[{"id": "c1", "name": "screenshot", "args": {}}], id="a1")
        messages = [HumanMessage(content="Look at the page.", id="h1"), call, ToolMessage(content=[{"type": "text", "text": "The page:"}, block], tool_call_id="c1", name="screenshot", id="t1")]
        compactor = Compactor(model="gpt-4o", context_window=16_000, store=MemoryStore())
        converted = to_model_messages(messages)
        assert compactor.usage(converted)["tokens"] < 5_000, block["type"]
        result = compactor.manage(converted)
        assert not result.events and from_model_messages(result.messages, messages, converted)[2] is messages[2]
        log = "\n".join(f"console line {i}: request ok in {i % 97} ms" for i in range(3_000))
        messages[2] = ToolMessage(content=[{"type": "text", "text": log}, block], tool_call_id="c1", name="screenshot", id="t1", artifact={"raw": 1})
        converted = to_model_messages(messages)
        result = compactor.manage(converted)
        assert [e["strategy"] for e in result.events] == ["offload"], result.events
        rebuilt = from_model_messages(result.messages, messages, converted)[2]
        assert isinstance(rebuilt, ToolMessage) and rebuilt.id == "t1" and rebuilt.artifact == {"raw": 1}
        assert rebuilt.content[0]["text"].startswith("[Tool output offloaded: ")
        assert list(rebuilt.content[1].items()) == list(block.items())


def test_text_blocks_keep_their_fields_when_the_message_around_them_changes() -> None:
    """A rebuilt message keeps its text blocks as given (ids, any order of keys) when their
    text is unchanged, and the changed block keeps its other fields."""
    log = "\n".join(f"log line {i}: status ok, latency {i % 97} ms" for i in range(3_000))
    question = {"text": "Why is line 17 slow?", "type": "text", "id": "b2"}
    other = {"type": "citation", "source": "runbook"}  # no core part: crosses as its JSON text
    messages = [HumanMessage(content=[{"type": "text", "text": log, "id": "b1"}, question, other, "plain string"], id="h1")]
    converted = to_model_messages(messages)
    result = Compactor(model="gpt-4o", context_window=16_000, store=MemoryStore()).manage(converted)
    assert [e["strategy"] for e in result.events] == ["offload"]
    [rebuilt] = from_model_messages(result.messages, messages, converted)
    first, *rest = rebuilt.content
    assert list(first) == ["type", "text", "id"] and first["id"] == "b1" and first["text"].startswith("[Long message text stored: ")
    assert rest == [question, other, "plain string"] and list(rest[0]) == list(question)


def test_anthropic_tool_use_blocks_count_once_and_keep_their_place() -> None:
    """An AIMessage from Anthropic carries each call twice: a ``tool_use`` block in its content
    and in ``tool_calls``. The call counts once (as the core's tool-call), and when the core
    evicts the written file's content the rebuilt message keeps its blocks, the tool_use
    block's input evicted like the call's args, not a JSON dump in its text."""
    source = "\n".join(f"def handler_{i}(event):\n    return {{'status': {i}, 'ok': True}}\n" for i in range(700))
    def turn(n: int) -> List[BaseMessage]:
        args = {"path": f"app_{n}.py", "content": source}
        use = {"type": "tool_use", "id": f"c{n}", "name": "write_file", "input": args}
        return [
            AIMessage(content=[{"type": "text", "text": f"Writing app_{n}.py."}, use], tool_calls=[{"id": f"c{n}", "name": "write_file", "args": args}], id=f"a{n}"),
            ToolMessage(content="written", tool_call_id=f"c{n}", name="write_file", id=f"t{n}"),
        ]
    messages: List[BaseMessage] = [HumanMessage(content="Write the handlers.", id="h1"), *turn(1), *turn(2), *turn(3)]
    compactor = Compactor(model="claude-sonnet-4-5", context_window=60_000, store=MemoryStore())
    converted = to_model_messages(messages)
    plain = to_model_messages([AIMessage(content=f"Writing app_1.py.", tool_calls=messages[1].tool_calls)])
    assert compactor.usage(converted[1:2])["tokens"] == compactor.usage(plain)["tokens"]
    result = compactor.manage(converted)
    assert "evict-input" in {e["strategy"] for e in result.events}, result.events
    back = from_model_messages(result.messages, messages, converted)
    evicted = [m for m in back if isinstance(m, AIMessage) and m.tool_calls[0]["args"]["content"] != source]
    assert evicted
    for message in evicted:
        original = next(m for m in messages if m.id == message.id)
        text, use = message.content
        assert text is original.content[0] or text == original.content[0]
        assert list(use) == ["type", "id", "name", "input"] and use["input"] == message.tool_calls[0]["args"]


class CachingAgentModel(BaseChatModel):
    """The agent's model, also its summarizer: asks for page n at call n; a summary request
    (the last message asks to summarize) is answered with a summary, or with a tool call when
    ``refuse`` (then the plain request must follow). Records every prompt and its tools."""

    prompts: List[List[BaseMessage]] = []
    bound: List[Any] = []
    refuse: bool = False

    @property
    def _llm_type(self) -> str:
        return "caching-agent"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        self.bound.append([getattr(t, "name", None) for t in tools])
        return self

    def _generate(self, messages: List[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.prompts.append(list(messages))
        last = messages[-1]
        if isinstance(last, HumanMessage) and "Summarize messages" in str(last.content):
            if self.refuse:
                message = AIMessage(content="", tool_calls=[{"id": "x", "name": "fetch_page", "args": {"page_number": 0}}])
            else:
                message = AIMessage(content="## Session Intent\nRead the report (from the cache).")
        elif len(messages) > 1 and isinstance(messages[0], SystemMessage) and "You summarize" in str(messages[0].content):
            message = AIMessage(content="## Session Intent\nRead the report (plain request).")
        else:
            n = len(agent_steps(self)) - 1
            message = AIMessage(content=f"Reading page {n}.", tool_calls=[{"id": f"call_{n}", "name": "fetch_page", "args": {"page_number": n}}]) if n < 24 else AIMessage(content="Done.")
        return ChatResult(generations=[ChatGeneration(message=message)])


@pytest.mark.parametrize("refuse", [False, True], ids=["continued", "refused"])
def test_the_agents_own_model_summarizes_from_its_cached_prompt(refuse: bool) -> None:
    model = CachingAgentModel(prompts=[], bound=[], refuse=refuse)
    results: List[Any] = []
    middleware = CompactorMiddleware(model="claude-sonnet-4-5", context_window=WINDOW, store=MemoryStore(), summary_model=model, background=False, on_result=results.append)
    agent = create_agent(model, tools=[fetch_page], system_prompt="You read reports.", middleware=[middleware])
    agent.invoke({"messages": [HumanMessage(content="Read the report.")]}, {"recursion_limit": 100})
    summaries = [e for r in results for e in r.events if e["strategy"] == "summarize"]
    assert summaries and all(e["status"] == "applied" for e in summaries), summaries
    continued = [i for i, p in enumerate(model.prompts) if isinstance(p[-1], HumanMessage) and "Summarize messages" in str(p[-1].content)]
    assert continued, "the continuation was sent"
    i = continued[0]
    request, agent_call = model.prompts[i], model.prompts[i - 1]
    # The agent's system prompt and messages as the agent last sent them, then the instruction:
    # the prefix the provider cached, with the agent's tools bound.
    assert isinstance(request[0], SystemMessage) and request[0].content == agent_call[0].content
    prefix = request[:-1]
    assert all(a is b or (type(a) is type(b) and a.content == b.content) for a, b in zip(prefix, agent_call)), "the same prefix"
    assert len(prefix) <= len(agent_call)
    assert ["fetch_page"] in model.bound
    plain = [p for p in model.prompts if isinstance(p[0], SystemMessage) and "You summarize" in str(p[0].content)]
    if refuse:
        # A tool call instead of a summary: the plain request follows, and its answer is used.
        assert plain
        assert any("plain request" in m.content for p in agent_steps(model) for m in p if isinstance(m, HumanMessage))
    else:
        assert not plain, "no plain request when the continuation answered"
        assert any("from the cache" in m.content for p in agent_steps(model) for m in p if isinstance(m, HumanMessage))


def test_a_sync_agent_inside_a_running_event_loop_summarizes_with_its_summary_model() -> None:
    """``agent.invoke`` where an event loop runs (a Jupyter cell, a sync call in an async web
    handler): the middleware's summarizer asks the model with ``invoke``. It used to be async
    only, and the first summary raised ``AsyncInLoop`` (a user's notebook agent died there)."""
    model = CachingAgentModel(prompts=[], bound=[], refuse=False)
    results: List[Any] = []
    middleware = CompactorMiddleware(model="claude-sonnet-4-5", context_window=WINDOW, store=MemoryStore(), summary_model=model, background=False, on_result=results.append)
    agent = create_agent(model, tools=[fetch_page], system_prompt="You read reports.", middleware=[middleware])

    async def cell() -> Any:
        return agent.invoke({"messages": [HumanMessage(content="Read the report.")]}, {"recursion_limit": 100})

    asyncio.run(cell())
    summaries = [e for r in results for e in r.events if e["strategy"] == "summarize"]
    assert summaries and all(e["status"] == "applied" for e in summaries), summaries


def agent_steps(model: CachingAgentModel) -> List[List[BaseMessage]]:
    """The agent's own calls (not the summary requests)."""
    return [p for p in model.prompts if not (isinstance(p[-1], HumanMessage) and "Summarize messages" in str(p[-1].content)) and not (isinstance(p[0], SystemMessage) and "You summarize" in str(p[0].content))]


def test_the_middleware_records_a_session_report() -> None:
    from context_compactor import create_report_recorder

    store = MemoryStore()
    report = create_report_recorder(title="report agent")
    compactor = Compactor(
        model="gpt-4o",
        context_window=WINDOW,
        store=store,
        summarize=lambda request: "## Session Intent\nRead the quarterly report page by page.",
        on_event=report.on_event,
    )
    model = ScriptedModel(prompts=[])
    agent = create_agent(model, tools=[fetch_page], system_prompt="You read reports.", middleware=[CompactorMiddleware(compactor, report=report, offload_at_return=False)])
    agent.invoke({"messages": [HumanMessage(content="Read the whole report, page by page.")]}, {"recursion_limit": 4 * STEPS})
    data = report.data()
    assert len(data["calls"]) == STEPS, "one entry per model call"
    compacted = [c for c in data["calls"] if any(e["status"] == "applied" for e in c["events"])]
    assert compacted and all(c["tokensAfter"] < c["tokensBefore"] for c in compacted)
    assert all(c["tokensAfter"] < WINDOW for c in data["calls"])
    assert {f["strategy"] for f in data["store"]} >= {"offload"}
    assert "report agent" in report.html()


def test_offload_at_return_is_on_by_default() -> None:
    """As the npm package's ``offloadAtReturn``: without the option, a big tool output is its
    preview already in the tools step's update (``wrap_tool_call``), not only once the next
    ``before_model`` compacts the history."""
    middleware = CompactorMiddleware(model="gpt-4o", context_window=WINDOW, store=MemoryStore())
    agent = create_agent(ScriptedModel(prompts=[]), tools=[fetch_page], middleware=[middleware])
    returned = {}
    for update in agent.stream({"messages": [HumanMessage(content="Read it.")]}, {"recursion_limit": 4 * STEPS}, stream_mode="updates"):
        for message in (update.get("tools") or {}).get("messages", []):
            returned[message.tool_call_id] = message.content
    big = [f"call_{n}" for n in range(STEPS - 1) if n % 7 == 3]
    assert big and all(returned[c].startswith("[Tool output offloaded:") for c in big), [returned[c][:80] for c in big]


def test_a_nameless_tool_message_is_offloaded_under_its_tools_name() -> None:
    """A tool that returns its own ``ToolMessage`` without a ``name``: the output is stored
    under the name of the tool call that ran it (npm's ``result.name ?? request.toolCall.name``),
    not under a generic one."""
    @tool
    def fetch_page(page_number: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
        """Fetch one page of the report."""
        return ToolMessage(content=page(3), tool_call_id=tool_call_id)

    store = MemoryStore()
    agent = create_agent(ScriptedModel(prompts=[]), tools=[fetch_page], middleware=[CompactorMiddleware(model="gpt-4o", context_window=WINDOW, store=store, offload_at_return=True)])
    first = next(u for u in agent.stream({"messages": [HumanMessage(content="Read it.")]}, {"recursion_limit": 4 * STEPS}, stream_mode="updates") if "tools" in u)
    [message] = first["tools"]["messages"]
    assert message.name is None and "Full content: /tool_outputs/fetch_page_" in message.content, message.content[:200]
    assert store.read(message.content.split("Full content: ")[1].split("]")[0]) == page(3)


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_the_agents_system_prompt_is_counted(use_async: bool) -> None:
    """The system prompt goes with every model call but is not in the agent's messages: the
    middleware counts it (the one the last model call carried) as the first message, as the npm
    middleware does, so prompts with a 6k-token system prompt stay under a 16k window (they
    reached 17.4k when it was left out). It never enters the agent's state."""
    system = "You read reports.\n" + "\n".join(f"Rule {i}: quote the region and the figure of line {i} exactly as the page gives them." for i in range(300))
    model = ScriptedModel(prompts=[])
    results: List[Any] = []
    middleware = CompactorMiddleware(
        model="gpt-4o",
        context_window=WINDOW,
        store=MemoryStore(),
        summarize=lambda request: "## Session Intent\nRead the quarterly report page by page.",
        on_result=results.append,
    )
    agent = create_agent(model, tools=[fetch_page], system_prompt=system, middleware=[middleware])
    question = {"messages": [HumanMessage(content="Read the whole report, page by page.")]}
    config = {"recursion_limit": 4 * STEPS}
    final = asyncio.run(agent.ainvoke(question, config)) if use_async else agent.invoke(question, config)
    counter = Compactor(model="gpt-4o", context_window=WINDOW)
    sizes = [counter.usage(to_model_messages(p))["tokens"] for p in model.prompts]
    assert len(sizes) == STEPS and max(sizes) < WINDOW, sizes
    # From the second call on (the first is made before the system prompt is seen).
    assert all(r.messages[0] == {"role": "system", "content": system} for r in results[1:])
    assert not any(isinstance(m, SystemMessage) for m in final["messages"])
    assert final["messages"][-1].content == "The report is read."


def test_recovery_tools_over_a_compactor_page_within_its_window() -> None:
    """``recovery_langchain_tools(compactor)`` (the npm package's ``recoveryLangChainTools``)
    goes through ``compactor.tools()``: a ``read_file`` page ends at 10 % of the model's window
    (4 characters a token). A plain store still works, unbounded."""
    store = MemoryStore()
    store.write("/tool_outputs/report.txt", page(3))
    compactor = Compactor(model="gpt-4o", context_window=WINDOW, store=store)
    paged = {t.name: t for t in recovery_langchain_tools(compactor)}
    whole = {t.name: t for t in recovery_langchain_tools(store)}
    assert sorted(paged) == sorted(whole) == ["grep", "ls", "read_file"]
    first = paged["read_file"].invoke({"path": "/tool_outputs/report.txt"})
    lines, note = first.rsplit("\n", 1)
    assert len(lines) <= WINDOW // 10 * 4 and "more lines: read_file with offset=" in note, note
    assert "page 3 line 0:" in first and "page 3 line 599:" not in first
    assert "page 3 line 599:" in whole["read_file"].invoke({"path": "/tool_outputs/report.txt", "limit": 1000})
    assert "report.txt" in paged["ls"].invoke({"path": "/tool_outputs"})


OVERFLOW_LIMIT = 8_000


class RefusingModel(BaseChatModel):
    """Refuses its first ``refusals`` calls as too long: with the provider's error (Anthropic's
    text, its count of the prompt and a limit of 8k), or, with ``stop``, by answering with
    Anthropic's ``stop_reason: model_context_window_exceeded``. Then answers. Records every
    prompt and its size."""

    prompts: List[List[BaseMessage]] = []
    sizes: List[int] = []
    refusals: int = 1
    stop: bool = False
    stop_key: str = "stop_reason"

    @property
    def _llm_type(self) -> str:
        return "refusing"

    def _generate(self, messages: List[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        tokens = Compactor(context_window=64_000).usage(to_model_messages(messages))["tokens"]
        self.prompts.append(list(messages))
        self.sizes.append(tokens)
        if len(self.sizes) > self.refusals:
            message = AIMessage(content="done")
        elif self.stop:
            message = AIMessage(content="The pages s", response_metadata={self.stop_key: "model_context_window_exceeded"})
        else:
            raise ValueError(f"prompt is too long: {tokens} tokens > {OVERFLOW_LIMIT} maximum")
        return ChatResult(generations=[ChatGeneration(message=message)])


def overflow_run(model: RefusingModel, use_async: bool, **options: Any) -> Any:
    """An agent with a system prompt over ~14k tokens of history (under the 64k window, so
    ``before_model`` leaves it), asked to sum it up."""
    history: List[BaseMessage] = []
    for n in range(6):
        history += [HumanMessage(content=f"Page {n}:\n" + page(n if n % 7 != 3 else 0)), AIMessage(content=f"Noted page {n}.")]
    history.append(HumanMessage(content="Sum it up."))
    middleware = CompactorMiddleware(context_window=64_000, store=MemoryStore(), summarize=lambda request: "## Session Intent\nRead the report.", **options)
    agent = create_agent(model, tools=[], system_prompt="You sum up reports.", middleware=[middleware])
    return asyncio.run(agent.ainvoke({"messages": history})) if use_async else agent.invoke({"messages": history})


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_an_overflow_after_the_last_retry_is_a_typed_error(use_async: bool) -> None:
    """As the npm package's AI SDK middleware: once ``overflow_retries`` are spent, the refusal
    is a ``CompactorError('context_overflow')`` with the same text and details, raised from the
    provider's error."""
    from context_compactor import CompactorError

    model = RefusingModel(prompts=[], sizes=[], refusals=2)
    with pytest.raises(CompactorError) as raised:
        overflow_run(model, use_async)
    error = raised.value
    assert len(model.sizes) == 2 and model.sizes[1] < model.sizes[0], model.sizes
    assert error.code == "context_overflow"
    assert str(error) == f"the provider still refused the prompt as too long after 1 compaction and retry (prompt is too long: {model.sizes[1]} tokens > {OVERFLOW_LIMIT} maximum)"
    assert error.details == {"provider": "anthropic", "reportedTokens": model.sizes[1], "limit": OVERFLOW_LIMIT, "attempts": 1}
    assert isinstance(error.__cause__, ValueError)
    # A second retry, with nothing left to compact: ``recover``'s own ``context_overflow``.
    model = RefusingModel(prompts=[], sizes=[], refusals=3)
    with pytest.raises(CompactorError, match=r"^the provider refused the prompt as too long \(.*\) and nothing is left to compact") as raised:
        overflow_run(model, use_async, overflow_retries=2)
    assert raised.value.details["attempts"] == 2 and isinstance(raised.value.__cause__, ValueError) and len(model.sizes) == 2


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_a_reply_cut_at_the_context_window_is_retried(use_async: bool) -> None:
    """A reply whose stop reason says the context window filled up (Anthropic's
    ``model_context_window_exceeded`` in ``response_metadata``) is retried on a harder
    compaction, as the npm package's AI SDK middleware does; after the last retry it is the
    answer, as it is."""
    model = RefusingModel(prompts=[], sizes=[], refusals=1, stop=True)
    final = overflow_run(model, use_async)
    assert len(model.sizes) == 2 and model.sizes[1] < model.sizes[0], model.sizes
    assert final["messages"][-1].content == "done"
    # The retry keeps the agent's system prompt, once, first; the state never holds it.
    assert all([type(m) for m in p].count(SystemMessage) == 1 and p[0].content == "You sum up reports." for p in model.prompts)
    assert not any(isinstance(m, SystemMessage) for m in final["messages"])
    model = RefusingModel(prompts=[], sizes=[], refusals=2, stop=True)
    final = overflow_run(model, use_async)
    assert len(model.sizes) == 2
    assert final["messages"][-1].response_metadata["stop_reason"] == "model_context_window_exceeded"
    # Bedrock's Converse API (ChatBedrockConverse) says it as ``stopReason``.
    model = RefusingModel(prompts=[], sizes=[], refusals=1, stop=True, stop_key="stopReason")
    final = overflow_run(model, use_async)
    assert len(model.sizes) == 2 and final["messages"][-1].content == "done"


def test_the_report_records_an_overflow_retry_as_a_model_call() -> None:
    """``report=`` records each model call: the refused one and its retry on the harder
    compaction, whose prompt is the smaller one the model got."""
    from context_compactor import create_report_recorder

    report = create_report_recorder(title="overflow")
    model = RefusingModel(prompts=[], sizes=[], refusals=1)
    final = overflow_run(model, False, report=report)
    assert final["messages"][-1].content == "done" and len(model.sizes) == 2
    calls = report.data()["calls"]
    assert len(calls) == 2, "the refused call and its retry"
    assert calls[1]["tokensAfter"] < calls[0]["tokensAfter"]


def test_a_request_of_langchain_1_0_gives_its_system_prompt_too() -> None:
    """langchain 1.0's ``ModelRequest`` has ``system_prompt`` (a str) and no ``system_message``."""
    from types import SimpleNamespace

    from context_compactor.langchain import _prompt

    system, converted = _prompt(SimpleNamespace(system_prompt="You sum up reports.", messages=[HumanMessage(content="hi")]))
    assert system == [{"role": "system", "content": "You sum up reports."}]
    assert converted == [{"role": "user", "content": "hi"}]
    assert _prompt(SimpleNamespace(system_prompt=None, messages=[]))[0] == []



@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_the_agents_first_model_call_counts_its_system_prompt(use_async: bool) -> None:
    """A resumed history under a large system prompt: ``before_model`` runs before the system
    prompt is seen, so the first call's prompt is compacted again with it (it reached 13.7k
    tokens in a 12k window before)."""
    from context_compactor import count_tokens

    prompts: List[List[BaseMessage]] = []

    class Answering(ScriptedModel):
        def _generate(self, messages: List[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
            prompts.append(list(messages))
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="ok"))])

    system = "\n".join(f"Rule {i}: answer precisely and cite the source {i}." for i in range(400))
    history: List[BaseMessage] = []
    for i in range(14):
        history.append(HumanMessage(content=f"Question {i}: " + "tell me about the data. " * 40))
        history.append(AIMessage(content=f"Answer {i}: " + "the data shows a steady trend. " * 40))
    history.append(HumanMessage(content="And now?"))
    middleware = CompactorMiddleware(model="gpt-4o", context_window=12_000, store=MemoryStore())
    agent = create_agent(Answering(prompts=[]), tools=[], system_prompt=system, middleware=[middleware])
    if use_async:
        asyncio.run(agent.ainvoke({"messages": history}))
    else:
        agent.invoke({"messages": history})
    assert count_tokens(system) > 3_000
    [sent] = prompts
    counter = Compactor(model="gpt-4o", context_window=12_000)
    assert counter.usage(to_model_messages(history))["tokens"] + count_tokens(system) > 12_000
    assert counter.usage(to_model_messages(sent))["tokens"] < 12_000


def test_an_ai_sdk_history_with_several_results_in_one_tool_message_converts_one_tool_message_each() -> None:
    # Found by a user test: the bundled sessions (AI SDK histories) hold tool messages with
    # several results; from_model_messages raised a bare ValueError on them.
    from context_compactor import InvalidMessageError

    history = [
        {"role": "user", "content": "look at both"},
        {"role": "assistant", "content": [
            {"type": "tool-call", "toolCallId": "a", "toolName": "read", "input": {"p": "x"}},
            {"type": "tool-call", "toolCallId": "b", "toolName": "read", "input": {"p": "y"}},
        ]},
        {"role": "tool", "content": [
            {"type": "tool-result", "toolCallId": "a", "toolName": "read", "output": {"type": "text", "value": "X"}},
            {"type": "tool-result", "toolCallId": "b", "toolName": "read", "output": {"type": "error-text", "value": "no y"}},
        ]},
    ]
    messages = from_model_messages(history, [], [])
    assert [type(m).__name__ for m in messages] == ["HumanMessage", "AIMessage", "ToolMessage", "ToolMessage"]
    a, b = messages[2], messages[3]
    assert isinstance(a, ToolMessage) and isinstance(b, ToolMessage)
    assert (a.tool_call_id, a.content, a.status) == ("a", "X", "success")
    assert (b.tool_call_id, b.content, b.status) == ("b", "no y", "error")
    # Back in the core's shape: the same results, one message each.
    assert [m["content"][0]["toolCallId"] for m in to_model_messages(messages)[2:]] == ["a", "b"]
    # A part LangChain has no message for is a typed error naming the message.
    approval = [{"role": "tool", "content": [{"type": "tool-approval-response", "approvalId": "1", "approved": True}]}]
    with pytest.raises(InvalidMessageError) as caught:
        from_model_messages(approval, [], [])
    assert "message 0" in caught.value.message and "tool-approval-response" in caught.value.message


def test_a_rebuilt_error_with_images_stays_an_error_and_a_rebuilt_ai_message_keeps_its_invalid_tool_calls() -> None:
    # An error result with an image crosses as a `content` output (no error form): rebuilt, it
    # came back `success`. A rebuilt AIMessage lost its `invalid_tool_calls`.
    from context_compactor.langchain import from_model_messages, to_model_messages

    compactor = Compactor(model="gpt-4o", context_window=16_000)
    big = "\n".join(f"line {i} data" for i in range(3000))
    image = {"type": "image", "url": "https://example.com/a.png"}
    invalid = [{"id": "bad1", "name": "t", "args": "{oops", "error": "bad json", "type": "invalid_tool_call"}]
    filler = "\n".join(f"row {i} some filler words here" for i in range(250))
    messages = [HumanMessage("start", id="h0")]
    for k in range(8):
        call = {"id": f"w{k}", "name": "write_file", "args": {"path": f"/f{k}.txt", "content": filler}, "type": "tool_call"}
        messages.append(AIMessage(content="", tool_calls=[call], invalid_tool_calls=invalid, id=f"a{k}"))
        messages.append(ToolMessage(content="ok", tool_call_id=f"w{k}", name="write_file", id=f"t{k}"))
    messages.append(AIMessage(content="", tool_calls=[{"id": "e1", "name": "t", "args": {}, "type": "tool_call"}], id="ae"))
    messages.append(ToolMessage(content=[{"type": "text", "text": "ERR " + big}, image], tool_call_id="e1", name="t", id="te", status="error"))
    messages.append(HumanMessage("next", id="h9"))
    converted = to_model_messages(messages)
    result = compactor.manage(converted)
    back = {m.id: m for m in from_model_messages(result.messages, messages, converted)}
    rebuilt = [m for m in messages if back[m.id] is not m]
    assert {m.id for m in rebuilt} >= {"a0", "te"}, "evicted inputs and the offloaded error were rebuilt"
    assert back["te"].status == "error" and image in back["te"].content
    for k in range(8):
        assert back[f"a{k}"].invalid_tool_calls == invalid
    compactor.close()
