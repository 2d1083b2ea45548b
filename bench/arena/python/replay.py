"""Replays an arena session exported by ``export.mjs`` through the Python host
(``context_compactor.Compactor``, long-lived, ``manage`` per model call) and compares every
prompt's digest with the npm package's ``prepareStep`` contender's, call by call.

What the Python side does is what the contender (``contenders/ai-sdk.mjs``, host ``long-lived``)
does, with the AI SDK's part done by hand:

- one ``Compactor(model="claude-sonnet-4-5", context_window=window, preset=preset, **options,
  store=MemoryStore(), summarize=..., now=...)`` for the session; the system prompt
  ``compactor.system_prompt(session.system)``; the tools the session's (name, description, JSON
  schema) then the recovery tools (``compactor.tools()``), as the AI SDK lists
  ``{...wrapTools(tools), ...compactor.tools()}``;
- per user turn the raw history plus the user message; per model call ``manage([system,
  *messages])``, the prompt being the system message and what came back; within a turn the next
  call's messages are the ones ``manage`` returned plus the step's assistant message and tool
  results (AI SDK 7: ``prepareStep``'s messages persist into later steps); across turns the raw
  history (user messages, assistant steps, tool results as the tools returned them);
- each tool result through ``offload_tool_output`` (``wrapTools``), then the call's usage through
  ``observe_usage`` (``onStepFinish``: after the step's tools ran), its input tokens the arena's
  count of the prompt (o200k_base per piece, summed, as lib/metrics.mjs counts);
- ``now``: the arena clock's value the npm compactor read at that call (or tool return), from the
  export (the clock is a function of the prompts: equal prompts, equal clock);
- the summarizer: lib/script.mjs ``scriptedSummary`` over the summarizer's prompt in the arena's
  form (lib/prompt.mjs ``fromAiSdk``: the continuation's messages with the agent's tools when the
  request has one, else the plain request), computed here and checked against the npm side's.
  A summary asked in the background (``request["background"]``) answers when the npm side's
  answered on the arena's clock: its thread waits until the replay reaches the call before which
  the npm compactor had it (``readyBefore``), then the replay waits for the thread, so the Python
  compactor has it from the same call on, never earlier.

The digest of a prompt is lib/metrics.mjs's: sha1 of ``pieces(prompt).join("\\0")`` (tools JSON,
system text, one ``role\\ntext`` per message), 12 hex.

    python bench/arena/python/replay.py EXPORT.json [--dump-call K --dump-dir D]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Sequence

from context_compactor import Compactor, MemoryStore, count_tokens

# --- lib/prompt.mjs, lib/script.mjs, lib/metrics.mjs, line for line ---------------------------


def js_json(value: Any) -> str:
    """``JSON.stringify`` for the JSON values the sessions hold."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def call_text(id: str, name: str, input: Any) -> str:
    return f'\n<tool_call id="{id}" name="{name}">{input if isinstance(input, str) else js_json(input if input is not None else {})}</tool_call>'


def result_text(id: str, value: str) -> str:
    return f'<tool_result id="{id}">{value}</tool_result>\n'


def tools_text(definitions: Sequence[Dict[str, Any]]) -> str:
    return js_json([{"name": d["name"], "description": d.get("description") or "", "parameters": d.get("parameters") or {}} for d in definitions])


def js_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return js_json(value)


def output_value(output: Any) -> str:
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    kind = output.get("type")
    if kind in ("text", "error-text"):
        return js_string(output.get("value"))
    if kind in ("json", "error-json"):
        return js_json(output.get("value"))
    if kind == "content":
        return "".join(p["text"] if p.get("type") == "text" else f"[{p.get('type')}]" for p in output["value"])
    if kind == "execution-denied":
        return f"[denied] {output.get('reason') or ''}"
    return js_json(output)


def parts_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(p["text"] if p.get("type") in ("text", "reasoning") else f"[{p.get('type')}]" for p in content)


def from_ai_sdk(prompt: Sequence[Dict[str, Any]], tools: Sequence[Dict[str, Any]] = ()) -> Dict[str, Any]:
    system: List[str] = []
    messages: List[Dict[str, Any]] = []
    for m in prompt:
        if m["role"] == "system":
            system.append(m["content"] if isinstance(m["content"], str) else parts_text(m["content"]))
            continue
        text = ""
        calls: List[str] = []
        results: List[str] = []
        parts = [{"type": "text", "text": m["content"]}] if isinstance(m["content"], str) else m["content"]
        for p in parts:
            if p["type"] in ("text", "reasoning"):
                text += p["text"]
            elif p["type"] == "tool-call":
                calls.append(p["toolCallId"])
                text += call_text(p["toolCallId"], p["toolName"], p.get("input"))
            elif p["type"] == "tool-result":
                results.append(p["toolCallId"])
                text += result_text(p["toolCallId"], output_value(p.get("output")))
            else:
                text += f"[{p['type']}]"
        messages.append({"role": m["role"], "text": text, "calls": calls, "results": results})
    defs = [{"name": t["name"], "description": t.get("description"), "parameters": t.get("inputSchema", t.get("parameters"))} for t in tools]
    return {"tools": tools_text(defs), "system": "\n\n".join(system), "messages": messages}


