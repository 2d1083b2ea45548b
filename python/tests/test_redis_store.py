"""RedisStore and AsyncRedisStore on a real Redis server (Debian's redis-server on loopback, on a
free port, no persistence, stopped after; as js/test-helpers/redis.mjs starts it for the npm
package's tests): exact round trips (JSON-looking text, 5 MB, non-ASCII, lone surrogates), key
prefixes kept apart, glob characters in paths and prefixes, SCAN paging, the atomic
compare-and-set under racing threads, a Compactor offloading into Redis (sync and async), and
the typed ``store_failed`` error for a refused write (``maxmemory`` with ``noeviction``) and an
unreachable server. A missing redis-server is an error, never a skip: only a missing redis-py
skips (it is in requirements-test.txt)."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, Iterator, List

import pytest

redis = pytest.importorskip("redis", reason="redis-py is not installed (python/requirements-test.txt has it)")
import redis.asyncio  # noqa: E402

from context_compactor import (  # noqa: E402
    AsyncRedisStore,
    Compactor,
    CompactorError,
    InvalidConfigError,
    InvalidPathError,
    RedisStore,
    read_file,
)

from conftest import REPO  # noqa: E402
from test_compactor import huge_tool_result, slice_conversation  # noqa: E402


def redis_server_path() -> str:
    for candidate in ("redis-server", "/usr/bin/redis-server", "/usr/local/bin/redis-server"):
        found = shutil.which(candidate)
        if found:
            return found
    raise RuntimeError("redis-server is not installed: run `bash scripts/setup.sh` (it installs Debian's redis-server)")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A redis-server of our own, ready when made; ``stop()`` ends it and removes its dir."""

    def __init__(self, *extra: str) -> None:
        self.dir = tempfile.mkdtemp(prefix="cc-redis-")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self.log = os.path.join(self.dir, "redis.log")
        args = [redis_server_path(), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir]
        args += ["--save", "", "--appendonly", "no", "--protected-mode", "yes", *extra]
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited ({self.process.returncode}):\n{self.text_log()}")
            try:
                with redis.Redis(port=self.port, socket_connect_timeout=0.2) as probe:
                    if probe.ping():
                        break
            except redis.exceptions.ConnectionError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not start within 10 s:\n{self.text_log()}")
            time.sleep(0.02)

    def text_log(self) -> str:
        with open(self.log, encoding="utf-8", errors="replace") as f:
            return f.read()

    def client(self, **kwargs: Any) -> "redis.Redis":
        return redis.Redis(port=self.port, **kwargs)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    started = Server()
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def admin(server: Server) -> Iterator["redis.Redis"]:
    """A plain client on a flushed server: each test starts empty."""
    client = server.client()
    client.flushall()
    try:
        yield client
    finally:
        client.close()


TEXTS = {
    "empty": "",
    "number": "123",
    "keyword": "true",
    "null": "null",
    "json object": '{"a": [1, 2, {"b": null}], "c": "d"}',
    "json string": '"quoted"',
    "whitespace": "  \n\t ",
    "nul and controls": "a\x00b\x01\x7f\r\n",
    "non-ascii": "héllo wörld — 世界 🎉 ￿",
    "lone high": "before \ud800 after",
    "lone low": "\udfff",
    "surrogates as a pair of code points": "\ud83d\ude00",
    "reversed pair": "\ude00\ud83d",
}


