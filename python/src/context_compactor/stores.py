"""Where offloaded content goes. Paths are absolute POSIX-style (``/tool_outputs/x.txt``) and
checked the same way as the npm package's (``checkPath``): no ``.``/``..`` segments, NUL,
backslash, empty segment, over-long path or segment."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import threading
import time
import uuid
from typing import Any, Dict, List, Mapping, Optional, Protocol, Tuple, Type, cast, runtime_checkable

from ._threads import call_within, run_awaited
from .errors import CompactorError, InvalidConfigError, InvalidPathError

#: Longest path a store accepts (characters; generous for content hashes).
MAX_PATH_LENGTH = 1024
#: Longest path segment, in UTF-8 bytes: what file systems (ext4, APFS, NTFS) accept.
MAX_SEGMENT_BYTES = 255


@runtime_checkable
class FileStore(Protocol):
    """What a store offers. ``write`` must be durable when it returns: the compactor removes
    content from the conversation only after the write succeeded. Methods may also be
    coroutines (``async def``) when the store is used through ``amanage``/``acompact``."""

    def read(self, path: str) -> Optional[str]: ...

    def write(self, path: str, text: str) -> None: ...

    def list(self, prefix: str) -> List[str]:
        """Paths under ``prefix``, sorted."""
        ...

    def delete(self, path: str) -> None: ...


def check_path(path: object, field: Optional[str] = None) -> str:
    """``path`` if it is a safe store path, else :class:`InvalidPathError` (naming the option
    ``field`` it came from, when it did)."""

    def fail(why: str) -> InvalidPathError:
        # The path as the npm package writes it (JSON.stringify), so both say the same.
        shown = json.dumps(path, ensure_ascii=False) if isinstance(path, str) else repr(path)
        where = f"{field}: " if field else ""
        return InvalidPathError("invalid_path", f"{where}invalid store path {shown}: {why}", {"path": str(path), **({"field": field} if field else {})})

    if not isinstance(path, str):
        raise fail("not a string")
    if not path.startswith("/"):
        raise fail('must be absolute (start with "/")')
    if "\0" in path:
        raise fail("contains a NUL character")
    if len(path) > MAX_PATH_LENGTH:
        raise fail(f"longer than {MAX_PATH_LENGTH} characters")
    segments = path[1:].split("/")
    if any(s in (".", "..") for s in segments):
        raise fail('contains "." or ".." segments')
    if "\\" in path:
        raise fail("contains a backslash")
    if any(s == "" for s in segments):
        raise fail('has an empty segment (a trailing or doubled "/")')
    if any(len(s.encode("utf-8", "surrogatepass")) > MAX_SEGMENT_BYTES for s in segments):
        raise fail(f"has a segment longer than {MAX_SEGMENT_BYTES} bytes")
    return path


def check_prefix(prefix: object) -> str:
    """A ``list`` prefix: absolute, checked like a path; it may end with ``/``. The empty
    prefix means everything and comes back as ``/``."""
    if prefix in ("", "/"):
        return "/"
    if not isinstance(prefix, str):
        return check_path(prefix)
    check_path(prefix[:-1] if prefix.endswith("/") else prefix)
    return prefix


class MemoryStore:
    """An in-memory store, per process."""

    def __init__(self) -> None:
        self._files: Dict[str, str] = {}
        self._lock = threading.Lock()

    def read(self, path: str) -> Optional[str]:
        return self._files.get(check_path(path))

    def write(self, path: str, text: str) -> None:
        if not isinstance(text, str):
            raise TypeError(f"MemoryStore.write({path}): text must be a str")
        self._files[check_path(path)] = text

    def list(self, prefix: str) -> List[str]:
        checked = check_prefix(prefix)
        return sorted(p for p in self._files if p.startswith(checked))

    def delete(self, path: str) -> None:
        self._files.pop(check_path(path), None)

    def write_if(self, path: str, expected: Optional[str], text: str) -> bool:
        """Writes ``text`` only while ``path`` holds ``expected`` (None: nothing), atomically
        (compare-and-set, as summary leases need between threads)."""
        if not isinstance(text, str):
            raise TypeError(f"MemoryStore.write_if({path}): text must be a str")
        with self._lock:
            checked = check_path(path)
            if self._files.get(checked) != expected:
                return False
            self._files[checked] = text
            return True

    def __len__(self) -> int:
        return len(self._files)


_TEMP_SUFFIX = ".cc-tmp"
#: Beside a file while a ``write_if`` compares and writes it.
_LOCK_SUFFIX = ".cc-lock"
#: A lock older than this is a holder that died (a compare and write takes milliseconds).
_STALE_LOCK_SECONDS = 10.0


class LocalStore:
    """A store in a directory on disk. Writes are atomic (a temp file, flushed with ``fsync``,
    then renamed), so a crash never leaves half a file. Every path stays inside ``root``
    twice over: lexically (:func:`check_path`) and physically (the real path of every file and
    directory touched must be under the root's real path, so a symlink planted inside the root
    cannot lead out of it). Text is stored as UTF-8."""

    def __init__(self, root: "str | os.PathLike[str]") -> None:
        if not root:
            raise CompactorError(
                "invalid_config", "a file store needs a root directory", {"field": "root"}
            )
        self.root = os.path.abspath(os.fspath(root))
        self._real_root: Optional[str] = None

    def read(self, path: str) -> Optional[str]:
        file = self._native(path)
        if not os.path.lexists(file):
            return None
        self._confined(os.path.realpath(file), path)
        try:
            with open(file, "r", encoding="utf-8", newline="") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def write(self, path: str, text: str) -> None:
        if not isinstance(text, str):
            raise TypeError(f"LocalStore.write({path}): text must be a str")
        file = self._native(path)
        directory = os.path.dirname(file)
        self._root()
        os.makedirs(directory, exist_ok=True)
        self._confined(os.path.realpath(directory), path)
        temp = f"{file}.{uuid.uuid4().hex}{_TEMP_SUFFIX}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            # A symlink planted at `file` is replaced itself, never written through.
            os.replace(temp, file)
        except BaseException:
            try:
                os.unlink(temp)
            except FileNotFoundError:
                pass
            raise

    def list(self, prefix: str) -> List[str]:
        prefix = check_prefix(prefix)
        base = prefix[: prefix.rfind("/") + 1]
        out: List[str] = []

        def walk(store_dir: str) -> None:
            native = self.root + store_dir.rstrip("/").replace("/", os.sep)
            if not os.path.isdir(native):
                return
            self._confined(os.path.realpath(native), store_dir)
            with os.scandir(native) as entries:
                for entry in entries:
                    path = store_dir + entry.name
                    if entry.is_dir():
                        if (path + "/").startswith(prefix) or prefix.startswith(path + "/"):
                            walk(path + "/")
                    elif not entry.name.endswith((_TEMP_SUFFIX, _LOCK_SUFFIX)) and path.startswith(prefix):
                        out.append(path)

        walk(base)
        return sorted(out)

    def delete(self, path: str) -> None:
        file = self._native(path)
        if not os.path.lexists(file):
            return
        self._confined(os.path.realpath(file), path)
        try:
            os.unlink(file)
        except FileNotFoundError:
            pass

    def write_if(self, path: str, expected: Optional[str], text: str) -> bool:
        """Writes ``text`` only while ``path`` holds ``expected`` (None: nothing there),
        atomically between processes that share the directory (the npm ``NodeFsStore``'s
        ``writeIf``): the compare and the write run under a lock file beside it
        (``<file>.cc-lock``, made with ``O_EXCL``), so the state's conditional saves and the
        summary leases hold across workers on one disk. A lock left by a process that died is
        broken after 10 s; one not taken within that either raises ``store_failed``."""
        if not isinstance(text, str):
            raise TypeError(f"LocalStore.write_if({path}): text must be a str")
        file = self._native(path)
        self._root()
        os.makedirs(os.path.dirname(file), exist_ok=True)
        self._confined(os.path.realpath(os.path.dirname(file)), path)
        lock, waited = file + _LOCK_SUFFIX, 0.0
        while True:
            try:
                os.close(os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
                break
            except FileExistsError:
                try:
                    stale = time.time() - os.stat(lock).st_mtime > _STALE_LOCK_SECONDS
                except FileNotFoundError:
                    continue
                if stale:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(lock)
                elif waited > _STALE_LOCK_SECONDS:
                    raise CompactorError("store_failed", f"LocalStore.write_if({path}): {lock} held for over {_STALE_LOCK_SECONDS:g} s", {"path": path, "op": "write_if"}) from None
                else:
                    time.sleep(0.01)
                    waited += 0.01
        try:
            if self.read(path) != expected:
                return False
            self.write(path, text)
            return True
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(lock)

    def _native(self, path: str) -> str:
        return self.root + check_path(path).replace("/", os.sep)

    def _root(self) -> str:
        if self._real_root is None:
            os.makedirs(self.root, exist_ok=True)
            self._real_root = os.path.realpath(self.root)
        return self._real_root

    def _confined(self, real: str, path: str) -> None:
        root = self._root()
        if real != root and not real.startswith(root + os.sep):
            raise InvalidPathError(
                "invalid_path",
                f"store path {path!r} leads outside the store's root (through a symlink)",
                {"path": path},
            )


# ---------------------------------------------------------------------------------------------
# Redis (redis-py, an optional dependency: ``pip install 'context-compactor[redis]'``)

# Replaces the value only while it is still the one expected (ARGV[1] '0': no value at all).
# One script, so the compare and the set are one atomic step on the server.
_REDIS_WRITE_IF = """local cur = redis.call('GET', KEYS[1])
if ARGV[1] == '0' then
  if cur then return 0 end
