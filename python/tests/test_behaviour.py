"""One behaviour for every host (issue 31, item 5; docs/LOOP.md): scenarios — a conversation
growing turn by turn, options, scripted summarizer replies (or a summarizer that fails), a store
that refuses writes under a prefix, an ``onPreCompact`` decision, each turn's time (the hosts'
clocks: a turn after the cache's lifetime) — run through the npm package
(Node), the Python package and the native Rust driver (``Compactor::manage``, the example
``examples/behaviour``) on one long-lived compactor each. Every turn must give the same prompt
byte for byte, the same events and the same store files. The loop is the core's (``Session``)
in all three; what this catches is a host that decides something on its own again."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any, Dict, List, Optional

import pytest

from context_compactor import Compactor, CompactorError, MemoryStore

from conftest import REPO, chat, coding_session

T0 = 1_767_603_600_000  # 2026-01-05 09:00 UTC, ms: the scenarios' clock
BIG = "\n".join(f"row {i}: value {(i * 7919) % 10_007} ok" for i in range(6_000))


def tool_turn(n: int, tool: str, output: Any, kind: str = "text") -> List[Dict[str, Any]]:
    return [
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": f"t{n}", "toolName": tool, "input": {"n": n}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": f"t{n}", "toolName": tool, "output": {"type": kind, "value": output}}]},
    ]


#: Scenarios the native host cannot take as written: its conversation is Rust strings, so a lone
#: surrogate is U+FFFD there, where the npm and Python hosts store and send the app's original.
NOT_NATIVE = {"a JSON output with exact numbers and a lone surrogate"}


def scenarios() -> Dict[str, Dict[str, Any]]:
    talk = chat(24)
    short = chat(7, 80)
    coding = coding_session()
    # Three turns of two log reads, each turn at its own minute (a state records the time of
    # the last call, by the scenario's clock).
    stored_turns = {
        "times": [T0, T0 + 60_000, T0 + 120_000],
        "turns": [
            [{"role": "user", "content": "check the logs"}, *tool_turn(1, "logs", BIG)],
            [{"role": "user", "content": "and the other one?"}, *tool_turn(2, "logs", BIG.replace("ok", "fine"))],
            [{"role": "user", "content": "thanks"}],
        ],
    }
    between = {"contextWindow": 8_000, "history": {"triggerFraction": 0.9, "hardLimitFraction": 0.99}, "compaction": {"triggerFraction": 0.5, "targetFraction": 0.4}}
    return {
        "onPreCompact cancels below the hard limit, is overridden above it": {
            "options": between,
            "hook": {"cancel": True},
            "turns": [short, talk[:60]],
        },
        "onPreCompact's custom summary and instructions": {
            "options": {"contextWindow": 8_000},
            "summaries": ["## Session Intent\nnot asked: the hook's summary is used"],
            "hook": {"customSummary": "## Session Intent\nHand-written by the hook.", "customInstructions": "Keep the numbers."},
            "turns": [talk[:30], talk[30:]],
        },
        "onPreCompact's instructions reach the summarizer": {
            "options": {"contextWindow": 8_000},
            "summaries": ["## Session Intent\nSteered."],
            "hook": {"customInstructions": "Focus on the spreadsheet formulas."},
            "turns": [talk[:30], talk[30:]],
        },
        "a huge tool result, then more turns": {
            "options": {"model": "gpt-4o", "contextWindow": 16_000},
            "turns": [[{"role": "user", "content": "check the logs"}, *tool_turn(1, "logs", BIG)], [{"role": "user", "content": "and now?"}, *tool_turn(2, "logs", BIG[:900])]],
        },
        "a JSON output with exact numbers and a lone surrogate": {
            "options": {"model": "gpt-4o", "contextWindow": 16_000},
            "turns": [[{"role": "user", "content": "query \ud83d"}, *tool_turn(1, "query", {"rows": [{"i": i, "v": -113.71428571428571, "s": "x\udfff" if i % 2 else "x\ufffd"} for i in range(900)]}, "json")]],
        },
        "tier 2 on a coding session": {
            "options": {"model": "gpt-4o", "contextWindow": 11_000, "compaction": {"targetFraction": 0.55}, "history": {"strategy": "off"}},
            "turns": [coding[:8], coding[8:]],
        },
        "a chat summarized twice by a scripted summarizer": {
            "options": {"contextWindow": 8_000},
            "summaries": ["## Session Intent\nChat about many things (first summary).", "## Session Intent\nStill chatting (second summary)."],
            "turns": [talk[:16], talk[16:32], talk[32:]],
        },
        "a summarizer that fails: the heuristic summary": {
            "options": {"contextWindow": 8_000},
            "summaries": None,
            "failing_summarizer": True,
            "turns": [talk[:30], talk[30:]],
        },
        "truncate, claude's estimate": {
            "options": {"model": "claude-sonnet-4-5", "contextWindow": 8_000, "history": {"strategy": "truncate"}},
            "turns": [talk[:20], talk[20:]],
        },
        "a store that refuses offloads: content stays": {
            "options": {"model": "gpt-4o", "contextWindow": 16_000},
            "refuse": "/tool_outputs/",
            "turns": [[{"role": "user", "content": "check"}, *tool_turn(1, "logs", BIG)]],
        },
        "a coding session, then the user is away past the cache's lifetime": {
            # gpt-4o's cache lives 10 minutes: the third turn, 30 minutes on, takes tier 2's
            # deferred edits; the second, 2 minutes on, changes nothing.
            "options": {"model": "gpt-4o", "contextWindow": 24_000, "history": {"strategy": "off"}},
            "times": [T0, T0 + 2 * 60_000, T0 + 32 * 60_000],
            "turns": [coding[:8], coding[8:], [{"role": "user", "content": "back: where were we?"}]],
        },
        "a summary that continues the agent's cached prompt": {
            # Claude's cache: the request is also offered as a continuation of the agent's
            # prompt, whose messages the npm and Python hosts hand the summarizer alike.
            "options": {"model": "claude-sonnet-4-5", "contextWindow": 8_000},
            "summaries": ["## Session Intent\nContinued from the cache."],
            "turns": [talk[:30], talk[30:]],
        },
        "the state kept in the store, each turn sent twice at once": {
            # Two requests of each turn (a double submit), each a new compactor loaded from the
            # state at ``state`` before either saved: the second finds the very state it would
            # save already stored (docs/LOOP.md, slice 3). No summarizer: leases carry times.
            "options": {"model": "gpt-4o", "contextWindow": 16_000},
            "state": "/state/compactor.json",
            **stored_turns,
        },
        "the state kept in the store, a second tab's request lost its save": {
            # As above, but the second request carries a message more (another tab: a pasted
            # log, offloaded): its save is lost to the first's, and it runs again on what the
            # first stored, then saves over it; the next turn is the first tab's again.
            "options": {"model": "gpt-4o", "contextWindow": 16_000},
            "state": "/state/compactor.json",
            "second": {"role": "user", "content": "from the other tab:\n" + BIG.replace("row", "line")},
            **stored_turns,
        },
        "the state kept in the store, a double submit's summary made once": {
            # Both requests of a turn plan the same summary: the first makes it under its lease
            # beside the state and leaves it there, the second reads it (the core's lease:
            # src/lease.rs, asked by the call in every host), so the summarizer is asked once a
            # turn and the lease's file, the summary alone, is the same in every host.
            "options": {"contextWindow": 8_000},
            "state": "/state/compactor.json",
            "summaries": ["## Session Intent\nChat, summarized once for two requests."],
            "turns": [talk[:30], talk[30:]],
        },
        "tool outputs offloaded as they return": {
            # Each tool result goes through ``offloadToolOutput`` before it joins the history
            # (as ``wrapTools`` and the framework adapters do): a large text and a large JSON
            # output become previews, a small one stays; then the window fills.
            "options": {"model": "gpt-4o", "contextWindow": 16_000},
            "as_returned": True,
            "turns": [
                [{"role": "user", "content": "check the logs"}, *tool_turn(1, "logs", BIG)],
                [{"role": "user", "content": "and the table?"}, *tool_turn(2, "query", {"rows": [{"i": i, "name": f"row {i}", "ok": i % 3 == 0} for i in range(2_500)]}, "json"), *tool_turn(3, "ls", "a.txt\nb.txt")],
                [{"role": "user", "content": "more"}, *tool_turn(4, "logs", BIG.replace("ok", "fine")[:40_000])],
            ],
        },
        "summaries made ahead in the background, applied when due": {
            # A few messages a turn: a turn that ends above ``history.aheadFraction`` asks the
            # summary the lossy tier will need; the app lets it finish (``settled()``; natively
            # ``make_ahead`` and ``offer_summary``) and the turn that reaches the trigger applies
            # it without asking the summarizer itself.
            "options": {"contextWindow": 8_000},
            "summaries": ["## Session Intent\nMade ahead (first).", "## Session Intent\nMade ahead (second)."],
            "background": True,
            "turns": [talk[:6], *[talk[i:i + 2] for i in range(6, 48, 2)]],
        },
        "an image and a pasted log in a user message": {
            "options": {"model": "gpt-4o", "contextWindow": 16_000},
            "turns": [[{"role": "user", "content": [{"type": "text", "text": BIG}, {"type": "image", "image": "aGVsbG8gd29ybGQ=", "mediaType": "image/png"}]}]],
        },
        "a provider refuses the prompt as too long: recovered": {
            # The second turn's prompt is under every trigger by our count, but the provider
            # counted more and refused it: ``recover`` with its error calibrates from its count and
            # compacts harder, every event stamped.
            "options": {"model": "claude-sonnet-4-5", "contextWindow": 32_000},
            "turns": [talk[:12], talk[12:40]],
            "refused": [None, "prompt is too long: 39000 tokens > 32000 maximum"],
        },
        "a provider refuses a prompt with nothing left to compact": {
            # One short message: nothing to compact, the typed ``context_overflow``.
            "options": {"model": "claude-sonnet-4-5", "contextWindow": 8_000},
            "turns": [[{"role": "user", "content": "hi there"}]],
            "refused": ["prompt is too long: 9000 tokens > 8000 maximum"],
        },
        "the app saves the state after each turn, with the provider's usage": {
            # A kept state, and after each turn the provider's count of the prompt
            # (``observeUsage``) and an explicit save (``saveState``): the calibration sample
            # reaches the store, the same file in every host.
            "options": {"model": "gpt-4o", "contextWindow": 16_000},
            "save_after": "/state/app.json",
            "usage": [3_300, 6_800],
            "times": [T0, T0 + 60_000],
            "turns": [talk[:6], talk[6:14]],
        },
    }


#: What each scenario shows: the README's table of features by host is generated from this and
#: from where each scenario runs (every host, but the native one for ``NOT_NATIVE``), and a test
#: keeps the two equal; ``python python/tests/test_behaviour.py`` rewrites the table.
FEATURES: Dict[str, List[str]] = {
    "onPreCompact cancels below the hard limit, is overridden above it": ["`onPreCompact`: a cancel, kept below the hard limit and overridden above it"],
    "onPreCompact's custom summary and instructions": ["`onPreCompact`: a custom summary, no summarizer call"],
    "onPreCompact's instructions reach the summarizer": ["`onPreCompact`: custom instructions in the summary request"],
    "a huge tool result, then more turns": ["Tier 1: a large tool result offloaded to the store, a pointer in its place"],
    "a JSON output with exact numbers and a lone surrogate": ["Tier 1: a JSON output stored byte for byte (exact numbers, lone surrogates)"],
    "tier 2 on a coding session": ["Tier 2: masks and evicted inputs, deferred until they pay"],
    "a chat summarized twice by a scripted summarizer": ["Tier 3: the transcript stored first, then summarized by the app's summarizer, twice"],
    "a summarizer that fails: the heuristic summary": ["Tier 3: a failing summarizer, the heuristic summary instead"],
    "truncate, claude's estimate": ["Tier 3: truncation, counted with a family's estimate (Claude)"],
    "a store that refuses offloads: content stays": ["A store that refuses a write: the content stays in the conversation"],
    "a coding session, then the user is away past the cache's lifetime": ["The host's clock: deferred edits taken once the prompt cache expired"],
    "a summary that continues the agent's cached prompt": ["A summary request that continues the agent's cached prompt"],
    "tool outputs offloaded as they return": ["Tier 1 as a tool returns (`offloadToolOutput`): a large output stored, a preview in its place"],
    "summaries made ahead in the background, applied when due": ["Summaries made ahead of need, off the turn, applied by the call that needs them"],
    "an image and a pasted log in a user message": ["Images counted as images; a pasted log in a user message offloaded"],
    "a provider refuses the prompt as too long: recovered": ["Overflow recovery: the provider's count calibrates, the call compacts harder, its events say so"],
    "a provider refuses a prompt with nothing left to compact": ["Overflow recovery with nothing left to compact: the typed `context_overflow`"],
    "the app saves the state after each turn, with the provider's usage": ["The state in the store: the provider's usage, then an explicit save after the turn"],
    "the state kept in the store, each turn sent twice at once": ["The state in the store: saved by compare-and-set; a double submit finds its own state saved"],
    "the state kept in the store, a second tab's request lost its save": ["The state in the store: a save lost to another request, the call run again on the stored state"],
    "the state kept in the store, a double submit's summary made once": ["The state in the store: a summary lease, two requests of one span ask the summarizer once"],
}

HOSTS = ("npm (Node)", "Python", "native Rust")

#: Scenarios the native host runs with less compared (its summary request has no messages).
NATIVE_PARTLY = {"a summary that continues the agent's cached prompt": "✓ (its request has no continuation messages)"}


def feature_table() -> str:
    """The README's table: each feature, and the hosts whose runs of its scenarios the suite
    compares byte for byte."""
    rows = [
        "| What the behaviour suite runs and compares | " + " | ".join(HOSTS) + " |",
        "|---|" + "---|" * len(HOSTS),
    ]
    for name, features in FEATURES.items():
        hosts = ("✓", "✓", "—" if name in NOT_NATIVE else NATIVE_PARTLY.get(name, "✓"))
        rows += [f"| {feature} | " + " | ".join(hosts) + " |" for feature in features]
    return "\n".join(rows)


README_START, README_END = "<!-- features-by-host: generated by python/tests/test_behaviour.py -->", "<!-- /features-by-host -->"


def readme_table(readme: str) -> str:
    start, end = readme.index(README_START) + len(README_START), readme.index(README_END)
    return readme[start:end].strip()


NODE_SCRIPT = """
import { readFileSync } from 'node:fs';
const cc = await import(process.argv[2]);
await cc.init();
const scenarios = JSON.parse(readFileSync(process.argv[3], 'utf8'));
const out = {};
for (const [name, s] of Object.entries(scenarios)) {
  const memory = new cc.MemoryStore();
  const store = {
    read: (p) => memory.read(p), list: (p) => memory.list(p), delete: (p) => memory.delete(p),
    write: async (p, text) => { if (s.refuse && p.startsWith(s.refuse)) throw new Error('refused'); return memory.write(p, text); },
  };
  let n = 0;
  let asked = [];
  let continued = [];
  const note = (r) => { asked.push(r.prompt); continued.push(r.continuation ? JSON.stringify(r.continuation.messages) : null); };
  const summarize = s.failing_summarizer ? async (r) => { note(r); throw new Error('down'); } : s.summaries ? async (r) => { note(r); return s.summaries[n++ % s.summaries.length]; } : undefined;
  const hook = s.hook ? { onPreCompact: () => s.hook } : {};
  let clock = 0;
  const times = s.times ? { now: () => clock } : {};
  let offloaded = [];
  const returned = s.as_returned ? { onEvent: (e) => { if (e.strategy === 'offload' && offloading) offloaded.push(e); } } : {};
  let offloading = false;
  const options = { ...s.options, store, ...(summarize ? { summarize } : {}), ...hook, ...times, ...returned };
  const compactor = s.state ? undefined : await cc.createCompactor({ ...options, ...(s.save_after ? { statePath: s.save_after } : {}) });
  const history = [];
  const turns = [];
  for (const [t, turn] of s.turns.entries()) {
    if (s.as_returned) {
      // Each tool result as the tool returns it, through offloadToolOutput (as wrapTools).
      offloading = true;
      for (const message of turn) for (const part of message.role === 'tool' ? message.content : []) {
        const value = await compactor.offloadToolOutput(part.toolName, part.toolCallId, part.output.value);
        if (value !== part.output.value) part.output = { type: 'text', value };
      }
      offloading = false;
    }
    history.push(...turn);
    if (s.times) clock = s.times[t];
    let result;
    let events;
    let error = null;
    if (s.refused?.[t]) {
      // The provider refused the turn's prompt: recover with its error.
      try {
        result = await compactor.recover(history, new Error(s.refused[t]));
        events = result.events;
      } catch (e) {
        error = [e.code, e.message];
        events = [];
      }
    } else if (s.state) {
      // Two requests of the turn at once: both load the state before either saves.
      const first = await cc.createCompactor({ ...options, statePath: s.state });
      const second = await cc.createCompactor({ ...options, statePath: s.state });
      const one = await first.manage(history);
      result = await second.manage(s.second ? [...history, s.second] : history);
      events = [...one.events, ...result.events];
    } else {
      result = await compactor.manage(history);
      events = [...offloaded, ...result.events];
      offloaded = [];
      if (s.background) await compactor.settled();
      if (s.usage) {
        compactor.observeUsage({ inputTokens: s.usage[t] });
        await compactor.saveState();
      }
    }
    const files = {};
    for (const path of await memory.list('/')) files[path] = await memory.read(path);
    const stamp = (e) => (e.overflow ? [e.overflow.provider, e.overflow.reportedTokens ?? null, e.overflow.attempt] : null);
    const calibration = compactor ? compactor.state().calibration ?? null : null;
    turns.push({ prompt: result ? JSON.stringify(result.messages) : null, events: events.map((e) => [e.strategy, e.status, e.path ?? null, e.tokensSaved, stamp(e)]), files, asked, continued, error, calibration });
    asked = [];
    continued = [];
  }
  out[name] = turns;
}
process.stdout.write(JSON.stringify(out));
"""


class RefusingStore(MemoryStore):
    def __init__(self, refuse: Optional[str]) -> None:
        super().__init__()
        self.refuse = refuse

    def write(self, path: str, text: str) -> None:
        if self.refuse and path.startswith(self.refuse):
            raise OSError("refused")
        super().write(path, text)


def as_js(value: Any) -> str:
    """JSON as JavaScript's JSON.stringify writes it (compact, non-ASCII as is, lone surrogates
    escaped)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "backslashreplace").decode("utf-8")


