"""Typed errors on the bad input the JS host tests (js/test/host.test.mjs), and the stores:
hostile paths refused, atomic writes, the local store confined to its root (symlinks
included)."""

from __future__ import annotations

import os

import pytest

from context_compactor import (
    Compactor,
    CompactorError,
    EncodingError,
    InvalidConfigError,
    InvalidMessageError,
    InvalidPathError,
    LocalStore,
    MalformedJsonError,
    MemoryStore,
    PlanMismatchError,
    count_tokens,
    load_state,
    ls,
    read_file,
)


def test_bad_input_gets_typed_errors_naming_message_index_and_field() -> None:
    compactor = Compactor(context_window=16_000)
    orphan = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "ghost", "toolName": "t", "output": {"type": "text", "value": "x"}}]},
    ]
    with pytest.raises(InvalidMessageError) as e:
        compactor.plan(orphan)
    assert e.value.code == "orphan_tool_result" and e.value.index == 1 and e.value.details["toolCallId"] == "ghost"
    with pytest.raises(InvalidMessageError) as e:
        compactor.plan([{"role": "robot", "content": "x"}])
    assert (e.value.code, e.value.index, e.value.field) == ("invalid_message", 0, "role")
    with pytest.raises(InvalidMessageError) as e:
        compactor.plan([{"role": "assistant", "content": [{"type": "tool-call", "toolName": "t", "input": {}}]}])
    assert e.value.field == "content[0].toolCallId"
    with pytest.raises(InvalidMessageError) as e:
        compactor.plan({"not": "an array"})  # type: ignore[arg-type]
    assert e.value.code == "invalid_messages"
    with pytest.raises(InvalidMessageError) as e:
        compactor.manage([{"role": "user", "content": 7}])
    assert e.value.field == "content"
    with pytest.raises(InvalidMessageError) as e:
        compactor.usage([{"role": "user", "content": object()}])
    assert e.value.code == "invalid_messages" and e.value.index == 0 and "JSON" in str(e.value)
    with pytest.raises(InvalidMessageError) as e:
        compactor.usage([{"role": "user", "content": "ok"}, {"role": "user", "content": float("nan")}])
    assert e.value.index == 1
    # After an error the compactor still works (nothing half-synced is held).
    assert compactor.usage([{"role": "user", "content": "hi"}])["tokens"] > 0


def test_bad_options_are_typed_errors_naming_the_field() -> None:
    with pytest.raises(InvalidConfigError) as e:
        Compactor(contextWindw=5)
    assert e.value.code == "invalid_config" and "contextWindw" in str(e.value)
    with pytest.raises(InvalidConfigError) as e:
        Compactor(offload={"threshold_tokens": -1})
    assert e.value.field == "offload.threshold_tokens"
    with pytest.raises(InvalidConfigError) as e:
        Compactor(store=object())  # type: ignore[arg-type]
    assert e.value.field == "store" and "read, write, list, delete" in str(e.value)
    with pytest.raises(InvalidConfigError):
        Compactor(summarize_timeout=0)
    with pytest.raises(InvalidConfigError) as e:
        Compactor(state={"stats": "nope"})
    assert e.value.field == "state"  # no version: not a saved state
    with pytest.raises(InvalidConfigError) as e:
        Compactor(state={"version": 2, "lastCallAt": "x"})
    assert e.value.field == "state.lastCallAt"  # the state's own name, not an option's
    with pytest.raises(InvalidConfigError):
        Compactor(state_path="/state.json")  # no store to keep it in
    with pytest.raises(EncodingError):
        count_tokens("x", "p50k_base")
    # Every typed error is a CompactorError with the core's code.
    assert issubclass(MalformedJsonError, CompactorError) and issubclass(PlanMismatchError, CompactorError)


def test_a_store_file_that_is_not_a_state_is_a_typed_error() -> None:
    store = MemoryStore()
    store.write("/state/compactor.json", "[1, 2]")
    with pytest.raises(InvalidConfigError):
        load_state(store)
    assert load_state(MemoryStore()) is None