elseif cur ~= ARGV[2] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[3])
return 1"""

# Redis glob metacharacters (SCAN MATCH): a key prefix holding them is matched literally.
_GLOB = {ord(c): b"\\" + c.encode() for c in "\\*?[]"}


def _redis(what: str) -> Any:
    """The ``redis`` package, imported when a Redis store is made (it is optional)."""
    try:
        import redis  # type: ignore[import-not-found, unused-ignore]
        import redis.client  # type: ignore[import-not-found, unused-ignore]  # NEVER_DECODE
    except ImportError as e:
        raise InvalidConfigError(
            "invalid_config",
            f"{what} needs the redis package (redis-py): pip install 'context-compactor[redis]'",
            {"field": "client"},
        ) from e
    return redis


class _RedisKeys:
    """What the sync and async Redis stores share: keys, values, errors. No IO."""

    _async = False

    def __init__(self, client: Any, prefix: str) -> None:
        name = type(self).__name__
        self._redis = _redis(name)
        if not isinstance(prefix, str):
            raise InvalidConfigError(
                "invalid_config", f"{name}: prefix must be a str, got {type(prefix).__name__}", {"field": "prefix"}
            )
        if client is None or not callable(getattr(client, "execute_command", None)) or not callable(getattr(client, "register_script", None)):
            raise InvalidConfigError(
                "invalid_config",
                f"{name} needs a redis-py client ({'redis.asyncio.Redis' if self._async else 'redis.Redis'}), got {type(client).__name__}",
                {"field": "client"},
            )
        if inspect.iscoroutinefunction(client.execute_command) != self._async:
            other = "RedisStore" if self._async else "AsyncRedisStore"
            kind = "a blocking" if self._async else "an asyncio"
            raise InvalidConfigError(
                "invalid_config", f"{name} got {kind} redis client ({type(client).__name__}): use {other}", {"field": "client"}
            )
        self.client = client
        self.prefix = prefix
        self._prefix = prefix.encode("utf-8", "surrogatepass")
        self._script = client.register_script(_REDIS_WRITE_IF)
        # Replies undecoded whatever the client's `decode_responses`: values are decoded here.
        self._raw: Dict[str, Any] = {self._redis.client.NEVER_DECODE: []}

    #: ``write_if`` is one Lua script: atomic.
    conditional_writes = "atomic"

    def _key(self, path: str) -> bytes:
        return self._prefix + check_path(path).encode("utf-8", "surrogatepass")

    def _value(self, path: str, text: object, op: str = "write", name: str = "text") -> bytes:
        if not isinstance(text, str):
            raise TypeError(f"{type(self).__name__}.{op}({path}): {name} must be a str, got {type(text).__name__}")
        return text.encode("utf-8", "surrogatepass")

    def _text(self, path: str, value: object) -> Optional[str]:
        if value is None:
            return None
        if isinstance(value, str):
            return value
        if isinstance(value, (bytes, bytearray, memoryview)):
            try:
                return bytes(value).decode("utf-8", "surrogatepass")
            except UnicodeDecodeError as e:
                raise CompactorError(
                    "store_failed",
                    f"Redis key for store path {json.dumps(path, ensure_ascii=False)} holds bytes that are not UTF-8 (not written by this store): {e}",
                    {"path": path, "op": "read"},
                ) from e
        raise CompactorError(
            "store_failed", f"Redis read of {json.dumps(path, ensure_ascii=False)}: unexpected reply {type(value).__name__}", {"path": path, "op": "read"}
        )

    def _pattern(self, prefix: str) -> bytes:
        """The SCAN pattern of every key under ``prefix`` (glob characters escaped)."""
        literal = self._prefix + prefix.encode("utf-8", "surrogatepass")
        return b"".join(_GLOB.get(b, bytes([b])) for b in literal) + b"*"

    def _paths(self, keys: "set[Any]", prefix: str) -> List[str]:
        out = []
        for key in keys:
            key = key.encode("utf-8", "surrogatepass") if isinstance(key, str) else bytes(key)
            if not key.startswith(self._prefix):
                continue
            try:
                path = check_path(key[len(self._prefix) :].decode("utf-8", "surrogatepass"))
            except (UnicodeDecodeError, InvalidPathError):
                continue  # a key under the prefix that this store did not write
            if path.startswith(prefix):
                out.append(path)
        return sorted(out)

    def _failed(self, op: str, path: str, error: BaseException) -> CompactorError:
        reason = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        typed = CompactorError(
            "store_failed",
            f"Redis {op} of {json.dumps(path, ensure_ascii=False)} failed: {reason}",
            {"path": path, "op": op},
        )
        typed.__cause__ = error
        return typed

    def _errors(self) -> Tuple[Type[BaseException], ...]:
        return (self._redis.exceptions.RedisError, OSError)


class RedisStore(_RedisKeys):
    """A store in Redis, shared by every process that reaches the server: each path is one
    string key, ``prefix + path`` (``context-compactor:/tool_outputs/x.txt``); give each
    conversation or tenant its own ``prefix``.

    ``client``: a ``redis.Redis`` (any ``decode_responses``: values are read undecoded and
    decoded here). A text is stored as its UTF-8 bytes, byte for byte; a ``str`` holding lone
    surrogates (which UTF-8 cannot carry) stores each as its 3-byte form (Python's
    ``surrogatepass``), so it reads back exactly here, and as U+FFFD in a reader that decodes
    strict UTF-8. ``list`` walks the keys with ``SCAN`` (never ``KEYS``), its prefix matched
    literally. ``write_if`` is an atomic compare-and-set (one Lua script). What Redis refuses
    or cannot answer (a connection failure, ``OOM`` under ``maxmemory``) is a
    :class:`CompactorError` ``store_failed`` naming the path and the operation
    (``details["path"]``, ``details["op"]``; the redis-py error is its ``__cause__``).

    >>> store = RedisStore(redis.Redis.from_url("redis://localhost:6379/0"), prefix="chat:42:")  # doctest: +SKIP
    """

    def __init__(self, client: Any, *, prefix: str = "context-compactor:") -> None:
        super().__init__(client, prefix)

    @classmethod
    def from_url(cls, url: str, *, prefix: str = "context-compactor:", **kwargs: Any) -> "RedisStore":
        """A store over a new ``redis.Redis.from_url(url, **kwargs)`` (``store.client``)."""
        return cls(_redis(cls.__name__).Redis.from_url(url, **kwargs), prefix=prefix)

    def read(self, path: str) -> Optional[str]:
        key = self._key(path)
        try:
            value = self.client.execute_command("GET", key, **self._raw)
        except self._errors() as e:
            raise self._failed("read", path, e) from e
        return self._text(path, value)

    def write(self, path: str, text: str) -> None:
        key, value = self._key(path), self._value(path, text)
        try:
            self.client.execute_command("SET", key, value)
        except self._errors() as e:
            raise self._failed("write", path, e) from e

    def list(self, prefix: str) -> List[str]:
        prefix = check_prefix(prefix)
        pattern, keys, cursor = self._pattern(prefix), set(), 0
        try:
            while True:
                cursor, page = self.client.execute_command("SCAN", cursor, "MATCH", pattern, "COUNT", 1000, **self._raw)
                keys.update(page)
                if int(cursor) == 0:
                    break
        except self._errors() as e:
            raise self._failed("list", prefix, e) from e
        return self._paths(keys, prefix)

    def delete(self, path: str) -> None:
        key = self._key(path)
        try:
            self.client.execute_command("DEL", key)
        except self._errors() as e:
            raise self._failed("delete", path, e) from e

    def write_if(self, path: str, expected: Optional[str], text: str) -> bool:
        """Writes ``text`` only while ``path`` still holds ``expected`` (None: nothing there;
        compared byte for byte), atomically; says whether it did. A refused write changes
        nothing. A client that retries on a dropped connection (redis-py does by default) may
        re-send the script after it ran: the second run finds ``text`` and says False, so a
        caller that lost a save reads the path back (holding its own unique ``text``, the write
        was its own), as the npm package's ``conditionalWrite`` does."""
        key, value = self._key(path), self._value(path, text, "write_if")
        args = [b"0", b"", value] if expected is None else [b"1", self._value(path, expected, "write_if", "expected"), value]
        try:
            return int(self._script(keys=[key], args=args)) == 1
        except self._errors() as e:
            raise self._failed("write_if", path, e) from e