def test_texts_round_trip_exactly_and_are_stored_as_utf8(admin: "redis.Redis", server: Server) -> None:
    store = RedisStore(server.client())
    for name, text in TEXTS.items():
        store.write(f"/t/{name}.txt", text)
    for name, text in TEXTS.items():
        back = store.read(f"/t/{name}.txt")
        assert back == text and type(back) is str, name
        # Byte for byte: UTF-8; a lone surrogate as its 3-byte form (surrogatepass).
        assert admin.get(f"context-compactor:/t/{name}.txt") == text.encode("utf-8", "surrogatepass"), name
    well_formed = [n for n, t in TEXTS.items() if t.encode("utf-8", "surrogatepass") == t.encode("utf-8", "replace")]
    for name in well_formed:
        assert admin.get(f"context-compactor:/t/{name}.txt").decode("utf-8") == TEXTS[name]
    # 5 MB, exactly (and 5 MB with a lone surrogate in it).
    big = ("the quick brown fox \x00 jumps — é 🎉 " * 200_000)[:5_000_000]
    store.write("/tool_outputs/big.txt", big)
    assert store.read("/tool_outputs/big.txt") == big
    assert admin.get("context-compactor:/tool_outputs/big.txt") == big.encode("utf-8")
    odd = big[:2_500_000] + "\udc80" + big[2_500_000:]
    store.write("/tool_outputs/odd.txt", odd)
    assert store.read("/tool_outputs/odd.txt") == odd
    # A client that decodes its replies reads the very same texts: values are read undecoded.
    decoding = RedisStore(server.client(decode_responses=True))
    for name, text in TEXTS.items():
        assert decoding.read(f"/t/{name}.txt") == text, name
    assert decoding.list("/t/") == store.list("/t/")
    decoding.write("/t/by decoding.txt", "\ud800x")
    assert store.read("/t/by decoding.txt") == "\ud800x"
    # Non-ASCII and a lone surrogate in a path.
    store.write("/t/ü/\ud800.txt", "x")
    assert store.read("/t/ü/\ud800.txt") == "x" and "/t/ü/\ud800.txt" in store.list("/t/ü")
    # Overwrite, and a path never written.
    store.write("/t/empty.txt", "now something")
    assert store.read("/t/empty.txt") == "now something"
    assert store.read("/nothing/here.txt") is None
    with pytest.raises(TypeError):
        store.write("/t/bytes.txt", b"bytes")  # type: ignore[arg-type]


def test_a_value_that_is_not_utf8_is_a_typed_error(admin: "redis.Redis", server: Server) -> None:
    store = RedisStore(server.client())
    admin.set("context-compactor:/foreign.bin", b"\xff\xfe\x00binary")
    with pytest.raises(CompactorError) as caught:
        store.read("/foreign.bin")
    assert caught.value.code == "store_failed" and caught.value.details == {"path": "/foreign.bin", "op": "read"}


def test_prefixes_keep_stores_apart_even_with_glob_characters(admin: "redis.Redis", server: Server) -> None:
    client = server.client()
    a = RedisStore(client, prefix="chat:1:")
    b = RedisStore(client, prefix="chat:2:")
    # `t[1]*:` would match `t1x:` keys as a glob; matched literally, it does not.
    globby = RedisStore(client, prefix="t[1]*:")
    plain = RedisStore(client, prefix="t1x:")
    for store, text in ((a, "one"), (b, "two"), (globby, "glob"), (plain, "plain")):
        store.write("/tool_outputs/x.txt", text)
        store.write("/conversation_history/c.md", text)
    assert (a.read("/tool_outputs/x.txt"), b.read("/tool_outputs/x.txt")) == ("one", "two")
    assert (globby.read("/tool_outputs/x.txt"), plain.read("/tool_outputs/x.txt")) == ("glob", "plain")
    for store in (a, b, globby, plain):
        assert store.list("/") == ["/conversation_history/c.md", "/tool_outputs/x.txt"]
    a.delete("/tool_outputs/x.txt")
    assert a.read("/tool_outputs/x.txt") is None and b.read("/tool_outputs/x.txt") == "two"
    assert a.list("/") == ["/conversation_history/c.md"]
    assert sorted(admin.keys("*")) == sorted(
        k.encode()
        for k in [
            "chat:1:/conversation_history/c.md",
            "chat:2:/conversation_history/c.md",
            "chat:2:/tool_outputs/x.txt",
            "t[1]*:/conversation_history/c.md",
            "t[1]*:/tool_outputs/x.txt",
            "t1x:/conversation_history/c.md",
            "t1x:/tool_outputs/x.txt",
        ]
    )
    # The default prefix, and the empty one (keys are the paths themselves).
    assert RedisStore(client).prefix == "context-compactor:"
    bare = RedisStore(client, prefix="")
    bare.write("/bare.txt", "b")
    assert admin.get("/bare.txt") == b"b" and bare.list("/") == ["/bare.txt"]