def _stamp(event: Dict[str, Any]) -> Optional[List[Any]]:
    """What an event says of the overflow its call recovered from."""
    o = event.get("overflow")
    return None if o is None else [o["provider"], o.get("reportedTokens"), o["attempt"]]


def python_runs(cases: Dict[str, Dict[str, Any]]) -> Dict[str, List[Dict[str, Any]]]:
    out = {}
    for name, s in cases.items():
        store = RefusingStore(s.get("refuse"))
        replies = iter((s.get("summaries") or []) * 10)
        asked: List[str] = []
        continued: List[Optional[str]] = []

        def note(request: Dict[str, Any], asked: List[str] = asked, continued: List[Optional[str]] = continued) -> None:
            asked.append(request["prompt"])
            continuation = request.get("continuation")
            continued.append(None if continuation is None else as_js(continuation["messages"]))

        def summarize(request: Dict[str, Any], replies: Any = replies) -> str:
            note(request)
            return str(next(replies))

        def failing(request: Dict[str, Any]) -> str:
            note(request)
            raise RuntimeError("down")

        chosen = failing if s.get("failing_summarizer") else summarize if s.get("summaries") else None
        hook = s.get("hook")
        times = s.get("times")
        clock = [0]
        def compactor(state_path: Optional[str] = None) -> Compactor:
            return Compactor(
                s["options"],
                store=store,
                **({"summarize": chosen} if chosen else {}),
                **({"on_pre_compact": lambda context, hook=hook: hook} if hook else {}),
                **({"now": lambda clock=clock: clock[0]} if times else {}),
                **({"state_path": state_path} if state_path else {}),
                **({"on_event": lambda e: offloaded.append(e) if offloading[0] else None} if s.get("as_returned") else {}),
            )

        offloaded: List[Dict[str, Any]] = []
        offloading = [False]
        long_lived = None if s.get("state") else compactor(s.get("save_after"))
        history: List[Dict[str, Any]] = []
        turns = []
        for t, turn in enumerate(s["turns"]):
            if s.get("as_returned") and long_lived is not None:
                # Each tool result as the tool returns it, through offload_tool_output.
                offloading[0] = True
                for message in turn:
                    for part in message["content"] if message["role"] == "tool" else []:
                        value = long_lived.offload_tool_output(part["toolName"], part["toolCallId"], part["output"]["value"])
                        if value is not part["output"]["value"]:
                            part["output"] = {"type": "text", "value": value}
                offloading[0] = False
            history.extend(turn)
            if times:
                clock[0] = times[t]
            error = None
            result = None
            if s.get("refused") and s["refused"][t] and long_lived is not None:
                # The provider refused the turn's prompt: recover with its error.
                try:
                    result = long_lived.recover(history, Exception(s["refused"][t]))
                    events = list(result.events)
                except CompactorError as e:
                    error = [e.code, str(e)]
                    events = []
            elif long_lived is None:
                # Two requests of the turn at once: both load the state before either saves.
                first, second = compactor(s["state"]), compactor(s["state"])
                one = first.manage(history)
                result = second.manage([*history, s["second"]] if s.get("second") else history)
                events = [*one.events, *result.events]
            else:
                result = long_lived.manage(history)
                events = [*offloaded, *result.events]
                offloaded.clear()
                if s.get("background"):
                    long_lived.settled()
                if s.get("usage"):
                    long_lived.observe_usage(s["usage"][t])
                    long_lived.save_state()
            files = {path: store.read(path) for path in store.list("/")}
            turns.append(
                {
                    # As JavaScript's JSON.stringify writes it (compact, non-ASCII as is, lone
                    # surrogates escaped).
                    "prompt": None if result is None else as_js(result.messages),
                    "events": [[e["strategy"], e["status"], e.get("path"), e["tokensSaved"], _stamp(e)] for e in events],
                    "files": files,
                    "asked": list(asked),
                    "continued": list(continued),
                    "error": error,
                    "calibration": None if long_lived is None else long_lived.state().get("calibration"),
                }
            )
            asked.clear()
            continued.clear()
        out[name] = turns
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Dict[str, Any]:
    cases = scenarios()
    tmp = tmp_path_factory.mktemp("behaviour")
    data = tmp / "scenarios.json"
    data.write_text(json.dumps(cases), encoding="utf-8")
    script = tmp / "run.mjs"
    script.write_text(NODE_SCRIPT, encoding="utf-8")
    entry = os.path.join(REPO, "js", "dist", "entry", "node.js")
    node = json.loads(subprocess.run(["node", str(script), "file://" + entry, str(data)], check=True, capture_output=True, text=True).stdout)
    native_data = tmp / "native.json"
    native_data.write_text(json.dumps({k: v for k, v in cases.items() if k not in NOT_NATIVE}), encoding="utf-8")
    native = subprocess.run(
        ["cargo", "run", "--quiet", "--example", "behaviour", "--", str(native_data)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert native.returncode == 0, native.stderr[-2000:]
    return {"node": node, "python": python_runs(cases), "native": json.loads(native.stdout)}


@pytest.mark.parametrize("name", list(scenarios()))
def test_every_host_gives_the_same_prompts_events_and_store(runs, name: str) -> None:
    node, python = runs["node"][name], runs["python"][name]
    assert len(node) == len(python)
    for t, (n, p) in enumerate(zip(node, python)):
        assert p["events"] == n["events"], f"turn {t}: events"
        assert p["asked"] == n["asked"], f"turn {t}: the summary requests"
        assert p["continued"] == n["continued"], f"turn {t}: the summary requests' continuations"
        assert sorted(p["files"]) == sorted(n["files"]), f"turn {t}: store paths"
        for path in n["files"]:
            assert p["files"][path] == n["files"][path], f"turn {t}: {path}"
        assert p["prompt"] == n["prompt"], f"turn {t}: the prompt"
        assert p["error"] == n["error"], f"turn {t}: the error"
        assert p["calibration"] == n["calibration"], f"turn {t}: the calibration"
    if name in NOT_NATIVE:
        return
    native = runs["native"][name]
    assert len(native) == len(node)
    for t, (n, r) in enumerate(zip(node, native)):
        assert r["events"] == n["events"], f"turn {t}: native events"
        assert r["asked"] == n["asked"], f"turn {t}: native summary requests"
        assert r["files"] == n["files"], f"turn {t}: native store"
        # serde writes each message's fields in the core's order, JSON.stringify in the app's:
        # the same JSON, compared parsed.
        assert (r["prompt"] and json.loads(r["prompt"])) == (n["prompt"] and json.loads(n["prompt"])), f"turn {t}: native prompt"
        assert r["error"] == n["error"], f"turn {t}: native error"
        assert r["calibration"] == n["calibration"], f"turn {t}: native calibration"


def test_the_scenarios_exercise_every_tier_and_failure(runs) -> None:
    events = {e[0] + ":" + e[1] for turns in runs["node"].values() for turn in turns for e in turn["events"]}
    for wanted in ("offload:applied", "evict-input:applied", "mask:applied", "summarize:applied", "truncate:applied", "offload:failed"):
        assert wanted in events, (wanted, sorted(events))
    # The hook: a cancel kept (a turn with no events while over the trigger), one overridden,
    # and a custom summary in the prompt.
    cancel = runs["node"]["onPreCompact cancels below the hard limit, is overridden above it"]
    assert cancel[0]["events"] == [] and cancel[1]["events"], cancel
    custom = runs["node"]["onPreCompact's custom summary and instructions"]
    assert "Hand-written by the hook." in custom[0]["prompt"] and not any(turn["asked"] for turn in custom)
    steered = runs["node"]["onPreCompact's instructions reach the summarizer"]
    assert any("Additional instructions: Focus on the spreadsheet formulas." in p for turn in steered for p in turn["asked"])
    assert len(runs["native"]) == len(scenarios()) - len(NOT_NATIVE)


def test_the_time_scenario_breaks_only_after_the_cache_expired(runs) -> None:
    turns = runs["node"]["a coding session, then the user is away past the cache's lifetime"]
    # The first two turns stay under tier 2's trigger; the one 30 minutes later takes its edits.
    assert [bool(turn["events"]) for turn in turns[:2]] == [False, False], turns
    assert turns[2]["events"] and all(e[1] == "applied" for e in turns[2]["events"]), turns[2]["events"]


def test_a_second_request_of_a_turn_finds_its_state_saved_or_runs_again(runs) -> None:
    revisions = lambda turns: [json.loads(turn["files"]["/state/compactor.json"])["revision"] for turn in turns]
    double = runs["node"]["the state kept in the store, each turn sent twice at once"]
    # One save a turn: both requests of a turn would save the same text, which the second finds
    # stored (its own, as far as the store can tell); both offloaded what the turn brought.
    assert revisions(double) == [1, 2, 3], revisions(double)
    assert [len(turn["events"]) for turn in double] == [2, 2, 0], [turn["events"] for turn in double]
    tabs = runs["node"]["the state kept in the store, a second tab's request lost its save"]
    # The first turn: the first tab saves (1); the second tab's save over nothing is lost, it
    # runs again on that state, where the first tab's offload is replayed (its answer's only
    # event is the offload of its pasted log) and saves (2). Later turns: the first tab's state
    # already holds the pasted log's offload, so the second tab's rerun has nothing to add.
    assert revisions(tabs) == [2, 3, 4], revisions(tabs)
    first = [(e[0], (e[2] or "").split("/")[1]) for e in tabs[0]["events"]]
    assert first == [("offload", "tool_outputs"), ("offload", "user_messages")], tabs[0]["events"]


def test_a_summary_planned_by_two_requests_is_made_once_under_its_lease(runs) -> None:
    turns = runs["node"]["the state kept in the store, a double submit's summary made once"]
    # Each turn plans a summary in both its requests; the summarizer is asked once a turn.
    assert [len(turn["asked"]) for turn in turns] == [1, 1], [turn["asked"] for turn in turns]
    leases = {path: text for path, text in turns[0]["files"].items() if path.startswith("/state/compactor.json.summaries/")}
    assert list(leases.values()) == ['{"summary":"## Session Intent\\nChat, summarized once for two requests."}'], leases
    assert "summarized once for two requests" in turns[0]["prompt"]


def test_a_continuation_reaches_the_summarizer_in_both_hosts(runs) -> None:
    turns = runs["node"]["a summary that continues the agent's cached prompt"]
    offered = [json.loads(c) for turn in turns for c in turn["continued"] if c is not None]
    assert offered, "a continuation was offered"
    for messages in offered:
        assert messages[0]["role"] == "system" and messages[-1]["role"] == "user"
        assert "Summarize messages" in json.dumps(messages[-1]["content"])


def test_every_scenario_says_what_it_shows_and_the_readme_table_is_generated_from_them() -> None:
    assert set(FEATURES) == set(scenarios()), set(FEATURES) ^ set(scenarios())
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    assert readme_table(readme) == feature_table(), "README.md's table is stale: run python python/tests/test_behaviour.py"


if __name__ == "__main__":
    path = os.path.join(REPO, "README.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start, end = text.index(README_START) + len(README_START), text.index(README_END)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text[:start] + "\n" + feature_table() + "\n" + text[end:])


def test_tool_outputs_offloaded_as_they_return_reach_the_history_as_previews(runs) -> None:
    turns = runs["node"]["tool outputs offloaded as they return"]
    # The offloads ran before the turn's manage: the history it got held previews already.
    assert [e[:2] for e in turns[0]["events"]] == [["offload", "applied"]], turns[0]["events"]
    assert [e[:2] for e in turns[1]["events"]] == [["offload", "applied"]], turns[1]["events"]
    assert len(turns[0]["prompt"]) < len(BIG) / 5 and "a.txt" in turns[1]["prompt"]
    stored = [text for path, text in turns[1]["files"].items() if path.startswith("/tool_outputs/")]
    assert any('"name": "row 2499"' in text for text in stored), list(turns[1]["files"])


def test_summaries_made_ahead_are_applied_without_a_wait(runs) -> None:
    turns = runs["node"]["summaries made ahead in the background, applied when due"]
    applied = [t for t, turn in enumerate(turns) if any(e[:2] == ["summarize", "applied"] for e in turn["events"])]
    asked = [t for t, turn in enumerate(turns) if turn["asked"]]
    # Each summary was asked by an earlier turn than the one that applied it, and no turn that
    # applied one asked the summarizer itself.
    assert applied and asked, (applied, asked)
    assert all(any(a < t for a in asked) for t in applied), (applied, asked)
    assert not set(applied) & set(asked), (applied, asked)


def test_an_overflow_is_recovered_from_the_providers_count_and_nothing_left_is_typed(runs) -> None:
    first, recovered = runs["node"]["a provider refuses the prompt as too long: recovered"]
    [bare] = runs["node"]["a provider refuses a prompt with nothing left to compact"]
    # Under every trigger by our count; the provider's count calibrated, then compacted harder.
    assert first["events"] == [] and first["calibration"] is None, first
    assert recovered["events"] and recovered["error"] is None, recovered
    assert all(e[4] == ["anthropic", 39000, 1] for e in recovered["events"]), recovered["events"]
    assert recovered["calibration"]["samples"] == 1, recovered["calibration"]
    assert len(recovered["prompt"]) < len(json.dumps(chat(24)[:40])), "compacted"
    code, message = bare["error"]
    assert code == "context_overflow" and message.endswith("and nothing is left to compact"), bare


def test_an_explicit_save_after_the_turn_keeps_the_providers_usage(runs) -> None:
    turns = runs["node"]["the app saves the state after each turn, with the provider's usage"]
    saved = [json.loads(turn["files"]["/state/app.json"]) for turn in turns]
    # Each turn's sample reached the store by the save after it.
    assert [state["calibration"]["samples"] for state in saved] == [1, 2], saved
    # Two saves a turn: the call's (its time changed the state), then the app's.
    assert [state["revision"] for state in saved] == [2, 4], saved
    assert [turn["calibration"]["samples"] for turn in turns] == [1, 2]