class AsyncRedisStore(_RedisKeys):
    """:class:`RedisStore` over a ``redis.asyncio.Redis``: the same keys, values and errors,
    every method a coroutine (for ``amanage``/``acompact`` and async recovery tools)."""

    _async = True

    def __init__(self, client: Any, *, prefix: str = "context-compactor:") -> None:
        super().__init__(client, prefix)

    @classmethod
    def from_url(cls, url: str, *, prefix: str = "context-compactor:", **kwargs: Any) -> "AsyncRedisStore":
        """A store over a new ``redis.asyncio.Redis.from_url(url, **kwargs)`` (``store.client``)."""
        _redis(cls.__name__)
        import redis.asyncio  # type: ignore[import-not-found, unused-ignore]

        return cls(redis.asyncio.Redis.from_url(url, **kwargs), prefix=prefix)

    async def read(self, path: str) -> Optional[str]:
        key = self._key(path)
        try:
            value = await self.client.execute_command("GET", key, **self._raw)
        except self._errors() as e:
            raise self._failed("read", path, e) from e
        return self._text(path, value)

    async def write(self, path: str, text: str) -> None:
        key, value = self._key(path), self._value(path, text)
        try:
            await self.client.execute_command("SET", key, value)
        except self._errors() as e:
            raise self._failed("write", path, e) from e

    async def list(self, prefix: str) -> List[str]:
        prefix = check_prefix(prefix)
        pattern, keys, cursor = self._pattern(prefix), set(), 0
        try:
            while True:
                cursor, page = await self.client.execute_command("SCAN", cursor, "MATCH", pattern, "COUNT", 1000, **self._raw)
                keys.update(page)
                if int(cursor) == 0:
                    break
        except self._errors() as e:
            raise self._failed("list", prefix, e) from e
        return self._paths(keys, prefix)

    async def delete(self, path: str) -> None:
        key = self._key(path)
        try:
            await self.client.execute_command("DEL", key)
        except self._errors() as e:
            raise self._failed("delete", path, e) from e

    async def write_if(self, path: str, expected: Optional[str], text: str) -> bool:
        """:meth:`RedisStore.write_if`, awaited."""
        key, value = self._key(path), self._value(path, text, "write_if")
        args = [b"0", b"", value] if expected is None else [b"1", self._value(path, expected, "write_if", "expected"), value]
        try:
            return int(await self._script(keys=[key], args=args)) == 1
        except self._errors() as e:
            raise self._failed("write_if", path, e) from e


