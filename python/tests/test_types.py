"""The package's type hints hold: mypy --strict over its source finds nothing."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO


def test_the_package_type_checks_strictly() -> None:
    source = os.path.join(REPO, "python", "src", "context_compactor")
    run = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", source], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Success: no issues found" in run.stdout
