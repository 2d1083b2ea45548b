"""README.md's Python quick start runs as written: every ```python block of the "Python quick
start" section, in order, in one namespace (the LangChain block gets a scripted `model`,
`summary_llm` and an empty `tools`, the app's own there), in a scratch directory."""

from __future__ import annotations

import os
import re

from conftest import REPO


def python_blocks() -> list:
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    section = readme.split("## Python quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_python_quick_start_runs_as_written(tmp_path, monkeypatch, capsys) -> None:
    from test_langchain import ScriptedModel

    blocks = python_blocks()
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"model": ScriptedModel(prompts=[]), "summary_llm": ScriptedModel(prompts=[]), "tools": []}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    # What the first block claims: the log left the conversation, stored byte for byte on disk.
    path = namespace["path"]
    assert (tmp_path / ".agent-store" / path.lstrip("/")).read_text() == namespace["log"]
    assert path in namespace["messages"][2]["content"][0]["output"]["value"]
    assert capsys.readouterr().out.startswith("1\tline 0: status ok\n2\tline 1: status ok\n")
    assert namespace["agent"] is not None and namespace["middleware"].compactor.store.read(path) == namespace["log"]