class TimedStore:
    """``store`` with a bounded wait on every call (the npm package's ``withTimeout``): a call
    (read, write, list, delete, write_if) that has not answered within ``seconds`` raises
    :class:`CompactorError` ``store_failed`` (``details``: ``path``, ``op``, ``timeoutMs``), as a
    failed call does. A synchronous store's call runs on a thread of its own (a daemon, in the
    caller's context) and is left to finish (its late result dropped); an async store's call is
    awaited with ``asyncio.wait_for`` (cancelled when it times out).
    ``write_if`` is there while ``store`` has it."""

    def __init__(self, store: FileStore, seconds: float) -> None:
        self.store = store
        self.seconds = seconds

    def _bounded(self, op: str, path: str, *args: Any) -> Any:
        method = getattr(self.store, op)
        if inspect.iscoroutinefunction(method):
            return self._awaited(op, path, method(*args))
        finished, value = call_within(self.seconds, f"store {op}", method, *args)
        if not finished:
            raise self._timeout(op, path)
        return value

    async def _awaited(self, op: str, path: str, call: Any) -> Any:
        # Not wait_for: a store's own TimeoutError must stay the store's error.
        task = asyncio.ensure_future(call)
        done, _ = await asyncio.wait({task}, timeout=self.seconds)
        if not done:
            task.cancel()
            raise self._timeout(op, path)
        return task.result()

    def within(self, seconds: float) -> "TimedStore":
        """This store with calls bounded by ``seconds`` when that is sooner (a summary lease's
        calls: what is left of its wait)."""
        return TimedStore(self.store, min(self.seconds, seconds))

    def _timeout(self, op: str, path: str) -> CompactorError:
        return CompactorError(
            "store_failed",
            f"store {op} of {json.dumps(path, ensure_ascii=False)} did not answer within {self.seconds:g} s (store_timeout)",
            {"path": path, "op": op, "timeoutMs": self.seconds * 1000},
        )

    def read(self, path: str) -> Any:
        return self._bounded("read", path, path)

    def write(self, path: str, text: str) -> Any:
        return self._bounded("write", path, path, text)

    def list(self, prefix: str) -> Any:
        return self._bounded("list", prefix, prefix)

    def delete(self, path: str) -> Any:
        return self._bounded("delete", path, path)

    def __getattr__(self, name: str) -> Any:
        # ``write_if`` only while the store has it (``effects.write_if`` looks for it).
        if name == "write_if" and callable(getattr(self.store, "write_if", None)):
            return lambda path, expected, text: self._bounded("write_if", path, path, expected, text)
        raise AttributeError(name)


