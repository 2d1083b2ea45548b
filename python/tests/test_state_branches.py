"""Versioned state in the Python host (issue 31, parity with js/test/state-branches.test.mjs):
the state at ``state_path`` carries a revision and the conversation it was saved for, and is
saved with a compare-and-set; what a call does after losing its save is the core's rule
(``src/stored.rs``), the same as the npm package's. Other requests' saves are slipped in right
before this call's conditional writes."""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional

import pytest

from conftest import bash_turn as turn, chat
from context_compactor import Compactor, CompactorError, MemoryStore, load_state

PATH = "/state/compactor.json"


START: List[Dict[str, Any]] = [{"role": "user", "content": "go"}, *turn("c1", "a")]


class RacedStore(MemoryStore):
    """A store whose state saves first run the next of ``before`` (another request saving)."""

    def __init__(self) -> None:
        super().__init__()
        self.before: List[Callable[[], None]] = []
        self.saves = 0
        self.refuse_all = False

    def write_if(self, path: str, expected: Optional[str], text: str) -> bool:
        if path == PATH:
            self.saves += 1
            if self.refuse_all:
                return False
            if self.before:
                self.before.pop(0)()
        return super().write_if(path, expected, text)

    def plain(self) -> MemoryStore:
        """The same files, without the race."""
        store = self

        class Plain(MemoryStore):
            def read(self, path: str) -> Optional[str]:
                return store.read(path)

            def write(self, path: str, text: str) -> None:
                store.write(path, text)

            def list(self, prefix: str) -> List[str]:
                return store.list(prefix)

            def write_if(self, path: str, expected: Optional[str], text: str) -> bool:
                return MemoryStore.write_if(store, path, expected, text)

        return Plain()

    def save(self, messages: List[Dict[str, Any]]) -> Callable[[], None]:
        def run() -> None:
            result = Compactor(context_window=32_000, store=self.plain(), state_path=PATH, store_timeout=120).manage(messages)
            assert result.state_error is None

        return run


def stored(store: MemoryStore) -> Dict[str, Any]:
    return dict(json.loads(store.read(PATH) or "{}"))


def offloaded(state: Dict[str, Any]) -> List[str]:
    return sorted(e["toolCallId"] for e in state["record"]["edits"])


def test_saves_carry_a_revision_and_the_conversation_and_load_state_strips_them() -> None:
    store = RacedStore()
    store.save(START)()
    first = stored(store)
    assert first["revision"] == 1 and len(first["conversation"]) == 8 * len(START)
    state = load_state(store, PATH)
    assert state is not None and "revision" not in state and "conversation" not in state
    store.save([*START, *turn("c2", "b")])()
    assert stored(store)["revision"] == 2
    # A stale request (an earlier turn, answered late) saves nothing over the later state.
    Compactor(context_window=32_000, store=store, state_path=PATH, store_timeout=120).manage(START)
    assert stored(store)["revision"] == 2


def test_another_branch_saved_first_twice_merges_once_then_answers_unsaved() -> None:
    store = RacedStore()
    store.save(START)()
    store.before += [store.save([*START, *turn("c2", "b")]), store.save([*START, *turn("c4", "d")])]
    mine = [*START, *turn("c3", "c")]
    told: List[Dict[str, Any]] = []
    result = Compactor(context_window=32_000, store=store, state_path=PATH, store_timeout=120, on_event=told.append).manage(mine)
    assert result.state_error is None
    assert store.saves == 2, "saved once on its own state, once merged"
    # Two rounds ran; on_event heard the answered round's events, once each.
    assert told == result.events
    assert "/tool_outputs/" in result.messages[4]["content"][0]["output"]["value"]
    state = stored(store)
    assert state["revision"] == 3
    assert offloaded(state) == ["c1", "c2", "c4"], "the other branches' state, not overwritten"
    # With one branch ahead of it: it merges and lands, both branches recorded.
    store.before.append(store.save([*START, *turn("c5", "e")]))
    again = Compactor(context_window=32_000, store=store, state_path=PATH, store_timeout=120).manage([*START, *turn("c6", "f")])
    assert again.state_error is None
    assert offloaded(stored(store)) == ["c1", "c2", "c4", "c5", "c6"]


