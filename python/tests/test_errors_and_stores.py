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


def test_dict_keys_that_json_writes_alike_are_an_error_naming_message_and_field_not_a_lost_value() -> None:
    # {1: "a", "1": "b"} is written {"1": "a", "1": "b"}: the core would read one value and the
    # other would be lost from what is kept and stored.
    compactor = Compactor(model="gpt-4o")
    history: list = [{"role": "user", "content": "x" * 10} for _ in range(5)]
    compactor.manage(history)  # five messages held: the error names the sixth as 6, not 1
    bad = history + [
        {"role": "user", "content": "y"},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "b", "toolName": "t", "output": {"type": "json", "value": {None: 1, "null": 2}}}]},
    ]
    with pytest.raises(InvalidMessageError) as caught:
        compactor.manage(bad)
    assert caught.value.details == {"index": 6, "field": "content[0].output.value"}
    assert "keys None and 'null' are both written as JSON key \"null\"" in str(caught.value)
    with pytest.raises(InvalidMessageError, match=r"message 5: cannot be sent as JSON"):
        compactor.manage(history + [{"role": "user", "content": [{"type": "text", "text": "a", "x": object()}]}])
    with pytest.raises(InvalidMessageError, match=r"offload_tool_output: the output of tool t \(call c\): keys 1 and '1'"):
        compactor.offload_tool_output("t", "c", {1: "a", "1": "b"})
    # Keys that stay apart cross as JSON writes them.
    assert compactor.offload_tool_output("t", "c", {1: "a", 2.5: "b", None: "c"}) == {1: "a", 2.5: "b", None: "c"}
    compactor.close()


def test_a_store_whose_read_or_list_answers_something_other_than_text_is_store_failed_not_str_of_it() -> None:
    # A read that answered 42 was taken for the text "42" (an AGENTS.md of "42" in the system
    # prompt, a state file "not a saved state").
    memory = MemoryStore()
    memory.write("/tool_outputs/a.txt", "hello")
    for value in (42, {"a": 1}, b"hi", True):

        class Odd:
            def read(self, path: str) -> object:
                return value

            def write(self, path: str, text: str) -> None:
                memory.write(path, text)

            def list(self, prefix: str) -> object:
                return value

            def delete(self, path: str) -> None:
                memory.delete(path)

        name = type(value).__name__
        compactor = Compactor(model="gpt-4o", store=Odd())
        tools = compactor.tools()
        assert tools["read_file"](path="/tool_outputs/a.txt") == f'Error: store read of "/tool_outputs/a.txt" returned {name}: expected a str, or None when nothing is stored there'
        assert tools["ls"]() == f'Error: store list of "/" returned {name}: expected a list of paths (str)'
        with pytest.raises(CompactorError) as caught:
            compactor.system_prompt("base")
        assert caught.value.code == "store_failed" and caught.value.details["path"] == "/memories/AGENTS.md"
        with pytest.raises(CompactorError, match="returned"):
            load_state(Odd(), "/s.json")
        kept = Compactor(model="gpt-4o", store=Odd(), state_path="/s.json")
        assert 'store read of "/s.json" returned' in (kept.manage([{"role": "user", "content": "hi"}]).state_error or "")


def test_a_set_crosses_in_the_same_order_in_every_process_so_its_stored_path_is_the_same() -> None:
    # A set's own order is the process's hash seed: crossing as it iterated, the same output was
    # stored under a different path in each process (a shared state_path saw new content).
    import subprocess
    import sys

    script = (
        "from context_compactor import Compactor\n"
        "vals = {f'value-{i}' for i in range(3000)} | {1, 2.5, (1, 'a')}\n"
        "msgs = [{'role': 'user', 'content': 'go'},"
        " {'role': 'assistant', 'content': [{'type': 'tool-call', 'toolCallId': 'c1', 'toolName': 'q', 'input': {}}]},"
        " {'role': 'tool', 'content': [{'type': 'tool-result', 'toolCallId': 'c1', 'toolName': 'q', 'output': {'type': 'json', 'value': {'vals': vals}}}]}]\n"
        "print([e['path'] for e in Compactor(model='gpt-4o', context_window=16_000).manage(msgs).events])\n"
    )
    paths = {
        subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True, check=True).stdout
        for seed in ("1", "2", "3")
    }
    assert len(paths) == 1 and "/tool_outputs/" in paths.pop()