def pieces(prompt: Dict[str, Any]) -> List[str]:
    return [prompt["tools"], prompt["system"], *(f"{m['role']}\n{m['text']}" for m in prompt["messages"])]


def utf8(text: str) -> bytes:
    # Node's Hash.update(string) writes UTF-8, a lone surrogate as U+FFFD.
    return text.encode("utf-8", errors="surrogatepass") if not _has_lone_surrogate(text) else text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


def _has_lone_surrogate(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def sha1(text: str) -> str:
    return hashlib.sha1(utf8(text)).hexdigest()


def digest(ps: Sequence[str]) -> str:
    return sha1("\u0000".join(ps))[:12]


def fnv(text: str) -> str:
    """lib/script.mjs ``fnv``: FNV-1a over UTF-16 code units."""
    h = 0x811C9DC5
    data = text.encode("utf-16-le", errors="surrogatepass")
    for i in range(0, len(data), 2):
        h = ((h ^ (data[i] | (data[i + 1] << 8))) * 0x01000193) & 0xFFFFFFFF
    return f"{h:08x}"


SUMMARY_BODY = "\n".join(
    [
        "## Session intent",
        "The user is working with the agent on a long task; the requests so far are addressed above this summary.",
        "## Progress",
        "The agent used its tools to gather information and made the changes the user asked for. Outputs of earlier tool calls are not repeated here.",
        "## Decisions",
        "The approach discussed earlier stands; nothing was reverted.",
        "## Next steps",
        "Continue with the latest request. Re-run tools if earlier details are needed.",
    ]
)


def js_length(text: str) -> int:
    return len(text.encode("utf-16-le", errors="surrogatepass")) // 2


def scripted_summary(input_text: str) -> str:
    return f"Summary {fnv(input_text)} of {js_length(input_text)} characters.\n{SUMMARY_BODY}"


def canonical(value: Any) -> str:
    """export.mjs ``canonical``: keys sorted."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def message_digest(message: Any) -> str:
    return sha1(canonical(message))[:12]


_counts: Dict[str, int] = {}


def tokens(text: str) -> int:
    n = _counts.get(text)
    if n is None:
        n = count_tokens(text)
        if len(text) > 64:
            _counts[text] = n
    return n


# --- the replay -------------------------------------------------------------------------------


class Mismatch(AssertionError):
    pass


def replay(data: Dict[str, Any], *, dump_call: Optional[int] = None, dump_dir: str = "/tmp/helper-arena-dump", stop_at_first: bool = False, wait_s: float = 60.0) -> Dict[str, Any]:
    """Runs the export through the Python host. Returns ``{calls, equal, differences,
    digests, ...}``; ``differences`` name each call whose digest differs (its first differing
    piece: 0 tools, 1 system, 2 + i message i)."""
    calls_npm: List[Dict[str, Any]] = data["calls"]
    summaries_npm: List[Dict[str, Any]] = data["summaries"]
    clock = {"now": calls_npm[0]["now"] if calls_npm else 0}
    notes: List[str] = []
    asked: List[Dict[str, Any]] = []  # the Python summarizer's calls, in order
    lock = threading.Lock()
    # One gate per npm summary: a Python summary asked in the background is matched to the npm
    # one with the same prompt (unclaimed, in order) and answers when the replay opens its gate.
    gates = [threading.Event() for _ in summaries_npm]
    claimed: set = set()

    def summary_prompt(request: Dict[str, Any]) -> Dict[str, Any]:
        continuation = request.get("continuation")
        if isinstance(continuation, dict):
            return from_ai_sdk(continuation["messages"], continuation.get("tools") or tool_defs)
        return from_ai_sdk([{"role": "system", "content": request["system"]}, *request["messages"]])

    def summarize(request: Dict[str, Any]) -> str:
        prompt = summary_prompt(request)
        text = scripted_summary("\n".join(pieces(prompt)))
        background = bool(request.get("background"))
        record: Dict[str, Any] = {"background": background, "continuation": isinstance(request.get("continuation"), dict), "promptDigest": digest(pieces(prompt)), "text": text}
        with lock:
            record["index"] = len(asked)
            asked.append(record)
            match = next((s["index"] for s in summaries_npm if s["index"] not in claimed and s["promptDigest"] == record["promptDigest"] and s["background"] == background), None)
            if match is not None:
                claimed.add(match)
        if match is None:
            theirs = summaries_npm[record["index"]] if record["index"] < len(summaries_npm) else None
            diff = "" if theirs is None else ", ".join(f"{key}: npm {theirs.get(key)!r:.60}, python {record[key]!r:.60}" for key in ("background", "continuation", "promptDigest") if theirs.get(key) != record[key])
            notes.append(f"summary {record['index']} (background {background}): no npm summary with this prompt" + (f" (npm summary {record['index']}: {diff})" if diff else ""))
            return text
        if summaries_npm[match]["text"] != text:
            notes.append(f"summary {record['index']}: the text differs from npm summary {match}'s")
        if background and not gates[match].wait(wait_s):
            notes.append(f"summary {record['index']}: npm summary {match}'s gate never opened")
        return text

    store = MemoryStore()
    compactor = Compactor(
        model=data["model"],
        context_window=data["window"],
        preset=data["preset"],
        **data.get("options", {}),
        store=store,
        summarize=summarize,
        now=(lambda: clock["now"]) if data.get("clock", True) else None,
    )
    recovery = compactor.tools()
    tool_defs = [{"type": "function", "name": t["name"], "description": t["description"], "inputSchema": t["inputSchema"]} for t in data["tools"]] + [
        {"type": "function", "name": name, "description": t.description, "inputSchema": t.input_schema} for name, t in recovery.items()
    ]
    system_text = compactor.system_prompt(data["system"])
    if sha1(system_text)[:12] != data["instructionsDigest"]:
        notes.append("the system prompt differs from the npm side's")
    system = {"role": "system", "content": system_text}
    outputs: Dict[str, Any] = data["outputs"]
    tool_calls_npm: Dict[str, Any] = data["toolCalls"]

    released: set = set()
    npm_background = [s["index"] for s in summaries_npm if s["background"]]
    threads: List[threading.Thread] = []  # the Python host's background runs, in the order made

    def summary_threads() -> List[threading.Thread]:
        return [t for t in threading.enumerate() if t.name == "context-compactor summary"]

    def release_ready(k: int) -> None:
        """Before call k: the background summaries the npm compactor had by then, the Python
        compactor has too (the m-th background run is matched to the npm side's m-th)."""
        for s in summaries_npm:
            if not s["background"] or s["index"] in released or s.get("readyBefore") is None or s["readyBefore"] > k:
                continue
            released.add(s["index"])
            gates[s["index"]].set()
            m = npm_background.index(s["index"])
            if m >= len(threads):
                notes.append(f"npm summary {s['index']} (background, ready before call {k}): the Python host asked none")
                continue
            threads[m].join(wait_s)
            if threads[m].is_alive():
                notes.append(f"npm summary {s['index']}: the Python host's background run did not end")

    digests: List[str] = []
    differences: List[Dict[str, Any]] = []
    input_differences: List[Dict[str, Any]] = []
    history: List[Dict[str, Any]] = []
    applied: Dict[str, int] = {}  # the Python host's applied events, by strategy
    offloaded = 0  # tool results offload_tool_output replaced by a preview
    k = 0
    for t, turn in enumerate(data["turns"]):
        history.append({"role": "user", "content": turn["user"]})
        messages = list(history)
        for s, step in enumerate(turn["steps"]):
            if k >= len(calls_npm):
                raise Mismatch(f"call {k}: the npm side made {len(calls_npm)} calls")
            theirs = calls_npm[k]
            release_ready(k)
            clock["now"] = theirs["now"]
            given = [message_digest(m) for m in messages]
            if given != theirs["input"]:
                first = next((i for i, (a, b) in enumerate(zip(given, theirs["input"])) if a != b), min(len(given), len(theirs["input"])))
                input_differences.append({"call": k, "turn": t, "step": s, "message": first, "python": len(given), "npm": len(theirs["input"])})
            before = set(summary_threads())
            result = compactor.manage([system, *messages])
            threads.extend(th for th in summary_threads() if th not in before)
            sent = list(result.messages)
            prompt = from_ai_sdk(sent, tool_defs)
            ps = pieces(prompt)
            d = digest(ps)
            digests.append(d)
            if k == dump_call:
                os.makedirs(dump_dir, exist_ok=True)
                with open(os.path.join(dump_dir, f"python-call-{k}.json"), "w") as f:
                    json.dump({"pieces": ps, "input": messages, "output": sent}, f, ensure_ascii=False, indent=1)
            if d != theirs["digest"]:
                ours_p = [sha1(p)[:12] for p in ps]
                first = next((i for i, (a, b) in enumerate(zip(ours_p, theirs["pieceDigests"])) if a != b), min(len(ours_p), len(theirs["pieceDigests"])))
                differences.append({"call": k, "turn": t, "step": s, "piece": first, "pieces": [len(ours_p), len(theirs["pieceDigests"])], "events": [e.get("strategy") for e in result.events]})
            for e in result.events:
                if e.get("status") == "applied":
                    applied[e["strategy"]] = applied.get(e["strategy"], 0) + 1
            used = sum(tokens(p) for p in ps)
            if used != theirs["tokens"]:
                notes.append(f"call {k}: tokens {used} (npm {theirs['tokens']})")
            # The step: the assistant message, then its tools' results (offloaded at return).
            assistant = {"role": "assistant", "content": step["content"]}
            results = []
            for part in step["content"]:
                if part["type"] != "tool-call":
                    continue
                call_id = part["toolCallId"]
                info = tool_calls_npm.get(call_id, {})
                if "now" in info:
                    clock["now"] = info["now"]
                out = compactor.offload_tool_output(part["toolName"], call_id, outputs[call_id])
                offloaded += out != outputs[call_id]
                if info.get("returned") is not None and sha1(out if isinstance(out, str) else js_json(out))[:12] != info["returned"]:
                    notes.append(f"tool call {call_id} (call {k}): offload_tool_output returned something else than wrapTools")
                results.append({"type": "tool-result", "toolCallId": call_id, "toolName": part["toolName"], "output": {"type": "text", "value": out} if isinstance(out, str) else {"type": "json", "value": out}})
            step_messages = [assistant] + ([{"role": "tool", "content": results}] if results else [])
            compactor.observe_usage(used)  # onStepFinish: the step's usage, after its tools ran
            if not sent or sent[0].get("role") != "system" or sent[0].get("content") != system_text:
                raise Mismatch(f"call {k}: manage did not return the system message first")
            messages = [*sent[1:], *step_messages]
            history.extend(step_messages)
            k += 1
        if stop_at_first and differences:
            break
    # Open every gate left so no thread waits on.
    for g in gates:
        g.set()
    compactor.settled()
    compactor.close()
    equal = not differences and len(digests) == len(calls_npm) and digests == data["promptDigests"]
    return {
        "session": data["session"],
        "window": data["window"],
        "preset": data["preset"],
        "options": data.get("options", {}),
        "calls": len(digests),
        "npmCalls": len(calls_npm),
        "equal": equal,
        "differences": differences,
        "inputDifferences": input_differences,
        "summaries": len(asked),
        "npmSummaries": len(summaries_npm),
        "backgroundSummaries": sum(1 for a in asked if a["background"]),
        "applied": applied,
        "offloadedAtReturn": offloaded,
        "notes": notes,
        "digests": digests,
    }


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("export", nargs="+")
    parser.add_argument("--dump-call", type=int)
    parser.add_argument("--dump-dir", default="/tmp/helper-arena-dump")
    args = parser.parse_args(argv)
    ok = True
    for path in args.export:
        with open(path) as f:
            data = json.load(f)
        t0 = time.monotonic()
        r = replay(data, dump_call=args.dump_call, dump_dir=args.dump_dir)
        ok = ok and r["equal"]
        print(
            f"{r['session']} {r['window']} {r['preset']} {json.dumps(r['options'])}: {r['calls']}/{r['npmCalls']} calls, "
            f"{r['summaries']}/{r['npmSummaries']} summaries ({r['backgroundSummaries']} in the background), "
            f"{r['offloadedAtReturn']} offloaded at return, applied {json.dumps(r['applied'], sort_keys=True)}; "
            f"digests {'equal' if r['equal'] else 'DIFFER'}; {time.monotonic() - t0:.1f} s"
        )
        for d in r["differences"][:10]:
            print(f"  call {d['call']} (turn {d['turn']}, step {d['step']}): first differing piece {d['piece']} (0 tools, 1 system, 2+i message i), pieces python/npm {d['pieces']}, events {d['events']}")
        if len(r["differences"]) > 10:
            print(f"  ... {len(r['differences'])} calls differ in all")
        for d in r["inputDifferences"][:5]:
            print(f"  input of call {d['call']} (turn {d['turn']}, step {d['step']}) differs from message {d['message']} (python {d['python']} messages, npm {d['npm']})")
        for n in r["notes"][:20]:
            print(f"  note: {n}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
