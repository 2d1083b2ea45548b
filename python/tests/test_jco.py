"""The WIT world is complete enough for another Component host: the same component, transpiled
by jco (tests/component/) and run in Node, gives byte-identical core results to the one run by
wasmtime here — raw plan JSON for every cross-host case, usage, counts of the exactness
fixture, and error records."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any, Dict, List

import pytest

from context_compactor import _core

from conftest import REPO
from test_cross_host import CASES

HERE = os.path.join(REPO, "tests", "component")

NODE = """
import { readFileSync } from 'node:fs';
const { api } = await import(process.argv[1]);
const input = JSON.parse(readFileSync(process.argv[2], 'utf8'));
// jco throws a ComponentError carrying the WIT error record's fields.
const attempt = (f) => { try { return { ok: f() }; } catch (e) { const r = e.payload ?? e; return { err: { code: r.code, message: r.message, json: r.json } }; } };
const out = { plans: {}, counts: [], errors: [] };
for (const [name, [config, messages, manual]] of Object.entries(input.cases)) {
  const c = api.Compactor.create(JSON.stringify(config), undefined);
  const json = JSON.stringify(messages);
  out.plans[name] = [c.plan(json, JSON.stringify({ trigger: manual ? 'manual' : 'auto' })), c.usage(json), c.countRaw(json)];
  c[Symbol.dispose]();
}
for (const text of input.texts) out.counts.push([api.countTokens(text, 'o200k_base'), api.countTokens(text, 'cl100k_base')]);
out.errors.push(attempt(() => api.countTokens('x', 'p50k_base')));
out.errors.push(attempt(() => api.Compactor.create('{"contextWindw": 5}', undefined)));
const c = api.Compactor.create('{}', undefined);
out.errors.push(attempt(() => c.plan('[{"role": "robot", "content": "x"}]', undefined)));
out.errors.push(attempt(() => c.plan('[{"role"', undefined)));
process.stdout.write(JSON.stringify(out));
"""


def record(error: Any) -> Dict[str, str]:
    return {"code": error.code, "message": error.message, "json": error.json}


def wasmtime_results(texts: List[str]) -> Dict[str, Any]:
    core = _core.core()
    out: Dict[str, Any] = {"plans": {}, "counts": [], "errors": []}
    for name, (config, messages, manual) in CASES.items():
        c = _core.CoreCompactor(json.dumps(config), None)
        text = json.dumps(messages)
        plan = c.call("plan", text, json.dumps({"trigger": "manual" if manual else "auto"}))
        out["plans"][name] = [plan, c.call("usage", text), c.call("count-raw", text)]
        c.close()
    for text in texts:
        out["counts"].append([core.func("count-tokens")(core.store, text, "o200k_base"), core.func("count-tokens")(core.store, text, "cl100k_base")])
    # The raw WIT results (not the typed exceptions): the records themselves.
    handle = _core.CoreCompactor("{}", None)
    errors = [
        core.func("count-tokens")(core.store, "x", "p50k_base"),
        core.func("[static]compactor.create")(core.store, '{"contextWindw": 5}', None),
        core.func("[method]compactor.plan")(core.store, handle._handle, '[{"role": "robot", "content": "x"}]', None),
        core.func("[method]compactor.plan")(core.store, handle._handle, '[{"role"', None),
    ]
    out["errors"] = [{"err": record(e)} for e in errors]
    return out


def test_jco_in_node_and_wasmtime_give_byte_identical_results(tmp_path) -> None:
    assert os.path.isdir(os.path.join(HERE, "node_modules")), "run bash scripts/setup.sh (npm ci in tests/component)"
    subprocess.run(["node", os.path.join(HERE, "transpile.mjs")], check=True)
    with open(os.path.join(REPO, "tests", "fixtures", "token-counts.json"), encoding="utf-8") as f:
        texts = [c["text"] for c in json.load(f)["cases"]]
    (tmp_path / "input.json").write_text(json.dumps({"cases": CASES, "texts": texts}), encoding="utf-8")
    run = subprocess.run(
        ["node", "--input-type=module", "-e", NODE, "file://" + os.path.join(HERE, "out", "core.js"), str(tmp_path / "input.json")],
        check=True, capture_output=True, text=True, cwd=HERE,
    )
    jco = json.loads(run.stdout)
    mine = wasmtime_results(texts)
    assert jco["plans"] == mine["plans"]
    assert jco["counts"] == mine["counts"]
    assert jco["errors"] == mine["errors"]
    # Not vacuous: real plans, real errors of four kinds.
    assert any(json.loads(p[0])["actions"] for p in mine["plans"].values())
    assert [e["err"]["code"] for e in mine["errors"]] == ["unknown_encoding", "invalid_config", "invalid_message", "malformed_json"]