def test_list_matches_glob_characters_literally_pages_through_scan_and_skips_foreign_keys(admin: "redis.Redis", server: Server) -> None:
    store = RedisStore(server.client())
    paths = ["/a[1]*?/x", "/a[1]*?/sub/w", "/a1/y", "/ab/z", "/a[1]/v", "/a]/u", "/b/x"]
    for path in paths:
        store.write(path, path)
    assert store.list("/a[1]*?/") == ["/a[1]*?/sub/w", "/a[1]*?/x"]
    assert store.list("/a[1]*?") == ["/a[1]*?/sub/w", "/a[1]*?/x"]
    assert store.list("/a[") == ["/a[1]*?/sub/w", "/a[1]*?/x", "/a[1]/v"]
    assert store.list("/a[1]") == ["/a[1]*?/sub/w", "/a[1]*?/x", "/a[1]/v"]
    assert store.list("/a?") == [] and store.list("/a*") == []
    assert store.list("/a") == sorted(p for p in paths if p.startswith("/a"))
    assert store.list("/") == store.list("") == sorted(paths)
    # Keys under the prefix that no store path names are not listed.
    admin.set("context-compactor:junk", "j")
    admin.set("context-compactor:/../up", "j")
    admin.set(b"context-compactor:/bad\xff", "j")
    admin.set("other:/b/y", "j")
    assert store.list("/") == sorted(paths)
    # More keys than one SCAN reply holds: every one listed, once, sorted.
    with admin.pipeline(transaction=False) as pipe:
        for i in range(2_500):
            pipe.set(f"context-compactor:/many/f{i:04d}", str(i))
        pipe.execute()
    many = store.list("/many/")
    assert many == [f"/many/f{i:04d}" for i in range(2_500)]
    # Deleting: gone from read and list; deleting what is not there is no error.
    store.delete("/a[1]*?/x")
    store.delete("/a[1]*?/x")
    store.delete("/never/written")
    assert store.read("/a[1]*?/x") is None and store.list("/a[1]*?/") == ["/a[1]*?/sub/w"]


HOSTILE = ["relative.txt", "/a/../b", "/a/./b", "/a//b", "/a/", "/a\\b", "/a\0b", "/" + "x" * 256, 42]


def test_paths_are_checked_before_any_io(server: Server) -> None:
    store = RedisStore(server.client())
    for path in HOSTILE:
        for op in (
            lambda: store.read(path),
            lambda: store.write(path, "x"),
            lambda: store.delete(path),
            lambda: store.write_if(path, None, "x"),
        ):
            with pytest.raises(InvalidPathError):
                op()
    with pytest.raises(InvalidPathError):
        store.list("../")


