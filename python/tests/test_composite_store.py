"""CompositeStore and load_agents_md (parity with the npm package's `CompositeStore` and
`loadAgentsMd`, js/src/stores/composite.ts; npm's tests: js/test/stores.test.mjs,
js/test/state.test.mjs): paths routed by their longest matching prefix, `list` merged across
the stores, `write_if` the owning store's (read-compare-write where it has none), typed errors
for bad routes and paths, and the async variant a composite with an async store in it is."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Dict, List, Optional

import pytest

import context_compactor
from context_compactor import (
    AGENTS_MD_PATH,
    MEMORIES_PREFIX,
    AsyncCompositeStore,
    Compactor,
    CompactorError,
    CompositeStore,
    InvalidConfigError,
    InvalidPathError,
    LocalStore,
    MemoryStore,
    aload_agents_md,
    load_agents_md,
    load_state,
)
from context_compactor import compactor as compactor_module
from context_compactor import stores as stores_module
from context_compactor.stores import TimedStore

BIG = "\n".join(f"row {i}: value {(i * 7919) % 10_007} ok" for i in range(6_000))
CONVERSATION: List[Dict[str, Any]] = [
    {"role": "user", "content": "dump the table"},
    {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "t1", "toolName": "sql", "input": {}}]},
    {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "t1", "toolName": "sql", "output": {"type": "text", "value": BIG}}]},
]
NOTES = "# Project notes\n- tests run with cargo test\n"


class PlainStore:
    """A synchronous store without `write_if` (a key-value store's shape)."""

    def __init__(self) -> None:
        self.files: Dict[str, str] = {}

    def read(self, path: str) -> Optional[str]:
        return self.files.get(path)

    def write(self, path: str, text: str) -> None:
        self.files[path] = text

    def list(self, prefix: str) -> List[str]:
        return sorted(p for p in self.files if p.startswith(prefix))

    def delete(self, path: str) -> None:
        self.files.pop(path, None)


class AsyncMemory:
    """An async in-memory store (AsyncRedisStore's shape: every method a coroutine), without
    `write_if`; `calls` records what it was asked, each call after a real suspension."""

    def __init__(self) -> None:
        self.files: Dict[str, str] = {}
        self.calls: List[str] = []

    async def read(self, path: str) -> Optional[str]:
        await asyncio.sleep(0)
        self.calls.append(f"read {path}")
        return self.files.get(path)

    async def write(self, path: str, text: str) -> None:
        await asyncio.sleep(0)
        self.calls.append(f"write {path}")
        self.files[path] = text

    async def list(self, prefix: str) -> List[str]:
        await asyncio.sleep(0)
        return sorted(p for p in self.files if p.startswith(prefix))

    async def delete(self, path: str) -> None:
        await asyncio.sleep(0)
        self.files.pop(path, None)


class AsyncCas(AsyncMemory):
    """AsyncMemory with an async `write_if`."""

    async def write_if(self, path: str, expected: Optional[str], text: str) -> bool:
        await asyncio.sleep(0)
        self.calls.append(f"write_if {path}")
        if self.files.get(path) != expected:
            return False
        self.files[path] = text
        return True


def test_paths_go_to_the_store_of_their_longest_matching_prefix(tmp_path: Any) -> None:
    fallback, memories, team = MemoryStore(), MemoryStore(), LocalStore(tmp_path)
    # Given shortest first: the longest must still win.
    store = CompositeStore(fallback, {"/memories/": memories, "/memories/team/": team})
    assert type(store) is CompositeStore and not inspect.iscoroutinefunction(store.read)
    assert list(store.routes) == ["/memories/team/", "/memories/"]
    assert store.store_for("/memories/team/a.md") is team
    assert store.store_for("/memories/teamwork.md") is memories, "a route matches whole segments (it ends with /)"
    assert store.store_for("/memories") is fallback
    assert store.store_for("/tool_outputs/x.txt") is fallback

    store.write("/memories/team/a.md", "team")
    store.write("/memories/teamwork.md", "mine")
    store.write("/tool_outputs/x.txt", "x")
    assert (tmp_path / "memories" / "team" / "a.md").read_text() == "team"
    assert memories.list("/") == ["/memories/teamwork.md"]
    assert fallback.list("/") == ["/tool_outputs/x.txt"]
    assert store.read("/memories/team/a.md") == "team" and store.read("/tool_outputs/x.txt") == "x"
    # A path is read from its own store only, never from another that holds it.
    fallback.write("/memories/teamwork.md", "stray")
    assert store.read("/memories/teamwork.md") == "mine"
    store.delete("/memories/teamwork.md")
    assert memories.read("/memories/teamwork.md") is None and fallback.read("/memories/teamwork.md") == "stray"


def test_list_merges_every_store_that_can_hold_the_prefix_each_path_from_its_owner() -> None:
    fallback, shared, deep = MemoryStore(), MemoryStore(), MemoryStore()
    store = CompositeStore(fallback, {"/memories/": shared, "/notes/": shared, "/memories/deep/": deep})
    for path in ("/memories/AGENTS.md", "/notes/n.md", "/memories/deep/d.md", "/tool_outputs/x.txt"):
        store.write(path, path)
    # Paths a store holds but does not own are not listed (nor listed twice).
    fallback.write("/memories/stray.md", "stray")
    shared.write("/memories/deep/shadow.md", "shadow")
    shared.write("/tool_outputs/shadow.txt", "shadow")
    assert store.list("/") == ["/memories/AGENTS.md", "/memories/deep/d.md", "/notes/n.md", "/tool_outputs/x.txt"]
    assert store.list("") == store.list("/")
    assert store.list("/memories/") == ["/memories/AGENTS.md", "/memories/deep/d.md"]
    assert store.list("/memories/deep/") == ["/memories/deep/d.md"]
    assert store.list("/mem") == ["/memories/AGENTS.md", "/memories/deep/d.md"], "a prefix inside a route"
    assert store.list("/tool_outputs/") == ["/tool_outputs/x.txt"]
    assert store.list("/nothing/") == []


def test_write_if_is_the_owning_stores_and_read_compare_write_where_it_has_none() -> None:
    class Cas(MemoryStore):
        calls = 0

        def write_if(self, path: str, expected: Optional[str], text: str) -> bool:
            Cas.calls += 1
            return super().write_if(path, expected, text)

    state, fallback = Cas(), PlainStore()
    store = CompositeStore(fallback, {"/state/": state})
    assert store.write_if("/state/chat.json", None, "s") is True
    assert state.read("/state/chat.json") == "s" and Cas.calls == 1, "routed to the owning store's write_if"
    assert store.write_if("/state/chat.json", "x", "t") is False and state.read("/state/chat.json") == "s"
    assert store.write_if("/state/chat.json", "s", "t") is True and Cas.calls == 3
    assert fallback.files == {}

    # The fallback has no write_if: read, compare, write.
    assert store.write_if("/other/a", None, "one") is True
    assert store.write_if("/other/a", None, "two") is False
    assert store.write_if("/other/a", "nope", "two") is False
    assert fallback.files == {"/other/a": "one"}
    assert store.write_if("/other/a", "one", "two") is True and fallback.files == {"/other/a": "two"}
    with pytest.raises(InvalidPathError):
        store.write_if("/state/../a", None, "x")


@pytest.mark.parametrize(
    "routes",
    [
        {"memories": MemoryStore()},
        {"/memories": MemoryStore()},
        {"memories/": MemoryStore()},
        {"/a/../": MemoryStore()},
        {"/a//": MemoryStore()},
        {7: MemoryStore()},
        {"/memories/": "not a store"},
        [("/memories/", MemoryStore())],
    ],
)
def test_a_bad_route_is_invalid_config(routes: Any) -> None:
    with pytest.raises(InvalidConfigError) as raised:
        CompositeStore(MemoryStore(), routes)
    assert raised.value.code == "invalid_config" and raised.value.field == "routes", raised.value


def test_bad_fallback_and_bad_paths_are_typed_errors() -> None:
    with pytest.raises(InvalidConfigError) as raised:
        CompositeStore(None, {})  # type: ignore[arg-type]
    assert raised.value.field == "fallback"
    store = CompositeStore(MemoryStore(), {"/memories/": MemoryStore()})
    for call in (
        lambda: store.read("/memories/../x"),
        lambda: store.write("relative", "x"),
        lambda: store.delete("/a\\b"),
        lambda: store.list("no-slash"),
        lambda: store.list("/a/../"),
    ):
        with pytest.raises(InvalidPathError) as bad:
            call()
        assert bad.value.code == "invalid_path"


def test_a_root_route_takes_every_path_not_routed_longer() -> None:
    fallback, root, memories = MemoryStore(), MemoryStore(), MemoryStore()
    store = CompositeStore(fallback, {"/": root, "/memories/": memories})
    store.write("/a.txt", "a")
    store.write("/memories/m.md", "m")
    assert root.list("/") == ["/a.txt"] and memories.list("/") == ["/memories/m.md"] and len(fallback) == 0
    assert store.list("/") == ["/a.txt", "/memories/m.md"]


def test_the_constants_and_exports_match_the_compactors() -> None:
    assert MEMORIES_PREFIX == stores_module.MEMORIES_PREFIX == "/memories/"
    # The core's memory protocol names the directory the stores route.
    assert f"`{MEMORIES_PREFIX}AGENTS.md`" in Compactor().system_prompt("", memory=True)
    assert AGENTS_MD_PATH == stores_module.AGENTS_MD_PATH == compactor_module.AGENTS_MD_PATH == "/memories/AGENTS.md"
    for name in ("CompositeStore", "AsyncCompositeStore", "load_agents_md", "aload_agents_md", "MEMORIES_PREFIX"):
        assert name in context_compactor.__all__


def test_a_compactor_reads_agents_md_from_the_routed_store_and_offloads_to_the_fallback(tmp_path: Any) -> None:
    session, memories = MemoryStore(), LocalStore(tmp_path)
    memories.write(AGENTS_MD_PATH, NOTES)
    store = CompositeStore(session, {MEMORIES_PREFIX: memories})
    assert load_agents_md(store) == NOTES
    assert load_agents_md(session) is None
    assert load_agents_md(store, "/memories/none.md") is None
    with pytest.raises(InvalidPathError):
        load_agents_md(store, "/memories/../AGENTS.md")

    compactor = Compactor(context_window=16_000, store=store)
    system = compactor.system_prompt("You are a coding agent.")
    assert system.startswith("You are a coding agent.")
    assert "tests run with cargo test" in system, "AGENTS.md loaded from the routed store"
    assert "/memories/" in system and "read_file" in system
    bare = Compactor(context_window=16_000, store=CompositeStore(MemoryStore(), {MEMORIES_PREFIX: MemoryStore()})).system_prompt("Base.")
    assert "read_file" in bare and "cargo test" not in bare

    result = compactor.manage(CONVERSATION)
    offloaded = session.list("/tool_outputs/")
    assert offloaded, result.events
    assert session.read(offloaded[0]) == BIG
    assert offloaded[0] in result.messages[2]["content"][0]["output"]["value"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memories"], "nothing offloaded to the memories store"
    assert store.list("/") == sorted([AGENTS_MD_PATH, *offloaded])
    # The recovery tools read through the composite: both stores.
    tools = compactor.tools()
    assert "row 0: value 0 ok" in tools["read_file"](path=offloaded[0])
    assert "cargo test" in tools["read_file"](path=AGENTS_MD_PATH)


def test_a_composite_with_an_async_store_is_async() -> None:
    sync_store = CompositeStore(MemoryStore(), {"/memories/": PlainStore()})
    assert not any(inspect.iscoroutinefunction(getattr(sync_store, m)) for m in ("read", "write", "list", "delete", "write_if"))
    for store in (
        CompositeStore(MemoryStore(), {"/memories/": AsyncMemory()}),
        CompositeStore(AsyncMemory(), {"/memories/": MemoryStore()}),
        CompositeStore(MemoryStore(), {"/memories/": TimedStore(AsyncMemory(), 5)}),
        CompositeStore(MemoryStore(), {"/memories/": CompositeStore(MemoryStore(), {"/memories/a/": AsyncMemory()})}),
        AsyncCompositeStore(MemoryStore(), {"/memories/": MemoryStore()}),
    ):
        assert type(store) is AsyncCompositeStore and isinstance(store, CompositeStore)
        assert all(inspect.iscoroutinefunction(getattr(store, m)) for m in ("read", "write", "list", "delete", "write_if"))
    with pytest.raises(InvalidConfigError):
        CompositeStore(MemoryStore(), {"memories/": AsyncMemory()})

    fallback, memories = MemoryStore(), AsyncMemory()
    store = CompositeStore(fallback, {"/memories/": memories, "/notes/": memories})

    async def run() -> None:
        await store.write("/memories/a.md", "a")
        await store.write("/notes/n.md", "n")
        await store.write("/tool_outputs/x.txt", "x")
        fallback.write("/memories/stray.md", "stray")
        assert memories.files == {"/memories/a.md": "a", "/notes/n.md": "n"}
        assert await store.read("/memories/a.md") == "a" and await store.read("/tool_outputs/x.txt") == "x"
        assert await store.list("/") == ["/memories/a.md", "/notes/n.md", "/tool_outputs/x.txt"]
        # No write_if on the async store: read, compare, write, each awaited.
        assert await store.write_if("/memories/a.md", "b", "c") is False
        assert await store.write_if("/memories/a.md", "a", "c") is True and memories.files["/memories/a.md"] == "c"
        assert await store.write_if("/tool_outputs/x.txt", "x", "y") is True and fallback.read("/tool_outputs/x.txt") == "y"
        await store.delete("/notes/n.md")
        assert "/notes/n.md" not in memories.files
        with pytest.raises(InvalidPathError):
            await store.read("/memories/../a.md")
        await memories.write(AGENTS_MD_PATH, NOTES)
        assert await aload_agents_md(store) == NOTES
        assert await aload_agents_md(fallback) is None
        # The sync loader inside a running loop says what to use instead.
        with pytest.raises(CompactorError, match="aload_agents_md"):
            load_agents_md(store)

    asyncio.run(run())
    # Outside a loop the sync loader runs the async store to completion.
    assert load_agents_md(store) == NOTES

    cas = AsyncCas()
    delegating = CompositeStore(MemoryStore(), {"/state/": cas})
    assert asyncio.run(delegating.write_if("/state/s.json", None, "1")) is True
    assert asyncio.run(delegating.write_if("/state/s.json", None, "2")) is False
    assert cas.calls == ["write_if /state/s.json", "write_if /state/s.json"], "the owning store's write_if, awaited"


def test_amanage_with_an_async_composite_offloads_saves_state_and_reads_agents_md() -> None:
    outputs, state, memories = AsyncMemory(), AsyncMemory(), MemoryStore()
    memories.write(AGENTS_MD_PATH, NOTES)
    store = CompositeStore(outputs, {"/state/": state, MEMORIES_PREFIX: memories})
    assert isinstance(store, AsyncCompositeStore)
    compactor = Compactor(context_window=16_000, store=store, state_path="/state/chat.json")

    result = asyncio.run(compactor.amanage(CONVERSATION))
    offloaded = [p for p in outputs.files if p.startswith("/tool_outputs/")]
    assert offloaded and outputs.files[offloaded[0]] == BIG, result.events
    assert offloaded[0] in result.messages[2]["content"][0]["output"]["value"]
    # The state went to its route, read-compare-write (no write_if there), each call awaited.
    assert "/state/chat.json" in state.files and f"write {offloaded[0]}" in outputs.calls
    assert "read /state/chat.json" in state.calls and "write /state/chat.json" in state.calls
    assert not any(p.startswith("/tool_outputs/") for p in state.files) and memories.list("/") == [AGENTS_MD_PATH]
    saved = load_state(store, "/state/chat.json")
    assert saved is not None and saved["stats"]["filesWritten"] == 1
    assert "tests run with cargo test" in compactor.system_prompt("Base.")
