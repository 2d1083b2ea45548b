"""The recovery tools as plain functions over a store: what an agent calls to read back what
was offloaded or summarized away (``read_file``, ``grep``, ``ls``). Each returns text for the
model; a problem is an ``Error: ...`` text, never an exception, as the npm package's tools do.
``recovery_tools(store)`` gives them with descriptions and JSON schemas, for any agent
framework's tool registry."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, List

from .stores import FileStore, check_path, check_prefix

DEFAULT_LIMIT = 500
MAX_LINE_CHARS = 2_000
MAX_MATCHES = 100


def _cut(line: str, max_line_chars: int) -> str:
    if len(line) > max_line_chars:
        return f"{line[:max_line_chars]}… [line cut at {max_line_chars} characters]"
    return line


def _guarded(run: Callable[[], str]) -> str:
    try:
        return run()
    except Exception as e:
        return f"Error: {e}"


def read_file(
    store: FileStore,
    path: str,
    offset: int = 0,
    limit: int = DEFAULT_LIMIT,
    *,
    max_line_chars: int = MAX_LINE_CHARS,
) -> str:
    """Numbered lines of a stored file, from ``offset`` (0-based), at most ``limit``."""

    def run() -> str:
        text = store.read(check_path(path))
        if text is None:
            return f"Error: no file at {path}. Use ls to see what is stored."
        if not (isinstance(offset, int) and offset >= 0 and isinstance(limit, int) and limit > 0):
            return "Error: offset must be >= 0 and limit > 0."
        lines = text.split("\n")
        if offset >= len(lines) and offset > 0:
            return f"Error: offset {offset} is past the end ({len(lines)} lines)."
        page = lines[offset : offset + limit]
        width = len(str(offset + len(page)))
        body = "\n".join(
            f"{str(offset + i + 1).rjust(width)}\t{_cut(line, max_line_chars)}" for i, line in enumerate(page)
        )
        rest = len(lines) - offset - len(page)
        if rest > 0:
            return f"{body}\n… {rest} more lines: read_file with offset={offset + len(page)}"
        return body

    return _guarded(run)


def grep(
    store: FileStore,
    pattern: str,
    path: str = "/",
    *,
    max_matches: int = MAX_MATCHES,
    max_line_chars: int = MAX_LINE_CHARS,
) -> str:
    """Lines containing the literal ``pattern`` in stored files under ``path``."""

    def run() -> str:
        if not pattern:
            return "Error: pattern is empty."
        out: List[str] = []
        for file in store.list(check_prefix(path)):
            text = store.read(file)
            if text is None:
                continue
            for i, line in enumerate(text.split("\n")):
                if pattern not in line:
                    continue
                if len(out) == max_matches:
                    return "\n".join(out) + "\n… more matches: narrow the path or the pattern"
                out.append(f"{file}:{i + 1}: {_cut(line, max_line_chars)}")
        return "\n".join(out) if out else f"No match for {json.dumps(pattern)} under {path}."

    return _guarded(run)


def ls(store: FileStore, path: str = "/") -> str:
    """Stored files and directories directly under ``path``."""

    def run() -> str:
        directory = path if path.endswith("/") else f"{path}/"
        entries = set()
        for file in store.list(check_prefix(directory)):
            rest = file[len(directory) :]
            entries.add(f"{directory}{rest[: rest.index('/') + 1]}" if "/" in rest else file)
        return "\n".join(sorted(entries)) if entries else f"Nothing stored under {directory}."

    return _guarded(run)


@dataclass(frozen=True)
class RecoveryTool:
    """A recovery tool bound to a store: call it with the model's arguments."""

    name: str
    description: str
    input_schema: Dict[str, Any]
    func: Callable[..., str]

    def __call__(self, **arguments: Any) -> str:
        return self.func(**arguments)


def recovery_tools(store: FileStore, *, default_limit: int = DEFAULT_LIMIT) -> Dict[str, RecoveryTool]:
    """``read_file``, ``grep`` and ``ls`` over ``store``, with the npm package's descriptions
    and JSON schemas."""

    def read(path: str, offset: int = 0, limit: int = default_limit) -> str:
        return read_file(store, path, offset, limit)

    return {
        "read_file": RecoveryTool(
            "read_file",
            "Read a stored file (offloaded tool output, conversation transcript, memory). Returns numbered lines; page with offset (0-based line) and limit.",
            {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Absolute store path, e.g. /tool_outputs/search_ab12.txt"},
                    "offset": {"type": "integer", "description": "First line, 0-based. Default 0."},
                    "limit": {"type": "integer", "description": f"Number of lines. Default {default_limit}."},
                },
                "required": ["path"],
                "additionalProperties": False,
            },
            read,
        ),
        "grep": RecoveryTool(
            "grep",
            "Find lines containing a literal text in stored files under a path (default: everything).",
            {
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Literal text to find (case-sensitive)."},
                    "path": {"type": "string", "description": "A file or directory prefix, e.g. /tool_outputs/. Default /."},
                },
                "required": ["pattern"],
                "additionalProperties": False,
            },
            lambda pattern, path="/": grep(store, pattern, path),
        ),
        "ls": RecoveryTool(
            "ls",
            "List stored files and directories under a path (default /).",
            {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "Directory, e.g. /tool_outputs/. Default /."}},
                "additionalProperties": False,
            },
            lambda path="/": ls(store, path),
        ),
    }
