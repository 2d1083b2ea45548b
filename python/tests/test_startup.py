"""The compiled component is cached between processes (wasmtime compiles core.wasm in 0.6-1.0 s;
a second process deserializes it), and a cache that is missing, corrupt or switched off only
means compiling again: never an error. Timings are printed, not asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Dict

PROBE = """
import json, time
t = time.perf_counter()
from context_compactor import Compactor, _core
compactor = Compactor({"model": "gpt-4o"})
tokens = compactor.usage([{"role": "user", "content": "hello there"}])["tokens"]
print(json.dumps({"ms": (time.perf_counter() - t) * 1000, "cached": _core.core().cached, "tokens": tokens}))
"""


def probe(cache_dir: str) -> Dict[str, Any]:
    env = {**os.environ, "CONTEXT_COMPACTOR_CACHE_DIR": cache_dir}
    run = subprocess.run([sys.executable, "-c", PROBE], env=env, check=True, capture_output=True, text=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_a_second_process_reads_the_compiled_component_from_the_cache(tmp_path) -> None:
    cache = str(tmp_path / "cache")
    first, second = probe(cache), probe(cache)
    print(f"first Compactor(): {first['ms']:.0f} ms compiling, {second['ms']:.0f} ms from the cache")
    assert (first["cached"], second["cached"]) == (False, True)
    assert first["tokens"] == second["tokens"] > 0
    (cached,) = os.listdir(cache)
    assert cached.startswith("core-") and cached.endswith(".cwasm")


def test_a_corrupt_or_missing_cache_compiles_again(tmp_path) -> None:
    cache = tmp_path / "cache"
    probe(str(cache))
    (file,) = cache.iterdir()
    blob = file.read_bytes()
    file.write_bytes(blob[: len(blob) // 2])  # a torn write
    again = probe(str(cache))
    assert again["cached"] is False and again["tokens"] > 0
    assert file.read_bytes() == blob, "the whole file is written again"
    file.write_bytes(b"not a compiled component")
    assert probe(str(cache))["cached"] is False
    # An empty CONTEXT_COMPACTOR_CACHE_DIR turns the cache off; an unwritable one is no error.
    assert probe("")["cached"] is False
    blocked = tmp_path / "blocked"
    blocked.write_text("a file, not a directory")
    assert probe(str(blocked / "cache"))["cached"] is False


def test_a_cache_file_others_could_write_is_compiled_over(tmp_path) -> None:
    """Deserializing trusts the bytes like native code: a file another user could have written
    (group- or world-writable) is not read but replaced by one only this user can read."""
    cache = tmp_path / "cache"
    probe(str(cache))
    (file,) = cache.iterdir()
    assert file.stat().st_mode & 0o777 == 0o600 and cache.stat().st_mode & 0o777 == 0o700
    file.chmod(0o666)
    assert probe(str(cache))["cached"] is False
    assert file.stat().st_mode & 0o777 == 0o600
    assert probe(str(cache))["cached"] is True


def test_the_cache_keeps_the_newest_builds_and_drops_torn_temporaries(tmp_path) -> None:
    """Each core build adds a compiled file of about 4 MB: a compile keeps the newest three and
    removes temporary files a killed process left."""
    cache = tmp_path / "cache"
    cache.mkdir()
    for age in range(1, 5):  # four older builds' files, a day apart, and an hour-old temporary
        old = cache / f"core-old{age}.cwasm"
        old.write_bytes(b"an older build")
        os.utime(old, (0, old.stat().st_mtime - age * 86400))
    torn = cache / "core-old1.cwasm.123.456.tmp"
    torn.write_bytes(b"half")
    os.utime(torn, (0, torn.stat().st_mtime - 7200))
    assert probe(str(cache))["cached"] is False
    kept = {p.name for p in cache.iterdir()}
    (new,) = kept - {"core-old1.cwasm", "core-old2.cwasm"}
    assert len(kept) == 3 and new.endswith(".cwasm") and not new.startswith("core-old"), kept
