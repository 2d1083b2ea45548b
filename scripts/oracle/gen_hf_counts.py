"""Exactness oracle for the Hugging Face families: token counts from the OFFICIAL Python
`tokenizers` (`encode(text, add_special_tokens=False)`), and for Mistral's tekken files from the
official `mistral-common` (`Tekkenizer.encode(text, bos=False, eos=False)`), on the hard strings of
tests/fixtures/token-counts.json (gen_counts.py's cases: NBSP, U+3000, CJK, emoji, CRLF, long
runs, ...) plus code, digit and added-token cases, and optionally a larger generated set.

    gen_hf_counts.py --tokenizers .tools/tokenizers --out tests/fixtures/hf-token-counts.json
    gen_hf_counts.py --tokenizers .tools/tokenizers --generated N --out FILE   # N random strings

Deterministic: the same inputs give byte-identical output. Run through regen.sh.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_counts  # noqa: E402  (the shared cases and the deterministic stream)

FAMILIES = ["llama3", "llama3_1", "llama3_2", "qwen2_5", "qwen3", "deepseek_v3", "gemma3"]
TEKKEN = ["mistral_tekken_240718", "mistral_tekken_240911"]
MAX_FIXTURE_BYTES = 450_000

EXTRA = [
    ("digits_mixed", "0 12 345 6789 01234 567890 1,000,000 3.14159265358979 -0.5e-10 ٣٤٥ १२३ １２３ ²³ ½"),
    ("digits_run_37", "1234567890123456789012345678901234567"),
    ("code_typescript", "export async function f<T extends object>(xs: T[]): Promise<Map<string, T>> {\n"
     "  const m = new Map<string, T>();\n  for (const [i, x] of xs.entries()) m.set(`k${i}`, x);\n"
     "  return m; // done\n}\n"),
    ("code_json_pretty", json.dumps({"a": [1, 2, {"b": None, "c": "d\u00e9"}], "e": {"f": 1.5}}, indent=2)),
    ("code_shell", "#!/usr/bin/env bash\nset -euo pipefail\nfor f in *.txt; do\n\tgrep -c 'x' \"$f\" || true\ndone 2>&1 | sort -n\n"),
    ("added_tokens_in_text", "<|begin_of_text|>hi<|eot_id|> <|im_start|>user\nq<|im_end|> <start_of_turn>user\n<end_of_turn> <think>x</think> <bos><eos>"),
    ("spaces_trailing", "end with spaces   "),
    ("newline_then_spaces_at_end", "a\n   "),
    ("spaces_between_newlines", "a \n \n\t\n  b"),
    ("leading_spaces", "   leading"),
    ("nfc_decomposed", "e\u0301 A\u030a o\u0308 \u1100\u1161\u11a8 n\u0303"),
]


def cases():
    return gen_counts.cases() + EXTRA


def generated(n):
    """n strings drawn from the hard classes: fragments of every case, joined at random."""
    s = gen_counts.Stream("hf-generated")
    pool = [t for _, t in cases() if t]
    frags = []
    for t in pool:
        for _ in range(8):
            a = s.below(len(t))
            frags.append(t[a:a + 1 + s.below(40)])
    seps = ["", " ", "  ", "\n", "\r\n", "\t", "\u00a0", "\u3000", "'s", "123", "<|im_end|>", "\u2581"]
    out = []
    for i in range(n):
        parts = [s.pick(frags) + s.pick(seps) for _ in range(1 + s.below(5))]
        out.append("".join(parts))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizers", required=True, help="directory of <family>/tokenizer.json")
    ap.add_argument("--out", required=True)
    ap.add_argument("--generated", type=int, default=0, help="write N generated strings instead")
    args = ap.parse_args()
    import tokenizers
    import mistral_common
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    toks = {f: tokenizers.Tokenizer.from_file(os.path.join(args.tokenizers, f, "tokenizer.json")) for f in FAMILIES}
    tekken = {f: Tekkenizer.from_file(os.path.join(args.tokenizers, f, "tekken.json")) for f in TEKKEN}
    sources = {}
    for f in FAMILIES + TEKKEN:
        with open(os.path.join(args.tokenizers, f, "SOURCE")) as fh:
            sources[f] = fh.read().strip()

    def counts(text):
        out = {f: len(toks[f].encode(text, add_special_tokens=False).ids) for f in FAMILIES}
        out.update({f: len(tekken[f].encode(text, bos=False, eos=False)) for f in TEKKEN})
        return out

    if args.generated:
        rows = [dict(text=t, **counts(t)) for t in generated(args.generated)]
        data = json.dumps({"tokenizers_version": tokenizers.__version__, "mistral_common_version": mistral_common.__version__,
                           "sources": sources, "cases": rows}, ensure_ascii=False)
    else:
        rows = [dict(name=name, text=text, **counts(text)) for name, text in cases()]
        data = json.dumps({
            "generator": "scripts/oracle/regen.sh",
            "tokenizers_version": tokenizers.__version__,
            "mistral_common_version": mistral_common.__version__,
            "method": "Tokenizer.encode(text, add_special_tokens=False); Tekkenizer.encode(text, bos=False, eos=False)",
            "sources": sources,
            "cases": rows,
        }, ensure_ascii=False, indent=1) + "\n"
        if len(data.encode()) > MAX_FIXTURE_BYTES:
            sys.exit(f"fixture too large: {len(data.encode())} bytes")
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(data)
    os.replace(tmp, args.out)
    print(f"[gen_hf_counts] wrote {args.out}: {len(rows)} strings, tokenizers {tokenizers.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main()
