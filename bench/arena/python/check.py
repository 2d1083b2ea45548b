"""Runs export.mjs (npm side, `--verify`) and replay.py (Python side) over sessions, windows
and option sets, and prints one line per run and the totals. Exit status 1 if any prompt differs.

    .venv-py/bin/python bench/arena/python/check.py --sessions coding-agent,claude-code-mac-security \\
        --windows 128000,32000 [--preset smart] [--options '{"background":false}'] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)

import replay as arena_replay  # noqa: E402

DEFAULT_SESSIONS = "coding-agent,research-agent,long-chat,swe-astroid-1333,swe-sqlfluff-1733,claude-code-wallpaper,claude-code-chat-export,claude-code-chat-log-action,claude-code-mac-security"


def node() -> str:
    node22 = os.path.join(REPO, ".tools", "node22", "node_modules", ".bin", "node")
    return node22 if os.path.exists(node22) else (shutil.which("node") or "node")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", default=DEFAULT_SESSIONS)
    parser.add_argument("--windows", default="128000,32000")
    parser.add_argument("--preset", default="smart")
    parser.add_argument("--options", default="{}")
    parser.add_argument("--keep", help="keep the exports in this directory")
    args = parser.parse_args()
    out_dir = args.keep or tempfile.mkdtemp(prefix="helper-arena-check-")
    os.makedirs(out_dir, exist_ok=True)
    runs = calls = summaries = background = 0
    failed = []
    for session in args.sessions.split(","):
        for window in args.windows.split(","):
            path = os.path.join(out_dir, f"{session}-{window}-{args.preset}.json")
            t0 = time.monotonic()
            proc = subprocess.run(
                [node(), "--max-old-space-size=8192", os.path.join(HERE, "export.mjs"), "--session", session, "--window", window, "--preset", args.preset, "--options", args.options, "--out", path, "--verify"],
                cwd=REPO,
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                print(f"{session} {window}: export failed: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}")
                failed.append(f"{session} {window}")
                continue
            with open(path) as f:
                data = json.load(f)
            t1 = time.monotonic()
            r = arena_replay.replay(data)
            runs += 1
            calls += r["calls"]
            summaries += r["summaries"]
            background += r["backgroundSummaries"]
            ok = r["equal"] and not r["notes"] and not r["inputDifferences"]
            if not ok:
                failed.append(f"{session} {window}")
            first = r["differences"][0] if r["differences"] else None
            print(
                f"{session} {window} {args.preset} {args.options}{'' if data.get('clock', True) else ' (no clock)'}: {r['calls']}/{r['npmCalls']} calls, "
                f"{r['summaries']} summaries ({r['backgroundSummaries']} background), {r['offloadedAtReturn']} offloaded at return, "
                f"applied {json.dumps(r['applied'], sort_keys=True)}: {'equal' if ok else 'DIFFER'}"
                + (f" (first: call {first['call']}, piece {first['piece']}; {len(r['differences'])} calls)" if first else "")
                + (f" notes: {r['notes'][:3]}" if r["notes"] else "")
                + f" [npm {t1 - t0:.1f} s, python {time.monotonic() - t1:.1f} s]",
                flush=True,
            )
    print(f"{runs} runs, {calls} calls, {summaries} summaries ({background} in the background): {'every prompt digest equal' if not failed else 'DIFFER: ' + ', '.join(failed)}")
    if not args.keep:
        shutil.rmtree(out_dir, ignore_errors=True)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