# ---------------------------------------------------------------------------------------------
# Routing paths to stores (the npm package's ``CompositeStore``), and the long-term memory file

#: Where long-term memory lives, and the file ``system_prompt`` loads (the npm package's
#: ``MEMORIES_PREFIX`` / ``AGENTS_MD_PATH``; ``compactor.py`` reads the same paths).
MEMORIES_PREFIX = "/memories/"
AGENTS_MD_PATH = "/memories/AGENTS.md"

_STORE_METHODS = ("read", "write", "list", "delete")


def _is_async(store: object) -> bool:
    """Whether ``store`` is an async store: any of its methods a coroutine function (a
    :class:`TimedStore` is as async as the store it bounds)."""
    if isinstance(store, TimedStore):
        return _is_async(store.store)
    return any(inspect.iscoroutinefunction(getattr(store, m, None)) for m in (*_STORE_METHODS, "write_if"))


class CompositeStore:
    """A store that sends each path to the store of its longest matching route prefix, or to
    ``fallback`` (the npm package's ``CompositeStore``); paths are passed on unchanged. Route
    prefixes start and end with ``/``. ``list`` merges the paths under a prefix from every
    store that can hold them, each path from the store that owns it; ``write_if`` is the owning
    store's, read-compare-write where it has none.

    >>> store = CompositeStore(MemoryStore(), {"/memories/": LocalStore(".memories")})  # doctest: +SKIP

    Made of synchronous stores only, it is a synchronous store. With an async store in it (one
    whose methods are ``async def``, such as :class:`AsyncRedisStore`), ``CompositeStore(...)``
    is an :class:`AsyncCompositeStore`: every method a coroutine that awaits the async stores and
    calls the others, so the compactor, which tells an async store by its coroutine functions
    (``TimedStore``), treats it as one (``amanage``/``acompact``).

    Why ``__new__`` picks the variant rather than one class whose methods return an awaitable
    or a value as the stores answer: a Python store is either sync or async by its methods'
    kind, as everywhere in this package (``RedisStore`` / ``AsyncRedisStore``), and callers
    (``TimedStore``, the recovery tools, users) test that kind before calling; a method whose
    kind depended on the stores routed to could not be told apart. The async variant is a
    subclass, so ``isinstance(store, CompositeStore)`` holds for both, and may also be made
    directly (``AsyncCompositeStore(...)``: async even over sync stores)."""

    def __new__(cls, fallback: FileStore, routes: Optional[Mapping[str, FileStore]] = None) -> "CompositeStore":
        if cls is CompositeStore and (
            _is_async(fallback) or (isinstance(routes, Mapping) and any(_is_async(s) for s in routes.values()))
        ):
            cls = AsyncCompositeStore
        return super().__new__(cls)

    def __init__(self, fallback: FileStore, routes: Optional[Mapping[str, FileStore]] = None) -> None:
        if routes is None:
            routes = {}
        name = type(self).__name__
        if not isinstance(routes, Mapping):
            raise InvalidConfigError(
                "invalid_config", f"{name}: routes must be a mapping of path prefix to store, got {type(routes).__name__}", {"field": "routes"}
            )
        _check_store(name, fallback, "fallback")
        checked: List[Tuple[str, FileStore]] = []
        for prefix, store in routes.items():
            if not isinstance(prefix, str) or not prefix.startswith("/") or not prefix.endswith("/"):
                shown = json.dumps(prefix, ensure_ascii=False) if isinstance(prefix, str) else repr(prefix)
                raise InvalidConfigError("invalid_config", f'route {shown} must start and end with "/"', {"field": "routes"})
            try:
                check_prefix(prefix)
            except InvalidPathError as e:
                raise InvalidConfigError("invalid_config", f"route {e.message}", {"field": "routes", "path": prefix}) from e
            _check_store(name, store, "routes")
            checked.append((prefix, store))
        self.fallback = fallback
        # Longest first: the first that matches is the longest match.
        self._routes = sorted(checked, key=lambda route: len(route[0]), reverse=True)

    @property
    def routes(self) -> Dict[str, FileStore]:
        """The route prefixes and their stores, longest prefix first."""
        return dict(self._routes)

    def store_for(self, path: str) -> FileStore:
        """The store ``path`` goes to."""
        return next((store for prefix, store in self._routes if path.startswith(prefix)), self.fallback)

    def _listing(self, prefix: str) -> List[FileStore]:
        """The stores that can hold paths under ``prefix`` (each once)."""
        stores: List[FileStore] = [self.fallback]
        for route, store in self._routes:
            if (route.startswith(prefix) or prefix.startswith(route)) and not any(s is store for s in stores):
                stores.append(store)
        return stores

    def _owned(self, store: FileStore, paths: Any) -> List[str]:
        return [str(p) for p in paths if self.store_for(str(p)) is store]

    def read(self, path: str) -> Optional[str]:
        return self.store_for(check_path(path)).read(path)

    def write(self, path: str, text: str) -> None:
        self.store_for(check_path(path)).write(path, text)

    def delete(self, path: str) -> None:
        self.store_for(check_path(path)).delete(path)

    def list(self, prefix: str) -> List[str]:
        """Paths under ``prefix`` from every store that can hold them, each from the store that
        owns it, sorted."""
        prefix = check_prefix(prefix)
        return sorted(p for store in self._listing(prefix) for p in self._owned(store, store.list(prefix)))

    def write_if(self, path: str, expected: Optional[str], text: str) -> bool:
        """The owning store's ``write_if``; where it has none, read, compare and write (not
        atomic)."""
        store = self.store_for(check_path(path))
        method = getattr(store, "write_if", None)
        if callable(method):
            return bool(method(path, expected, text))
        if store.read(path) != expected:
            return False
        store.write(path, text)
        return True


