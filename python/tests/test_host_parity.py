"""Where the Python host did something else than the npm host for the same input (found by
comparing the two, issue 31; npm's side: js/test/host-parity.test.mjs). Each test fails on the
Python host as it was."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

import pytest

from context_compactor import Compactor, CompactorError, MemoryStore, load_state

from conftest import chat
from test_background import WINDOW, turn

PATH = "/state/chat.json"


def grow_until_asked(compactor: Compactor) -> Dict[str, Any]:
    messages: List[Dict[str, Any]] = [{"role": "system", "content": "You are a helpful research agent."}]
    for t in range(80):
        messages += turn(t)
        ahead = compactor.manage(list(messages)).plan.get("ahead")
        if ahead is not None:
            return dict(ahead)
    raise AssertionError("no summary asked ahead")


def test_settled_hands_a_summary_made_ahead_to_the_state() -> None:
    compactor = Compactor(context_window=WINDOW, summarize=lambda request: "## Session Intent\nMade ahead")
    ahead = grow_until_asked(compactor)
    compactor.settled()
    # As npm's settled(): the state holds the text (a state saved or handed on now keeps it).
    assert compactor.state()["ahead"] == {"key": ahead["aheadKey"], "end": ahead["end"], "text": "## Session Intent\nMade ahead"}


def test_an_offload_at_tool_return_is_saved_with_the_next_save() -> None:
    store = MemoryStore()
    compactor = Compactor(context_window=16_000, store=store, state_path=PATH, now=lambda: 1_700_000_000_000)
    compactor.manage(chat(1))
    big = "\n".join(f"row {i}: {'x' * 60}" for i in range(3_000))
    assert compactor.offload_tool_output("sql", "t9", big) != big
    compactor.manage(chat(1))
    saved = load_state(store, PATH)
    assert saved is not None and saved["stats"]["filesWritten"] == 1, saved and saved["stats"]


def test_a_refused_save_whose_read_back_fails_says_so_and_reads_once() -> None:
    class Refusing(MemoryStore):
        reads = 0

        def write_if(self, path: str, expected: Optional[str], text: str) -> bool:
            return False

        def read(self, path: str) -> Optional[str]:
            if path == PATH:
                Refusing.reads += 1
                if Refusing.reads > 1:
                    raise OSError("connection reset")
            return super().read(path)

    store = Refusing()
    result = Compactor(context_window=8_000, store=store, state_path=PATH).compact(chat(12))
    assert result.state_error is not None
    assert "the save was refused and the state could not be read back: connection reset" in result.state_error
    assert Refusing.reads == 2, "read at creation, then once back after the refusal"


def test_a_summary_asked_ahead_is_no_longer_looked_for_once_a_summary_was_applied() -> None:
    class Counting(MemoryStore):
        def __init__(self) -> None:
            super().__init__()
            self.ahead_reads = 0

        def read(self, path: str) -> Optional[str]:
            if ".summaries/ahead-" in path:
                self.ahead_reads += 1
            return super().read(path)

    store = Counting()
    # A loaded state names a summary asked ahead whose file never appears.
    first = Compactor(context_window=WINDOW, store=store, state_path=PATH, summarize=lambda r: (_ for _ in ()).throw(RuntimeError("down")))
    grow_until_asked(first)
    first.settled()
    for path in store.list("/state/"):
        if ".summaries/" in path:
            store.delete(path)
    state = json.loads(store.read(PATH))
    assert "ahead" in state and "text" not in state["ahead"], state.get("ahead")
    compactor = Compactor(context_window=WINDOW, background=False, store=store, state_path=PATH, summarize=lambda r: "## S\nMade in the call")
    messages: List[Dict[str, Any]] = [{"role": "system", "content": "You are a helpful research agent."}]
    applied_at = None
    for t in range(80):
        messages += turn(t)
        result = compactor.manage(list(messages))
        if applied_at is None and any(e["strategy"] == "summarize" and e["status"] == "applied" for e in result.events):
            applied_at = store.ahead_reads
        elif applied_at is not None:
            break
    assert applied_at is not None
    assert store.ahead_reads == applied_at, "no read of the ahead summary after a summary was applied"


def test_an_infinite_usage_is_no_sample_and_a_file_that_is_no_state_names_its_path() -> None:
    compactor = Compactor(context_window=8_000)
    compactor.manage(chat(2))
    compactor.observe_usage(float("inf"))  # ignored, as npm ignores a non-finite count
    store = MemoryStore()
    store.write("/state/x.json", "a note, not a state")
    with pytest.raises(CompactorError) as raised:
        load_state(store, "/state/x.json")
    assert raised.value.details.get("path") == "/state/x.json" and raised.value.details.get("field") == "state"