def test_the_same_branch_moved_on_five_times_answers_unsaved_with_the_same_prompt() -> None:
    store = RacedStore()
    store.save(START)()
    turns = [turn(i, f) for i, f in zip(["c2", "c3", "c4", "c5", "c6", "c7"], "bcdefg")]

    def prefix(n: int) -> List[Dict[str, Any]]:
        return [*START, *(m for t in turns[:n] for m in t)]

    store.before += [store.save(prefix(n)) for n in range(1, 6)]
    result = Compactor(context_window=32_000, store=store, state_path=PATH, store_timeout=120).manage(prefix(6))
    assert result.state_error is None
    assert any(e.get("toolCallId") == "c7" and e["status"] == "applied" for e in result.events)
    assert stored(store)["revision"] == 6, "the five saves that landed stand"
    following = Compactor(context_window=32_000, store=store, state_path=PATH, store_timeout=120).manage(prefix(6))
    assert following.messages == result.messages
    assert stored(store)["revision"] == 7


def test_a_store_that_keeps_refusing_is_a_state_conflict_and_an_unreadable_state_is_said() -> None:
    store = RacedStore()
    store.save(START)()
    store.refuse_all = True
    with pytest.raises(CompactorError) as conflict:
        Compactor(context_window=32_000, store=store, state_path=PATH, store_timeout=120).manage([*START, *turn("c2", "b")])
    assert conflict.value.code == "state_conflict" and "refused to save the state at /state/compactor.json 5 times" in str(conflict.value)

    class Unreadable(MemoryStore):
        failing = 1

        def read(self, path: str) -> Optional[str]:
            if path == PATH and self.failing > 0:
                self.failing -= 1
                raise ConnectionError("connection reset")
            return super().read(path)

    flaky = Unreadable()
    Compactor(context_window=32_000, store=flaky, state_path=PATH).manage(START)
    flaky.failing = 1
    reference = Compactor(context_window=32_000, store=MemoryStore()).manage([*START, *turn("c2", "b")])
    result = Compactor(context_window=32_000, store=flaky, state_path=PATH).manage([*START, *turn("c2", "b")])
    assert result.state_error is None, "the save read the state back and the call ran on it"
    assert result.messages == reference.messages
    assert json.loads(flaky.read(PATH) or "{}")["revision"] == 2


def test_an_explicit_save_is_for_the_last_calls_conversation() -> None:
    store = MemoryStore()
    compactor = Compactor(context_window=32_000, store=store, state_path=PATH, store_timeout=120)
    compactor.manage(START)
    before = stored(store).get("revision", 0)
    compactor.save_state()
    saved = stored(store)
    assert saved["revision"] == before + 1
    assert len(saved["conversation"]) == 8 * len(START)
    # A request on another branch saved since: an explicit save over it is a state_conflict
    # (one on a later turn of this conversation would make this save take its state).
    Compactor(context_window=32_000, store=store, state_path=PATH, store_timeout=120).manage([START[0], *turn("c9", "z")])
    theirs = stored(store)
    with pytest.raises(CompactorError, match="another branch of the conversation"):
        compactor.save_state()
    assert stored(store) == theirs