class AsyncCompositeStore(CompositeStore):
    """:class:`CompositeStore` with every method a coroutine: the async stores in it awaited,
    the synchronous ones called (what ``CompositeStore(...)`` is when a store in it is async)."""

    async def read(self, path: str) -> Optional[str]:  # type: ignore[override]
        return cast(Optional[str], await _call(self.store_for(check_path(path)), "read", path))

    async def write(self, path: str, text: str) -> None:  # type: ignore[override]
        await _call(self.store_for(check_path(path)), "write", path, text)

    async def delete(self, path: str) -> None:  # type: ignore[override]
        await _call(self.store_for(check_path(path)), "delete", path)

    async def list(self, prefix: str) -> List[str]:  # type: ignore[override]
        prefix = check_prefix(prefix)
        stores = self._listing(prefix)
        lists = await asyncio.gather(*(_call(store, "list", prefix) for store in stores))
        return sorted(p for store, paths in zip(stores, lists) for p in self._owned(store, paths))

    async def write_if(self, path: str, expected: Optional[str], text: str) -> bool:  # type: ignore[override]
        store = self.store_for(check_path(path))
        if callable(getattr(store, "write_if", None)):
            return bool(await _call(store, "write_if", path, expected, text))
        if await _call(store, "read", path) != expected:
            return False
        await _call(store, "write", path, text)
        return True


