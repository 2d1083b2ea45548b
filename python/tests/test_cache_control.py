"""``anthropic_cache_control``: the npm package's ``anthropicCacheControl`` for Python (issue 31,
parity), the rule the core's (``src/cache.rs`` ``anthropic_breakpoints``): the checks of
js/test/ai.test.mjs, and the same answers as npm's on the same messages."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest

from context_compactor import ANTHROPIC_MAX_BREAKPOINTS, InvalidConfigError, InvalidMessageError, anthropic_cache_control

ROOT = Path(__file__).resolve().parents[2]


def cc(message: Dict[str, Any]) -> Any:
    return ((message.get("providerOptions") or {}).get("anthropic") or {}).get("cacheControl")


def marks(messages: List[Dict[str, Any]]) -> List[int]:
    return [i for i, m in enumerate(messages) if cc(m)]


def conversation() -> List[Dict[str, Any]]:
    return [{"role": "system", "content": "stable"}, *({"role": "assistant" if i % 2 else "user", "content": f"m{i}"} for i in range(10))]


def test_the_system_and_the_newest_message_never_more_than_four_and_the_input_untouched() -> None:
    messages = conversation()
    once = anthropic_cache_control(messages)
    assert marks(once) == [0, 10]
    assert cc(once[10]) == {"type": "ephemeral"}
    assert all("providerOptions" not in m for m in messages), "the input is not changed"
    assert once[5] is messages[5], "a message it does not mark is the same object"
    history = once
    for step in range(6):
        history = anthropic_cache_control([*history, {"role": "user", "content": f"s{step}", "providerOptions": {"anthropic": {"other": 1}}}], ttl="1h")
        marked = marks(history)
        assert len(marked) <= ANTHROPIC_MAX_BREAKPOINTS and 0 in marked and len(history) - 1 in marked, marked
        assert cc(history[-1]) == {"type": "ephemeral", "ttl": "1h"}
        assert history[-1]["providerOptions"]["anthropic"]["other"] == 1, "other provider options kept"
    assert len(marks(anthropic_cache_control(history, max_breakpoints=2))) == 2
    # A breakpoint taken off leaves no empty option objects behind.
    unmarked = [m for i, m in enumerate(anthropic_cache_control(history, max_breakpoints=2)) if cc(history[i]) and not cc(m)]
    assert unmarked and all("providerOptions" not in m or m["providerOptions"].get("anthropic") for m in unmarked)


def test_bad_arguments_are_typed_errors() -> None:
    with pytest.raises(InvalidMessageError):
        anthropic_cache_control(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidConfigError) as raised:
        anthropic_cache_control([], max_breakpoints=-1)
    assert raised.value.details["field"] == "max_breakpoints"
    with pytest.raises(InvalidConfigError):
        anthropic_cache_control([], ttl="2h")


def test_the_same_breakpoints_as_the_npm_package() -> None:
    steps: List[List[Dict[str, Any]]] = []
    history = conversation()
    for step in range(6):
        history = anthropic_cache_control([*history, {"role": "user", "content": f"s{step}"}], max_breakpoints=3 if step % 2 else 4)
        steps.append(history)
    script = f"""
const cc = await import({json.dumps((ROOT / 'js/dist/entry/node.js').as_uri())});
await cc.init();
const steps = [];
let history = JSON.parse(process.argv[1]);
for (let step = 0; step < 6; step++) {{
  history = cc.anthropicCacheControl([...history, {{ role: 'user', content: `s${{step}}` }}], {{ maxBreakpoints: step % 2 ? 3 : 4 }});
  steps.push(history);
}}
process.stdout.write(JSON.stringify(steps));
"""
    out = subprocess.run(["node", "--input-type=module", "-e", script, json.dumps(conversation())], capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(out.stdout) == steps
