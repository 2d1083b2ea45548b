"""`pip install` of the built wheel in a fresh virtual environment works: the wheel carries the
component, its one dependency (wasmtime) comes from the registry, and the package counts and
plans there — outside this checkout."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import zipfile

from conftest import REPO


def test_the_wheel_installs_and_runs_in_a_fresh_venv(tmp_path) -> None:
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation", "-w", str(wheels), os.path.join(REPO, "python")],
        check=True,
        capture_output=True,
        text=True,
    )
    # No deprecation warnings from the metadata (pyproject.toml's license as a table had a
    # 20-line one, printed above the refusal's message when the core is missing).
    assert "DeprecationWarning" not in build.stdout + build.stderr, build.stdout + build.stderr
    [wheel] = glob.glob(str(wheels / "context_compactor-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        assert "context_compactor/core.wasm" in names and "context_compactor/py.typed" in names
        assert z.read("context_compactor/core.wasm")[:8] == b"\x00asm\x0d\x00\x01\x00"  # a Component
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel], check=True)
    script = (
        "import context_compactor as cc;"
        "c = cc.Compactor(model='gpt-4o', context_window=16000);"
        "r = c.manage([{'role': 'user', 'content': 'x ' * 60000}]);"
        "print(cc.count_tokens('Hello, world!'), r.events[0]['strategy'], cc.__file__)"
    )
    run = subprocess.run([python, "-c", script], check=True, capture_output=True, text=True, cwd=tmp_path)
    count, strategy, location = run.stdout.split()
    assert (count, strategy) == ("4", "offload")
    assert location.startswith(str(venv))


def test_a_wheel_without_the_core_is_refused(tmp_path) -> None:
    """Building without core.wasm fails, naming how to build it, instead of a package that
    installs and fails at the first Compactor()."""
    import shutil

    source = tmp_path / "python"
    shutil.copytree(os.path.join(REPO, "python"), source, ignore=shutil.ignore_patterns("core.wasm", "build", "*.egg-info", "__pycache__"))
    assert not (source / "src" / "context_compactor" / "core.wasm").exists()
    run = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "wheels"), str(source)],
        capture_output=True,
        text=True,
    )
    assert run.returncode != 0
    output = run.stdout + run.stderr
    for step in ("core.wasm", "rustup target add wasm32-wasip2", "bash scripts/build-component.sh", "pip install ./python"):
        assert step in output, (step, output)
    assert not list((tmp_path / "wheels").glob("*.whl")) if (tmp_path / "wheels").exists() else True