def test_write_if_is_an_atomic_compare_and_set(admin: "redis.Redis", server: Server) -> None:
    store = RedisStore(server.client())
    assert store.conditional_writes == "atomic"
    assert store.write_if("/state.json", None, "one") is True  # absent -> written
    assert store.write_if("/state.json", None, "two") is False  # expected nothing, found one
    assert store.write_if("/state.json", "zero", "two") is False  # wrong expected: refused...
    assert store.read("/state.json") == "one"  # ...and unchanged
    assert store.write_if("/state.json", "one", '{"json": "two"}') is True  # right expected
    assert store.read("/state.json") == '{"json": "two"}'
    assert store.write_if("/absent.json", "something", "x") is False and store.read("/absent.json") is None
    assert store.write_if("/state.json", '{"json": "two"}', "\ud800 é") is True
    assert store.write_if("/state.json", "\ud800 é", "back") is True  # compared byte for byte
    assert store.write_if("/state.json", "back", "") is True and store.write_if("/state.json", "", "x") is True
    assert store.read("/state.json") == "x"
    # An empty text is a value, not absence.
    store.write("/empty", "")
    assert store.write_if("/empty", None, "x") is False and store.write_if("/empty", "", "x") is True

    # Of 20 racing saves over the same expected value exactly one lands.
    store.write("/race.json", "base")
    results: List[bool] = [False] * 20
    barrier = threading.Barrier(20)

    def save(i: int) -> None:
        barrier.wait()
        results[i] = store.write_if("/race.json", "base", f"racer {i}")

    threads = [threading.Thread(target=save, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(results) == 1
    assert store.read("/race.json") == f"racer {results.index(True)}"


def test_racing_read_modify_write_if_loops_count_exactly(server: Server, admin: "redis.Redis") -> None:
    per_thread, threads_n = 200, 4
    refused = [0] * threads_n

    def work(n: int) -> None:
        store = RedisStore(server.client())  # each its own client, as separate processes would be
        done = 0
        while done < per_thread:
            current = store.read("/counter")
            nxt = str(int(current or "0") + 1)
            if store.write_if("/counter", current, nxt):
                done += 1
            else:
                refused[n] += 1

    threads = [threading.Thread(target=work, args=(n,)) for n in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert RedisStore(server.client()).read("/counter") == str(per_thread * threads_n)
    assert sum(refused) > 0, "the threads never raced: the test proves nothing"


def test_a_compactor_offloads_into_redis_byte_for_byte(admin: "redis.Redis", server: Server) -> None:
    output = huge_tool_result(100_000)
    store = RedisStore(server.client(), prefix="chat:42:")
    compactor = Compactor(model="gpt-4o", context_window=16_000, store=store)
    messages = slice_conversation(output)
    result = compactor.manage(messages)
    [event] = result.events
    assert event["status"] == "applied" and event["strategy"] == "offload"
    path = event["path"]
    assert path.startswith("/tool_outputs/")
    assert admin.get(f"chat:42:{path}") == output.encode("utf-8")
    assert store.list("/tool_outputs/") == [path]
    assert path in result.messages[3]["content"][0]["output"]["value"]
    assert messages[3]["content"][0]["output"]["value"] == output
    # Another process (another client, another compactor) reads it back with the recovery tools.
    other = RedisStore(server.client(decode_responses=True), prefix="chat:42:")
    page = read_file(other, path, offset=10, limit=2)
    assert page.splitlines()[0].split("\t")[1] == output.split("\n")[10]
    again = Compactor(model="gpt-4o", context_window=16_000, store=other).manage(messages)
    assert again.messages == result.messages
    assert compactor.manage(result.messages).events == []
    # JSON data offloaded at return time is stored as JSON text.
    data = {"rows": [{"n": i, "text": f"row {i} of the table"} for i in range(3_000)]}
    preview = compactor.offload_tool_output("search", "c2", data)
    assert isinstance(preview, str) and preview.startswith("[Tool output offloaded:")
    [json_path] = [p for p in store.list("/tool_outputs/") if p != path]
    import json

    assert json.loads(store.read(json_path) or "") == data


def test_the_async_store_through_amanage(admin: "redis.Redis", server: Server) -> None:
    output = huge_tool_result(100_000)

    async def run() -> Dict[str, Any]:
        client = redis.asyncio.Redis(port=server.port)
        try:
            store = AsyncRedisStore(client, prefix="async:")
            for name, text in TEXTS.items():
                await store.write(f"/t/{name}", text)
            assert [await store.read(f"/t/{name}") for name in TEXTS] == list(TEXTS.values())
            assert await store.list("/t/") == sorted(f"/t/{name}" for name in TEXTS)
            await store.delete("/t/empty")
            assert await store.read("/t/empty") is None
            assert await store.write_if("/s", None, "1") is True
            assert await store.write_if("/s", "0", "2") is False and await store.read("/s") == "1"
            assert await store.write_if("/s", "1", "2") is True
            # Concurrent compare-and-set loops on one event loop (and one client pool).
            async def bump() -> None:
                for _ in range(50):
                    while True:
                        current = await store.read("/n")
                        if await store.write_if("/n", current, str(int(current or "0") + 1)):
                            break

            await asyncio.gather(*(bump() for _ in range(4)))
            assert await store.read("/n") == "200"
            compactor = Compactor(model="gpt-4o", context_window=16_000, store=store)
            result = await compactor.amanage(slice_conversation(output))
            [event] = result.events
            return {"event": event, "listed": await store.list("/tool_outputs/")}
        finally:
            await client.aclose()

    outcome = asyncio.run(run())
    event = outcome["event"]
    assert event["status"] == "applied" and outcome["listed"] == [event["path"]]
    assert admin.get(f"async:{event['path']}") == output.encode("utf-8")
    # The async store's keys are the sync store's: one reads what the other wrote.
    assert RedisStore(server.client(), prefix="async:").read(event["path"]) == output


def test_the_async_store_from_sync_code_keeps_its_connections_on_one_loop(admin: "redis.Redis", server: Server) -> None:
    """A sync ``manage`` (and the recovery tools) over ``AsyncRedisStore``, as a sync LangChain
    agent uses it: every awaited call runs on the one loop of the sync API. A loop per call left
    redis.asyncio's pool on a closed one: offloads said "Event loop is closed" though their keys
    had landed, and ``ls`` answered the model the same."""
    store = AsyncRedisStore(redis.asyncio.Redis(port=server.port), prefix="sync-async:")
    compactor = Compactor(model="gpt-4o", context_window=16_000, store=store, state_path="/state/c.json")
    outputs = [huge_tool_result(40_000 + 5_000 * i) for i in range(3)]
    for output in outputs:
        result = compactor.manage(slice_conversation(output))
        [event] = result.events
        assert event["status"] == "applied", event
        assert admin.get(f"sync-async:{event['path']}") == output.encode("utf-8")
    listed = compactor.tools()["ls"](path="/tool_outputs/")
    assert "Error" not in listed and len(listed.splitlines()) == 3, listed
    assert admin.get("sync-async:/state/c.json") is not None


def test_a_refused_write_out_of_memory_is_a_typed_error_and_the_offload_fails() -> None:
    small = Server("--maxmemory", "1mb", "--maxmemory-policy", "noeviction")
    try:
        client = small.client()
        store = RedisStore(client)
        huge = "y" * 8_000_000
        with pytest.raises(CompactorError) as caught:
            store.write("/tool_outputs/huge.txt", huge)
        error = caught.value
        assert error.code == "store_failed" and error.details == {"path": "/tool_outputs/huge.txt", "op": "write"}
        assert error.message.startswith('Redis write of "/tool_outputs/huge.txt" failed: OutOfMemoryError: '), error.message
        assert "maxmemory" in error.message
        assert isinstance(error.__cause__, redis.exceptions.OutOfMemoryError)
        with pytest.raises(CompactorError) as caught:
            store.write_if("/tool_outputs/huge.txt", None, huge)
        assert caught.value.code == "store_failed" and caught.value.details["op"] == "write_if"

        # Through a compactor: the offload fails, the output stays in the conversation.
        output = huge_tool_result(100_000)
        events: List[Dict[str, Any]] = []
        compactor = Compactor(model="gpt-4o", context_window=16_000, store=store, on_event=events.append)
        messages = slice_conversation(output)
        result = compactor.manage(messages)
        offloads = [e for e in result.events if e["strategy"] == "offload"]
        assert offloads and all(e["status"] == "failed" for e in offloads), result.events
        assert any("OutOfMemoryError" in (e.get("error") or "") for e in offloads), offloads
        assert output in [p["output"]["value"] for m in result.messages if isinstance(m["content"], list) for p in m["content"] if p["type"] == "tool-result"]
        assert compactor.offload_tool_output("search", "c9", output) is output

        # Nothing half-written once the server has room again.
        client.config_set("maxmemory", "0")
        assert store.read("/tool_outputs/huge.txt") is None and store.list("/") == []
        client.close()
    finally:
        small.stop()


def test_an_unreachable_server_is_a_typed_error_naming_the_op_and_path() -> None:
    nobody = free_port()
    store = RedisStore(redis.Redis(port=nobody, socket_connect_timeout=1, retry=None))
    for op, call in (
        ("read", lambda: store.read("/a.txt")),
        ("write", lambda: store.write("/a.txt", "x")),
        ("list", lambda: store.list("/a")),
        ("delete", lambda: store.delete("/a.txt")),
        ("write_if", lambda: store.write_if("/a.txt", None, "x")),
    ):
        with pytest.raises(CompactorError) as caught:
            call()
        assert caught.value.code == "store_failed", op
        assert caught.value.details == {"path": "/a" if op == "list" else "/a.txt", "op": op}
        assert isinstance(caught.value.__cause__, redis.exceptions.ConnectionError)
        assert str(nobody) in caught.value.message

    async def unreachable() -> CompactorError:
        client = redis.asyncio.Redis(port=nobody, socket_connect_timeout=1, retry=None)
        try:
            with pytest.raises(CompactorError) as caught:
                await AsyncRedisStore(client).write("/b.txt", "x")
            return caught.value
        finally:
            await client.aclose()

    error = asyncio.run(unreachable())
    assert error.code == "store_failed" and error.details == {"path": "/b.txt", "op": "write"}


def test_configuration_errors(server: Server) -> None:
    with pytest.raises(InvalidConfigError, match="redis-py client"):
        RedisStore(None)
    with pytest.raises(InvalidConfigError, match="redis-py client"):
        RedisStore("redis://localhost")
    with pytest.raises(InvalidConfigError, match="use AsyncRedisStore"):
        RedisStore(redis.asyncio.Redis(port=server.port))
    with pytest.raises(InvalidConfigError, match="use RedisStore"):
        AsyncRedisStore(server.client())
    with pytest.raises(InvalidConfigError, match="prefix"):
        RedisStore(server.client(), prefix=b"bytes")  # type: ignore[arg-type]
    from_url = RedisStore.from_url(server.url, prefix="u:")
    from_url.write("/x", "y")
    assert from_url.read("/x") == "y" and from_url.client.get("u:/x") == b"y"
    from_url.client.close()
    assert isinstance(AsyncRedisStore.from_url(server.url), AsyncRedisStore)


def test_redis_is_optional_imported_only_when_a_redis_store_is_made(monkeypatch: pytest.MonkeyPatch) -> None:
    code = "import sys, context_compactor; print('redis' in sys.modules)"
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python", "src"))
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True).stdout
    assert out.strip() == "False"
    monkeypatch.setitem(sys.modules, "redis", None)
    with pytest.raises(InvalidConfigError, match=r"pip install 'context-compactor\[redis\]'"):
        RedisStore(object())