@pytest.mark.parametrize(
    "path",
    ["relative.txt", "/a/../b", "/a/./b", "/a//b", "/a/", "/a\\b", "/a\0b", "/" + "x" * 256, "/" + "a/" * 600 + "b", 7],
)
def test_hostile_store_paths_are_refused(path, tmp_path) -> None:
    for store in (MemoryStore(), LocalStore(tmp_path)):
        with pytest.raises(InvalidPathError) as e:
            store.write(path, "x")
        assert e.value.code == "invalid_path"
        with pytest.raises(InvalidPathError):
            store.read(path)
    # The recovery tools turn it into text for the model, never an exception.
    assert read_file(MemoryStore(), path).startswith("Error: invalid store path")  # type: ignore[arg-type]


def test_local_store_writes_atomically_and_lists_what_it_holds(tmp_path) -> None:
    store = LocalStore(tmp_path / "root")
    store.write("/tool_outputs/a.txt", "línea 1\r\nline 2 🙂")
    store.write("/tool_outputs/deep/b.txt", "b")
    store.write("/tool_outputs/a.txt", "replaced")
    assert store.read("/tool_outputs/a.txt") == "replaced"
    assert store.read("/missing.txt") is None
    assert store.list("/") == ["/tool_outputs/a.txt", "/tool_outputs/deep/b.txt"]
    assert store.list("/tool_outputs/d") == ["/tool_outputs/deep/b.txt"]
    # No temp file is left behind, and a stray one is never listed.
    assert sorted(os.listdir(tmp_path / "root" / "tool_outputs")) == ["a.txt", "deep"]
    (tmp_path / "root" / "tool_outputs" / "c.txt.123.cc-tmp").write_text("half")
    assert store.list("/") == ["/tool_outputs/a.txt", "/tool_outputs/deep/b.txt"]
    store.write("/crlf.txt", "a\r\nb")
    assert store.read("/crlf.txt") == "a\r\nb"
    store.delete("/tool_outputs/a.txt")
    store.delete("/tool_outputs/a.txt")  # deleting a missing file is fine
    assert ls(store, "/") == "/crlf.txt\n/tool_outputs/"


def test_local_store_is_confined_to_its_root_through_symlinks(tmp_path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(outside, root / "escape")
    os.symlink(outside / "secret.txt", root / "link.txt")
    store = LocalStore(root)
    for action in (lambda: store.read("/escape/secret.txt"), lambda: store.write("/escape/new.txt", "x"), lambda: store.read("/link.txt"), lambda: store.list("/escape/")):
        with pytest.raises(InvalidPathError):
            action()
    assert not (outside / "new.txt").exists()
    assert (outside / "secret.txt").read_text() == "secret"
    # Writing over a planted file symlink replaces the link; the target is untouched.
    store.write("/link.txt", "mine")
    assert (outside / "secret.txt").read_text() == "secret" and store.read("/link.txt") == "mine"


def test_a_store_failure_is_an_outcome_and_removes_nothing() -> None:
    class Failing(MemoryStore):
        def write(self, path: str, text: str) -> None:
            raise OSError("quota exceeded")

    from test_compactor import huge_tool_result, slice_conversation

    messages = slice_conversation(huge_tool_result(30_000))
    result = Compactor(model="gpt-4o", context_window=16_000, store=Failing()).manage(messages)
    [event] = result.events
    assert event["status"] == "failed" and "quota exceeded" in event["error"]
    assert result.messages == messages


def test_errors_name_this_packages_functions_not_the_npm_packages() -> None:
    from context_compactor import EncodingError, count_tokens

    with pytest.raises(EncodingError) as unknown:
        count_tokens("hi", "no-such-tokenizer")
    assert "load_tokenizer" in unknown.value.message and "loadTokenizer" not in unknown.value.message
    assert unknown.value.code == "unknown_encoding"