def test_save_state_is_a_call_of_the_core_as_in_npm() -> None:
    """As js/test/state.test.mjs: a compactor given its state reads the path at its first act
    (here an explicit save, which for no conversation yet saves nothing), and a store whose
    save fails makes ``save_state`` a typed ``store_failed`` naming the path."""
    store = MemoryStore()
    Compactor(context_window=32_000, store=store, state_path=PATH).manage(START)
    revision = stored(store)["revision"]
    reads: List[str] = []
    read = store.read
    store.read = lambda path: (reads.append(path), read(path))[1]  # type: ignore[method-assign]
    own = Compactor(context_window=32_000, store=store, state_path=PATH, state=Compactor(context_window=32_000).state())
    assert reads == [], "nothing read before the first call"
    own.save_state()
    assert reads == [PATH]
    assert stored(store)["revision"] == revision
    own.manage([*START, *turn("c2", "b")])
    assert stored(store)["revision"] == revision + 1
    own.save_state()
    assert stored(store)["revision"] == revision + 2

    def full(path: str, text: str) -> None:
        raise OSError("the disk is full")

    store.write = full  # type: ignore[method-assign]
    store.write_if = lambda path, expected, text: full(path, text)  # type: ignore[method-assign,attr-defined]
    with pytest.raises(CompactorError) as raised:
        own.save_state()
    assert raised.value.code == "store_failed" and (raised.value.details or {}).get("path") == PATH
    assert "the disk is full" in raised.value.message and PATH in raised.value.message


def test_the_core_says_when_a_save_is_due_as_in_npm() -> None:
    """As js/test/state.test.mjs: a call that changed the state saves once, one that changed
    nothing saves nothing, a state of the app's own is saved over what is stored, and an
    explicit save that another compactor beat takes that state."""
    store = RacedStore()
    now = [float(1767268800000)]  # 2026-01-01T12:00Z
    options: Dict[str, Any] = {"model": "gpt-4o", "context_window": 32_000, "store": store, "state_path": PATH, "now": lambda: now[0]}
    compactor = Compactor(**options)
    first = compactor.manage(START)
    assert len(first.events) == 1 and store.saves == 1
    compactor.manage(first.messages)  # the state is as saved: nothing written
    assert store.saves == 1
    now[0] += 60_000  # the call time moved a minute: one save
    compactor.manage(first.messages)
    assert store.saves == 2 and stored(store)["revision"] == 2
    own = Compactor(**options, state=compactor.state())
    own.manage(first.messages)
    assert store.saves == 3 and stored(store)["revision"] == 3
    own.save_state()
    assert stored(store)["revision"] == 4
    # Another compactor saved since: this one takes that state, written over by nothing.
    compactor.save_state()
    assert stored(store)["revision"] == 4
    compactor.save_state()
    assert stored(store)["revision"] == 5
    # A state deleted (or expired) since: the explicit save writes this one's again.
    mine = compactor.state()
    store.delete(PATH)
    compactor.save_state()
    assert {k: v for k, v in stored(store).items() if k not in ("revision", "conversation")} == mine == compactor.state()


def test_a_lost_save_runs_the_call_again_without_asking_the_summarizer_twice() -> None:
    """As npm (js/test/state.test.mjs): the core answers the rerun's summary and writes from the
    first round (the Python host used to ask the summarizer again)."""
    lose = [1]

    class Losing(MemoryStore):
        def write_if(self, path: str, expected: Optional[str], text: str) -> bool:
            if path == PATH and lose[0] > 0:
                lose[0] -= 1
                return False
            return super().write_if(path, expected, text)

    store = Losing()
    written: List[str] = []
    write = store.write

    def counting_write(path: str, text: str) -> None:
        written.append(path)
        write(path, text)

    store.write = counting_write  # type: ignore[method-assign]
    asked: List[int] = []

    def summarize(request: Dict[str, Any]) -> str:
        asked.append(len(request["prompt"]))
        return f"## Session Intent\nSummary {len(request['prompt'])}."

    raw = chat(30)
    result = Compactor(context_window=8_000, store=store, state_path=PATH, summarize=summarize, background=False).manage(raw)
    assert any(e["strategy"] == "summarize" and e["status"] == "applied" for e in result.events)
    assert len(asked) == 1, "the rerun reused the summary"
    assert len(written) == len(set(written)), f"a file written twice: {written}"
    assert stored(store)["revision"] == 1 and lose[0] == 0