def test_an_option_given_in_both_spellings_is_refused_not_won_by_the_last() -> None:
    with pytest.raises(InvalidConfigError, match=r"'threshold_tokens' and 'thresholdTokens' are the same option \(offload.thresholdTokens\)"):
        Compactor(model="gpt-4o", offload={"threshold_tokens": 100, "thresholdTokens": 90_000})
    with pytest.raises(InvalidConfigError, match=r"'context_window' and 'contextWindow'"):
        Compactor({"context_window": 8_000}, contextWindow=16_000)
    # The same spelling in config and as a keyword, too (the keyword used to win silently).
    with pytest.raises(InvalidConfigError, match=r"'context_window' and 'context_window' are the same option \(contextWindow\), given twice"):
        Compactor({"context_window": 8_000}, context_window=16_000)
    assert Compactor(model="gpt-4o", offload={"threshold_tokens": 100}).model["contextWindow"] > 0


def test_save_state_to_a_path_of_its_own_whose_write_raises_is_store_failed_naming_it() -> None:
    class Refusing(MemoryStore):
        def write(self, path: str, text: str) -> None:
            raise OSError("EACCES")

    compactor = Compactor(model="gpt-4o", store=Refusing())
    with pytest.raises(CompactorError, match=r"^save_state: writing /elsewhere.json failed: EACCES$") as caught:
        compactor.save_state("/elsewhere.json")
    assert caught.value.code == "store_failed" and caught.value.details["path"] == "/elsewhere.json"


def test_an_on_event_that_raises_is_logged_every_event_is_told_and_the_call_returns(caplog: pytest.LogCaptureFixture) -> None:
    told: list = []

    def on_event(event: dict) -> None:
        told.append(event["strategy"])
        raise RuntimeError("UI bug")

    compactor = Compactor(model="gpt-4o", context_window=16_000, on_event=on_event)
    big = "\n".join(f"line {i}: {(i * 7919) % 10_007}" for i in range(4_000))
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c1", "toolName": "q", "input": {}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "toolName": "q", "output": {"type": "text", "value": big}}]},
    ]
    with caplog.at_level("ERROR", logger="context_compactor"):
        result = compactor.manage(messages)
    assert told == [e["strategy"] for e in result.events] and told
    assert result.messages[2] is not messages[2], "offloaded"
    assert len(caplog.records) == len(told) and "on_event raised (event: offload;" in caplog.records[0].getMessage()
    assert str(caplog.records[0].exc_info[1]) == "UI bug"


def test_local_store_write_if_is_a_compare_and_set_between_processes(tmp_path: "os.PathLike[str]") -> None:
    # Four processes add 1 to a counter 40 times each through write_if (a refused write reads
    # again): read-compare-write without the lock loses increments between processes.
    import subprocess
    import sys

    worker = (
        "import sys\n"
        "from context_compactor import LocalStore\n"
        "store = LocalStore(sys.argv[1])\n"
        "for _ in range(40):\n"
        "    while True:\n"
        "        now = store.read('/state/counter.json')\n"
        "        if store.write_if('/state/counter.json', now, str(int(now or 0) + 1)):\n"
        "            break\n"
    )
    workers = [subprocess.Popen([sys.executable, "-c", worker, str(tmp_path)]) for _ in range(4)]
    assert [w.wait(timeout=120) for w in workers] == [0, 0, 0, 0]
    store = LocalStore(tmp_path)
    assert store.read("/state/counter.json") == "160"
    assert sorted(os.listdir(os.path.join(tmp_path, "state"))) == ["counter.json"], "no lock or temp file left"
    assert store.write_if("/state/counter.json", "159", "stale") is False
    assert store.write_if("/state/new.json", None, "first") is True
    assert store.write_if("/state/new.json", None, "second") is False
    lock = os.path.join(tmp_path, "state", "new.json.cc-lock")
    open(lock, "w").close()
    os.utime(lock, (0, 0))  # left by a process that died: broken once stale
    assert store.write_if("/state/new.json", "first", "third") is True
    assert store.list("/state/") == ["/state/counter.json", "/state/new.json"]
