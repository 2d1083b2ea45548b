"""An async app (FastAPI, an agent loop) with an async store and ``state_path``: the compactor is
made inside the running event loop, where its store cannot be read, so its first ``amanage``
reads the state and builds the compactor from it (the core's ``persist-later``); ``asave_state``
and ``asystem_prompt`` await the store as ``amanage`` does."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Dict, List, Optional

import pytest

from conftest import bash_turn as turn
from context_compactor import Compactor, CompactorError, MemoryStore, aload_state

PATH = "/state/compactor.json"


class AsyncStore:
    """A store whose calls are coroutines (an aioredis or aiobotocore client's shape)."""

    def __init__(self) -> None:
        self.files = MemoryStore()
        self.reads: List[str] = []

    async def read(self, path: str) -> Optional[str]:
        self.reads.append(path)
        await asyncio.sleep(0)
        return self.files.read(path)

    async def write(self, path: str, content: str) -> None:
        await asyncio.sleep(0)
        self.files.write(path, content)

    async def list(self, prefix: str) -> List[str]:
        return self.files.list(prefix)

    async def delete(self, path: str) -> None:
        self.files.delete(path)


def test_an_async_store_with_state_path_is_read_by_the_first_amanage() -> None:
    store = AsyncStore()
    history = [{"role": "user", "content": "go"}, *turn("c1", "a")]

    async def request(messages: List[Dict[str, Any]]) -> Dict[str, Any]:
        # A stateless request: a new compactor, made inside the running loop.
        compactor = Compactor(context_window=32_000, store=store, state_path=PATH)
        reads = len(store.reads)
        before = compactor.stats()["compactions"]
        assert len(store.reads) == reads, "nothing read at construction"
        result = await compactor.amanage(messages)
        return {"before": before, "after": compactor.stats()["compactions"], "result": result, "compactor": compactor}

    first = asyncio.run(request(history))
    assert first["result"].state_error is None
    assert first["after"] == 1
    saved = json.loads(store.files.read(PATH) or "{}")
    assert saved["revision"] == 1
    # The next request: built from the stored state at its first call (the stats come with it),
    # the recorded offload replayed onto the raw history, nothing written again.
    second = asyncio.run(request([*history, *turn("c2", "b")]))
    assert second["before"] == 0, "not read at construction"
    assert second["after"] == 2, "the stored stats, then this call's offload"
    assert second["result"].messages[:3] == first["result"].messages
    assert json.loads(store.files.read(PATH) or "{}")["revision"] == 2

    async def saved_and_prompted() -> str:
        compactor = Compactor(context_window=32_000, store=store, state_path=PATH)
        await compactor.amanage([*history, *turn("c2", "b")])
        await compactor.asave_state()
        await store.write("/memories/AGENTS.md", "- the tests run with pytest")
        return await compactor.asystem_prompt("Base.")

    system = asyncio.run(saved_and_prompted())
    assert json.loads(store.files.read(PATH) or "{}")["revision"] == 3, "asave_state saved"
    loaded = asyncio.run(aload_state(store, PATH))
    assert loaded is not None and loaded["stats"]["compactions"] == 2
    assert system.startswith("Base.") and "the tests run with pytest" in system


def test_text_that_is_not_a_state_is_the_first_calls_typed_error() -> None:
    store = AsyncStore()
    store.files.write(PATH, "not a state")

    async def request() -> None:
        compactor = Compactor(context_window=32_000, store=store, state_path=PATH)
        await compactor.amanage([{"role": "user", "content": "hi"}])

    with pytest.raises(CompactorError) as raised:
        asyncio.run(request())
    assert raised.value.code == "invalid_config" and PATH in raised.value.message


def test_the_recovery_tools_await_an_async_store() -> None:
    from context_compactor.langchain import recovery_langchain_tools

    store = AsyncStore()
    store.files.write("/tool_outputs/log.txt", "\n".join(f"line {i}" for i in range(40)))

    async def run() -> List[str]:
        compactor = Compactor(context_window=32_000, store=store)
        tools = compactor.tools()
        page = await tools["read_file"].acall(path="/tool_outputs/log.txt", offset=10, limit=3)
        found = await tools["grep"].acall(pattern="line 3", path="/tool_outputs/")
        listed = await tools["ls"].acall(path="/tool_outputs/")
        by_name = {tool.name: tool for tool in recovery_langchain_tools(compactor)}
        via_langchain = await by_name["read_file"].ainvoke({"path": "/tool_outputs/log.txt", "limit": 1})
        return [page, found, listed, str(via_langchain)]

    page, found, listed, via_langchain = asyncio.run(run())
    assert "line 10" in page and "line 12" in page and "line 13" not in page, page
    assert "line 3" in found and "line 30" in found, found
    assert "log.txt" in listed, listed
    assert "line 0" in via_langchain and "line 1\n" not in via_langchain, via_langchain
    # Outside an event loop the sync call runs the async store's coroutines itself.
    assert "line 10" in Compactor(context_window=32_000, store=store).tools()["read_file"](path="/tool_outputs/log.txt", offset=10, limit=1)


def test_create_compactor_reads_the_state_before_it_returns_as_npm_does() -> None:
    from context_compactor import create_compactor

    store = AsyncStore()
    history = [{"role": "user", "content": "go"}, *turn("c1", "a")]

    async def main() -> None:
        first = await create_compactor(context_window=32_000, store=store, state_path=PATH)
        assert first.stats()["compactions"] == 0  # nothing stored yet
        await first.amanage(history)
        assert first.stats()["compactions"] == 1
        # A later request: the stored state is read (awaited) before create_compactor returns.
        reads = len(store.reads)
        later = await create_compactor(context_window=32_000, store=store, state_path=PATH)
        assert store.reads[reads:] == [PATH]
        assert later.stats()["compactions"] == 1, later.stats()
        # Compactor(...) in the same loop reads it only at its first amanage.
        assert Compactor(context_window=32_000, store=store, state_path=PATH).stats()["compactions"] == 0
        # What it read is what its saves are conditional on: the next turn saves revision 2.
        await later.amanage([*history, *turn("c2", "b")])
        assert json.loads(store.files.read(PATH) or "{}")["revision"] == 2
        # A text there that is not a state: the typed error, naming the path.
        store.files.write("/bad.json", "not a state")
        with pytest.raises(CompactorError) as bad:
            await create_compactor(context_window=32_000, store=store, state_path="/bad.json")
        assert bad.value.code == "invalid_config" and bad.value.details.get("path") == "/bad.json"

    asyncio.run(main())
