"""Where offloaded content goes. Paths are absolute POSIX-style (``/tool_outputs/x.txt``) and
checked the same way as the npm package's (``checkPath``): no ``.``/``..`` segments, NUL,
backslash, empty segment, over-long path or segment."""

from __future__ import annotations

import json

import os
import uuid
from typing import Dict, List, Optional, Protocol, runtime_checkable

from .errors import CompactorError, InvalidPathError

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


def check_path(path: object) -> str:
    """``path`` if it is a safe store path, else :class:`InvalidPathError`."""

    def fail(why: str) -> InvalidPathError:
        # The path as the npm package writes it (JSON.stringify), so both say the same.
        shown = json.dumps(path, ensure_ascii=False) if isinstance(path, str) else repr(path)
        return InvalidPathError("invalid_path", f"invalid store path {shown}: {why}", {"path": str(path)})

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

    def __len__(self) -> int:
        return len(self._files)


_TEMP_SUFFIX = ".cc-tmp"


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
                    elif not entry.name.endswith(_TEMP_SUFFIX) and path.startswith(prefix):
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
