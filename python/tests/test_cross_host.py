"""Cross-host determinism: the same conversations planned through the Python package (the
Component under wasmtime), the npm package (the wasm-bindgen build under Node) and the native
crate (its CLI, `context-compactor plan --json`) give JSON-equal plans — every action, path,
count, trigger and cache figure, transcripts and summary requests included."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any, Dict, List, Tuple

import pytest

from context_compactor import Compactor, CompactorError

from conftest import REPO, chat, coding_session
from test_compactor import huge_tool_result, slice_conversation

CASES: Dict[str, Tuple[Dict[str, Any], List[Dict[str, Any]], bool]] = {
    # name: (config, messages, manual)
    "tier 1, a 100k-token tool result at 16k": ({"model": "gpt-4o", "contextWindow": 16_000}, slice_conversation(huge_tool_result(100_000)), False),
    "tier 2, a coding session at 11k": (
        {"model": "gpt-4o", "contextWindow": 11_000, "compaction": {"targetFraction": 0.55}, "history": {"strategy": "off"}},
        coding_session(),
        False,
    ),
    "tier 3, a 30-turn chat at 8k": ({"contextWindow": 8_000}, chat(30), False),
    "tier 3, truncate, claude": ({"model": "claude-sonnet-4-5", "contextWindow": 8_000, "history": {"strategy": "truncate"}}, chat(30), False),
    "manual, cl100k (gpt-4)": ({"model": "gpt-4", "contextWindow": 32_000}, chat(12), True),
    "nothing to do": ({"model": "gpt-4o"}, chat(5), False),
}


def native_cli() -> str:
    subprocess.run(["cargo", "build", "-q", "--features", "cli", "--bin", "context-compactor"], cwd=REPO, check=True)
    return os.path.join(REPO, "target", "debug", "context-compactor")


def native_plans(tmp_path) -> Dict[str, Any]:
    cli = native_cli()
    plans = {}
    for n, (name, (config, messages, manual)) in enumerate(CASES.items()):
        session, config_file = tmp_path / f"s{n}.json", tmp_path / f"c{n}.json"
        session.write_text(json.dumps(messages), encoding="utf-8")
        config_file.write_text(json.dumps(config), encoding="utf-8")
        args = [cli, "plan", str(session), "--config", str(config_file), "--json"] + (["--manual"] if manual else [])
        if "model" not in config:
            # The CLI does not guess: a window without a model needs its encoding (the hosts' default).
            args += ["--encoding", "o200k_base"]
        plans[name] = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    return plans


NODE_SCRIPT = """
import { readFileSync } from 'node:fs';
const cc = await import(process.argv[2]);
await cc.init();
const cases = JSON.parse(readFileSync(process.argv[3], 'utf8'));
const out = {};
for (const [name, [config, messages, manual]] of Object.entries(cases)) {
  const compactor = await cc.createCompactor(config);
  // JSON.stringify reads the transcripts' json/markdown, rendered on first read.
  out[name] = JSON.parse(JSON.stringify(compactor.plan(messages, manual ? { trigger: 'manual' } : undefined)));
}
process.stdout.write(JSON.stringify(out));
"""


def npm_plans(tmp_path) -> Dict[str, Any]:
    entry = os.path.join(REPO, "js", "dist", "entry", "node.js")
    assert os.path.isfile(entry), "js/dist is not built: run bash scripts/build.sh"
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps(CASES), encoding="utf-8")
    script = tmp_path / "plan.mjs"
    script.write_text(NODE_SCRIPT, encoding="utf-8")
    run = subprocess.run(["node", str(script), "file://" + entry, str(cases)], check=True, capture_output=True, text=True)
    return json.loads(run.stdout)


def python_plans() -> Dict[str, Any]:
    return {
        name: Compactor(config).plan(messages, trigger="manual" if manual else "auto")
        for name, (config, messages, manual) in CASES.items()
    }


@pytest.fixture(scope="module")
def plans(tmp_path_factory) -> Dict[str, Dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("cross-host")
    native = native_plans(tmp)
    return {
        "python": python_plans(),
        "npm": npm_plans(tmp),
        "native": {name: run["plan"] for name, run in native.items()},
        "native-applied": {name: run["applied"] for name, run in native.items()},
    }


@pytest.mark.parametrize("case", list(CASES))
def test_python_npm_and_native_plans_are_json_equal(plans, case: str) -> None:
    python, npm, native = plans["python"][case], plans["npm"][case], plans["native"][case]
    assert python == native
    assert python == npm


def essentials(event: Dict[str, Any]) -> Tuple[Any, ...]:
    # The summary's error text is the host's own ("no summarizer configured" here, "the CLI has
    # no LLM" there); everything else must agree.
    return tuple(event.get(k) for k in ("actionId", "strategy", "status", "messageIndex", "path", "tokensBefore", "tokensAfter", "tokensSaved"))


@pytest.mark.parametrize("case", list(CASES))
def test_python_applies_as_the_native_host_loop_does(plans, case: str) -> None:
    config, messages, manual = CASES[case]
    compactor = Compactor(config)
    result = compactor.compact(messages) if manual else compactor.manage(messages)
    native = plans["native-applied"][case]
    assert [essentials(e) for e in result.events] == [essentials(e) for e in native["events"]]
    if result.events:
        assert compactor.usage(result.messages)["tokens"] == native["tokensAfter"]


def test_the_cases_cover_every_tier_and_both_encodings(plans) -> None:
    python = plans["python"]
    kinds = {a["type"] for plan in python.values() for a in plan["actions"]}
    assert {"offload", "evict-input", "dedupe", "save-transcript", "summarize", "drop"} <= kinds, kinds
    assert {p["model"]["encoding"] for p in python.values()} == {"o200k_base", "cl100k_base"}
    assert python["nothing to do"]["actions"] == []
    transcript = next(a for a in python["tier 3, a 30-turn chat at 8k"]["actions"] if a["type"] == "save-transcript")
    assert json.loads(transcript["json"]) == CASES["tier 3, a 30-turn chat at 8k"][1]


def run_node(tmp_path, script: str, data: Any) -> Any:
    """Runs `script` (an ES module: argv[2] the npm package's Node entry, argv[3] a JSON file of
    `data`) and parses what it prints."""
    entry = os.path.join(REPO, "js", "dist", "entry", "node.js")
    (tmp_path / "data.json").write_text(json.dumps(data), encoding="utf-8")
    (tmp_path / "script.mjs").write_text(script, encoding="utf-8")
    run = subprocess.run(["node", str(tmp_path / "script.mjs"), "file://" + entry, str(tmp_path / "data.json")], check=True, capture_output=True, text=True)
    return json.loads(run.stdout)


TOOLS_SCRIPT = """
import { readFileSync } from 'node:fs';
const cc = await import(process.argv[2]);
await cc.init();
const { files, calls } = JSON.parse(readFileSync(process.argv[3], 'utf8'));
const store = new cc.MemoryStore();
for (const [path, text] of Object.entries(files)) await store.write(path, text);
const compactor = await cc.createCompactor({ model: 'gpt-4o', contextWindow: 8000, store });
const tools = compactor.tools();
const specs = Object.fromEntries(Object.entries(tools).map(([name, t]) => [name, { description: t.description, inputSchema: t.inputSchema.jsonSchema }]));
const answers = [];
for (const [name, args] of calls) answers.push(await tools[name].execute(args));
process.stdout.write(JSON.stringify({ specs, answers }));
"""


def test_the_recovery_tools_are_one_text_in_every_host(tmp_path) -> None:
    """The recovery tools' descriptions, schemas, pages and answers come from the core: Python
    and npm give the same, for the same store (a page capped at 10 % of an 8k window)."""
    from context_compactor import MemoryStore

    files = {
        "/tool_outputs/log.txt": "\n".join(f"line {i} {'x' * 40}" for i in range(1_200)),
        "/tool_outputs/deep/a.json": '{"NEEDLE": true}',
        "/conversation_history/c.md": "# t\nNEEDLE here",
    }
    calls = [
        ("read_file", {"path": "/tool_outputs/log.txt"}),
        ("read_file", {"path": "/tool_outputs/log.txt", "offset": 1_190}),
        ("read_file", {"path": "/tool_outputs/none.txt"}),
        ("read_file", {"path": "tool_outputs/log.txt"}),
        ("grep", {"pattern": "NEEDLE"}),
        ("grep", {"pattern": "absent", "path": "/tool_outputs/"}),
        ("ls", {}),
        ("ls", {"path": "/tool_outputs"}),
    ]
    npm = run_node(tmp_path, TOOLS_SCRIPT, {"files": files, "calls": calls})

    store = MemoryStore()
    for path, text in files.items():
        store.write(path, text)
    tools = Compactor({"model": "gpt-4o", "contextWindow": 8_000}, store=store).tools()
    assert {name: {"description": t.description, "inputSchema": t.input_schema} for name, t in tools.items()} == npm["specs"]
    answers = [tools[name](**args) for name, args in calls]
    assert answers == npm["answers"]
    # The page ends at 10 % of the window (3,200 characters), not at the 500-line default.
    body, _, more = answers[0].rpartition("\n")
    assert len(body) <= 3_200 < len(body) + 60 and more.startswith("… ") and "more lines: read_file with offset=" in more, more
    assert answers[3].startswith("Error: invalid store path")


BREAKDOWN_SCRIPT = """
import { readFileSync } from 'node:fs';
const cc = await import(process.argv[2]);
await cc.init({ encodings: ['o200k_base', 'cl100k_base'] });
const { messages, tools } = JSON.parse(readFileSync(process.argv[3], 'utf8'));
const out = {};
for (const encoding of ['o200k_base', 'cl100k_base']) out[encoding] = cc.countBreakdown(messages, { tools, encoding });
const compactor = await cc.createCompactor({ model: 'gpt-4o', tools });
out.usage = compactor.usage(messages).tokens;
process.stdout.write(JSON.stringify(out));
"""


def test_count_breakdown_is_the_npm_packages(tmp_path) -> None:
    """count_breakdown (Python) and countBreakdown (npm) give the same breakdown, per message,
    part and tool; its total is a compactor's usage of the same request."""
    from context_compactor import count_breakdown

    messages = coding_session()[:12] + [{"role": "user", "content": [{"type": "text", "text": "and this?"}, {"type": "image", "image": "aGVsbG8=", "mediaType": "image/png"}]}]
    tools = [
        {"name": "read_file", "description": "Read a file.", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
        {"name": "bash", "description": "Run a command."},
    ]
    npm = run_node(tmp_path, BREAKDOWN_SCRIPT, {"messages": messages, "tools": tools})
    for encoding in ("o200k_base", "cl100k_base"):
        python = count_breakdown(messages, tools=tools, encoding=encoding)
        assert python == npm[encoding], encoding
        assert len(python["messages"]) == len(messages) and set(python["tools"]["definitions"]) == {"read_file", "bash"}
    assert count_breakdown(messages, tools=tools)["total"] == npm["usage"] == Compactor({"model": "gpt-4o", "tools": tools}).usage(messages)["tokens"]
    # A mapping of definitions counts the same; tool objects give their name, description, schema.
    by_name = {t["name"]: {k: v for k, v in t.items() if k != "name"} for t in tools}
    assert count_breakdown(messages, tools=by_name) == npm["o200k_base"]
    from context_compactor import MemoryStore, recovery_tools

    objects = count_breakdown([], tools=list(recovery_tools(MemoryStore()).values()))["tools"]["definitions"]
    assert set(objects) == {"read_file", "grep", "ls"} and all(d["inputSchema"] > 0 and d["description"] > 0 for d in objects.values()), objects


TOKENIZERS_SCRIPT = """
import { readFileSync } from 'node:fs';
const cc = await import(process.argv[2]);
const { texts, names, llama } = JSON.parse(readFileSync(process.argv[3], 'utf8'));
await cc.init({ encodings: names });
const out = { counts: {}, usage: {} };
for (const name of names) out.counts[name] = texts.map((t) => cc.countTokens(t, name));
for (const model of ['qwen/qwen3-32b', 'deepseek-ai/DeepSeek-V3']) {
  const compactor = await cc.createCompactor({ model });
  out.usage[model] = [compactor.usage([{ role: 'user', content: texts.join('\\n') }]).tokens, compactor.model.tokenRatio];
}
if (llama) {
  await cc.loadTokenizer('llama3', readFileSync(llama, 'utf8'));
  out.llama = texts.map((t) => cc.countTokens(t, 'llama3'));
}
process.stdout.write(JSON.stringify(out));
"""


def test_open_weight_tokenizers_count_as_in_the_npm_package(tmp_path) -> None:
    """The prebuilt tokenizers the package ships (copied from the npm package's data by
    scripts/build-component.sh) and a Hugging Face tokenizer.json count exactly as the npm
    package does; a compactor for a model they belong to counts with them (ratio 1)."""
    import context_compactor as cc

    texts = ["Hello, 世界! def f(x): return x ** 2", "  indented\n\tcode();\n", "naïve café — ½ 🎉🎉", "x" * 3_000]
    names = cc.tokenizers.shipped()
    assert {"qwen3", "qwen2_5", "deepseek_v3", "mistral_tekken_240911"} <= set(names), names
    llama = os.path.join(REPO, ".tools", "tokenizers", "llama3", "tokenizer.json")
    npm = run_node(tmp_path, TOKENIZERS_SCRIPT, {"texts": texts, "names": names, "llama": llama if os.path.isfile(llama) else None})
    for name in names:
        assert [cc.count_tokens(t, name) for t in texts] == npm["counts"][name], name
    for model, (tokens, ratio) in npm["usage"].items():
        compactor = Compactor({"model": model})
        assert compactor.model["tokenRatio"] == ratio == 1, model
        assert compactor.usage([{"role": "user", "content": "\n".join(texts)}])["tokens"] == tokens, model
    if npm.get("llama") is not None:
        with open(llama, encoding="utf-8") as f:
            info = cc.load_tokenizer("llama3", f.read())
        assert info and cc.is_encoding_loaded("llama3")
        assert [cc.count_tokens(t, "llama3") for t in texts] == npm["llama"]


SEGMENTS_SCRIPT = """
import { readFileSync } from 'node:fs';
const cc = await import(process.argv[2]);
await cc.init();
const { prefixes, paths } = JSON.parse(readFileSync(process.argv[3], 'utf8'));
const check = (f, p) => { try { return f(p); } catch (e) { return [e.code, e.message]; } };
process.stdout.write(JSON.stringify({
  memory: prefixes.map((p) => cc.memorySegment(p)),
  paths: paths.map((p) => check(cc.checkPath, p)),
  prefixes: paths.map((p) => check(cc.checkPrefix, p)),
  limits: [cc.MAX_PATH_LENGTH, cc.MAX_SEGMENT_BYTES],
}));
"""


def test_the_memory_segment_and_the_path_rules_are_the_same_in_every_host(tmp_path) -> None:
    """``memory_segment``, ``check_path`` / ``check_prefix`` and their limits: the npm names, in
    snake_case, with the same answers (a path one host took and the other refused would store
    where the other cannot read)."""
    from context_compactor import MAX_PATH_LENGTH, MAX_SEGMENT_BYTES, check_path, check_prefix, memory_segment

    prefixes = ["/memories/", "/agent/mem/"]
    paths = ["/a/b.txt", "/", "/tool_outputs/", "rel/x", "/a/../b", "/a//b", "/" + "x" * 300, "/a\u0000b", "/" + "é" * 130]

    def check(f: Any, p: str) -> Any:
        try:
            return f(p)
        except CompactorError as e:
            return [e.code, str(e)]

    node = run_node(tmp_path, SEGMENTS_SCRIPT, {"prefixes": prefixes, "paths": paths})
    assert [memory_segment(p) for p in prefixes] == node["memory"]
    assert "/agent/mem/AGENTS.md" in node["memory"][1]
    assert [check(check_path, p) for p in paths] == node["paths"]
    assert [check(check_prefix, p) for p in paths] == node["prefixes"]
    assert [MAX_PATH_LENGTH, MAX_SEGMENT_BYTES] == node["limits"]