async def _call(store: object, method: str, *args: Any) -> Any:
    """``store.<method>(*args)``, awaited when it answers with an awaitable (an async store)."""
    return await _maybe(getattr(store, method)(*args))


async def _maybe(value: Any) -> Any:
    """``value``, awaited when it is an awaitable (an async store's answer)."""
    return await value if inspect.isawaitable(value) else value


def _check_store(name: str, store: object, field: str) -> None:
    missing = [m for m in _STORE_METHODS if not callable(getattr(store, m, None))]
    if missing:
        raise InvalidConfigError(
            "invalid_config",
            f"{name}: {field} must be stores (read, write, list, delete), got {type(store).__name__} without {', '.join(missing)}",
            {"field": field},
        )


def load_agents_md(store: FileStore, path: str = AGENTS_MD_PATH) -> Optional[str]:
    """The long-term memory file (``/memories/AGENTS.md``) from ``store``, or None (the npm
    package's ``loadAgentsMd``). An async store is run to completion here, as ``load_state``
    does, outside a running event loop; inside one, use :func:`aload_agents_md`."""
    text: Any = store.read(check_path(path))
    if inspect.isawaitable(text):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            text = run_awaited(_maybe(text))
        else:
            if inspect.iscoroutine(text):
                text.close()
            raise InvalidConfigError(
                "invalid_config", "load_agents_md: an async store inside a running event loop: use aload_agents_md", {"field": "store"}
            )
    return None if text is None else str(text)


async def aload_agents_md(store: FileStore, path: str = AGENTS_MD_PATH) -> Optional[str]:
    """:func:`load_agents_md`, awaited (an async store's read awaited, a sync store's called)."""
    text = await _maybe(store.read(check_path(path)))
    return None if text is None else str(text)
