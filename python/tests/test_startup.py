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
