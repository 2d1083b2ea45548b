"""Exactness oracle: expected token counts from the OFFICIAL Python `tiktoken`.

Run through scripts/oracle/regen.sh (it sets up the venv and the rank-file
cache). Modes:

    gen_counts.py --check-cache                # exit 0 iff both encodings load offline
    gen_counts.py --seed-cache --rank-dir DIR  # load DIR/<name>.tiktoken through tiktoken's
                                               # loader (SHA-256 checked) into TIKTOKEN_CACHE_DIR
    gen_counts.py --out tests/fixtures/token-counts.json

Network is never used: tiktoken's `read_file` is replaced by one that serves
only files from --rank-dir and fails otherwise, so the encodings come either
from the verified cache or from the given directory. tiktoken's
`read_file_cached` still checks the hard-coded SHA-256 in both cases.

Everything below is deterministic (no `random`, no time, no dict-order games):
running twice yields byte-identical output.
"""

import argparse
import base64
import hashlib
import json
import os
import sys

ENCODINGS = ["o200k_base", "cl100k_base"]
MAX_FIXTURE_BYTES = 400_000


# ---------------------------------------------------------------------------
# offline tiktoken
# ---------------------------------------------------------------------------
def load_encodings(rank_dir=None):
    if "TIKTOKEN_CACHE_DIR" not in os.environ:
        sys.exit("TIKTOKEN_CACHE_DIR must be set (use scripts/oracle/regen.sh)")
    import tiktoken
    import tiktoken.load as tl

    def read_file(blobpath):
        name = blobpath.rsplit("/", 1)[-1]
        if rank_dir is not None:
            p = os.path.join(rank_dir, name)
            if os.path.exists(p):
                with open(p, "rb") as f:
                    return f.read()
        raise FileNotFoundError(f"offline: {blobpath} is not in TIKTOKEN_CACHE_DIR "
                                f"and no --rank-dir provides {name}")

    tl.read_file = read_file  # read_file_cached() looks it up at call time
    return tiktoken, {name: tiktoken.get_encoding(name) for name in ENCODINGS}


# ---------------------------------------------------------------------------
# deterministic pseudo-random stream (sha256 counter mode; stable everywhere)
# ---------------------------------------------------------------------------
class Stream:
    def __init__(self, seed):
        self.seed = seed.encode()
        self.counter = 0
        self.buf = b""

    def bytes(self, n):
        while len(self.buf) < n:
            self.buf += hashlib.sha256(self.seed + self.counter.to_bytes(8, "big")).digest()
            self.counter += 1
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def below(self, n):
        return int.from_bytes(self.bytes(4), "big") % n

    def pick(self, seq):
        return seq[self.below(len(seq))]


# ---------------------------------------------------------------------------
# case texts
# ---------------------------------------------------------------------------
NBSP = "\u00a0"
IDSP = "\u3000"
ZWJ = "\u200d"

JSON_MINIFIED = json.dumps(
    {
        "id": "chatcmpl-9xYz",
        "object": "chat.completion",
        "created": 1718000000,
        "model": "gpt-4o-2024-05-13",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello! How can I help you today? 😊\nLine two\t\"quoted\""},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 13, "completion_tokens": 7, "total_tokens": 20},
        "tags": ["a", "b", "ünïcödé", "日本", ""],
        "nested": {"deep": {"deeper": {"value": [1, 2.5, -3e-7, True, False, None]}}},
    },
    separators=(",", ":"),
    ensure_ascii=False,
)

CODE_RUST = """\
use std::collections::HashMap;

/// Counts tokens, fast.
#[derive(Debug, Clone, Default)]
pub struct Counter<'a> {
    ranks: HashMap<&'a [u8], u32>,
    cache: Vec<Option<usize>>,
}

impl<'a> Counter<'a> {
    pub fn count(&self, text: &str) -> usize {
        let mut n = 0usize;
        for piece in text.split_whitespace() {
            match self.ranks.get(piece.as_bytes()) {
                Some(_) => n += 1,
                None => {
                    // fall back to byte-pair merging
                    n += piece.len().div_ceil(4);
                }
            }
        }
        n
    }
}

fn main() {
    let c = Counter::default();
    println!("{}", c.count("hello world\\n"));
    assert_eq!(0x1F_u8 as char, '\\u{1f}');
}
"""

CODE_PYTHON = """\
import re
from dataclasses import dataclass, field


@dataclass
class Node:
    name: str
    children: list["Node"] = field(default_factory=list)

    def walk(self, depth=0):
        yield depth, self
        for child in self.children:
            yield from child.walk(depth + 1)


def parse(text: str) -> Node:
    root = Node("root")
    stack = [(-1, root)]
    for line in text.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        node = Node(line.strip())
        stack[-1][1].children.append(node)
        stack.append((indent, node))
    return root


if __name__ == "__main__":
    tree = parse("a\\n  b\\n    c\\n  d\\n")
    for d, n in tree.walk():
        print("    " * d + n.name, f"{d=}", r'\\d+', b'\\x00')
"""

CJK_ZH = "我们正在测试中文分词。人工智能（AI）正在改变世界！今天是2024年1月15日，天气晴朗，气温零下三度。“引号”和《书名号》也要处理。"
CJK_JA = "こんにちは、世界！カタカナとひらがなと漢字が混ざった文章です。東京タワーは３３３メートル。ｶﾀｶﾅ（半角）もあります。ーっ！"
CJK_KO = "안녕하세요, 세계! 한국어 토큰화 테스트입니다. 대한민국의 수도는 서울입니다. ㄱㄴㄷㄹ ㅏㅑㅓㅕ 한글 자모."
ARABIC = "مرحبا بالعالم! هذا نص عربي لاختبار الترميز. اَلْعَرَبِيَّةُ لُغَةٌ جَمِيلَةٌ. الأرقام: ٠١٢٣٤٥٦٧٨٩."
HEBREW = "שלום עולם! זהו טקסט בעברית לבדיקת הטוקנייזר. בְּרֵאשִׁית בָּרָא אֱלֹהִים."
DEVANAGARI = "नमस्ते दुनिया! यह हिंदी में एक परीक्षण वाक्य है। क्षत्रिय, ज्ञान, श्री, द्वार। संख्या: १२३४५।"
THAI = "สวัสดีชาวโลก ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ ทดสอบการตัดคำ กรุงเทพมหานคร ๑๒๓๔๕"
EMOJI_ZWJ_FAMILY = "\U0001F468\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466"  # 👨‍👩‍👧‍👦
EMOJI_RAINBOW_FLAG = "\U0001F3F3\ufe0f\u200d\U0001F308"  # 🏳️‍🌈
MATH = "∀x∈ℝ: x² ≥ 0, ∑ᵢ₌₁ⁿ i = n(n+1)/2, ∫₀^∞ e^{−x²} dx = √π⁄2, A ⊆ B ∪ C, ¬(p ∧ q) ⇔ ¬p ∨ ¬q, ∂f/∂x, ∇·E = ρ/ε₀, 3 × 4 ÷ 2 ≠ 7 ≈ 6.9, ∞ ≤ ℵ₀?"


def base64_blob():
    return base64.b64encode(Stream("base64-blob").bytes(3000)).decode("ascii")


WORDS = (
    "the of and to in is that for it as was with be by on not he this are or his from at which but have an "
    "they you were her she there been one all we their has would when if so no will more can about said "
    "tokenizer encoding merge rank byte pair regex pattern vocabulary unicode whitespace boundary exact count "
    "performance benchmark streaming buffer allocation iterator closure lifetime trait generic compile runtime"
).split()

UNICODE_LINES = [
    CJK_ZH, CJK_JA, CJK_KO, ARABIC, HEBREW, DEVANAGARI, THAI, MATH,
    "Grüße aus Köln — naïve café, résumé, façade, Ångström, Øresund, Łódź, Ærø.",
    "Русский текст: съешь же ещё этих мягких французских булок, да выпей чаю.",
    "Ελληνικά: Ξεσκεπάζω την ψυχοφθόρα βδελυγμία. ΆΈΉΊΌΎΏ ϊϋ.",
    "Emoji: " + EMOJI_ZWJ_FAMILY + " " + EMOJI_RAINBOW_FLAG + " 👍🏽 🇯🇵🇧🇷 🧑‍💻 ❤️‍🔥 🐻‍❄️",
    "Spaces:" + NBSP + "nbsp" + NBSP * 3 + "run" + IDSP + "ideographic" + IDSP * 2 + "end\u2028ls\u2029ps",
    "Zero\u200bwidth\u200cjoiners\u200dand\u2060word\ufeffjoiner; e\u0301 vs é; İstanbul ıi; 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𠜎",
]


def sentence(s):
    n = 4 + s.below(14)
    words = [s.pick(WORDS) for _ in range(n)]
    if s.below(5) == 0:
        words.insert(s.below(n), str(s.below(100000)))
    if s.below(6) == 0:
        words.insert(s.below(n), s.pick(["don't", "it's", "we're", "they've", "I'm", "you'll", "he'd", "CAN'T"]))
    text = " ".join(words)
    return text[0].upper() + text[1:] + s.pick([".", ".", ".", "!", "?", ";", ":", "..."])


def long_document(target_bytes=80_000):
    """~80 KB mixed document: prose, code, JSON, unicode, odd whitespace."""
    s = Stream("long-document")
    parts = []
    size = 0
    section = 0
    while size < target_bytes:
        kind = section % 6
        if kind == 0:
            p = "## Section %d: %s %s\n\n" % (section, s.pick(WORDS).title(), s.pick(WORDS))
            p += "\n\n".join(" ".join(sentence(s) for _ in range(2 + s.below(5))) for _ in range(2 + s.below(3)))
        elif kind == 1:
            fn = "%s_%s" % (s.pick(WORDS), s.pick(WORDS))
            p = "```rust\nfn %s(input: &str) -> Result<usize, Error> {\n" % fn
            for i in range(2 + s.below(6)):
                p += "    let v%d = input.len() * %d + 0x%X; // %s\n" % (i, s.below(1000), s.below(65536), sentence(s))
            p += "    Ok(v0)\n}\n```"
        elif kind == 2:
            obj = {
                "id": s.below(10**9),
                "name": " ".join(s.pick(WORDS) for _ in range(3)),
                "score": s.below(10**6) / 1000,
                "tags": [s.pick(WORDS) for _ in range(s.below(5))],
                "text": s.pick(UNICODE_LINES),
                "ok": s.below(2) == 1,
            }
            if s.below(2):
                p = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
            else:
                p = json.dumps(obj, ensure_ascii=False, indent=2)
        elif kind == 3:
            p = "\n".join(s.pick(UNICODE_LINES) for _ in range(2 + s.below(3)))
        elif kind == 4:
            p = "```python\ndef %s(xs):\n" % s.pick(WORDS)
            p += "\tfor x in xs:\n\t\tif x %% %d == 0:\n\t\t\tyield x  # %s\n" % (1 + s.below(9), sentence(s))
            p += "    return [y ** 2 for y in range(%d)]\n```" % s.below(100)
        else:
            items = []
            for i in range(3 + s.below(5)):
                ws = s.pick([" ", "  ", "\t", NBSP, IDSP, " " + NBSP])
                items.append("-%s%s%s%s" % (ws, sentence(s), s.pick(["", " ", "  ", "\t"]), s.pick(["", "\r"])))
            p = "\n".join(items)
        sep = s.pick(["\n\n", "\n\n", "\n", "\r\n\r\n", "\n\n\n"])
        parts.append(p + sep)
        size += len((p + sep).encode("utf-8"))
        section += 1
    return "".join(parts)


MIX_EVERYTHING = (
    "Hello, world! I'M here & you're THERE. 3.14159 ≈ π; 1234567890.\r\n"
    + "\tTab\u00a0nbsp\u3000ideo " + EMOJI_ZWJ_FAMILY + EMOJI_RAINBOW_FLAG + "👍🏿🇺🇦\n"
    + "中文日本語한국어 العربية עברית हिन्दी ไทย 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𠜎\u2028"
    + "e\u0301 İı \u200b\u200d\ufeff {\"k\":[1,2,{\"v\":null}]} fn main() { println!(\"hi\"); }\r"
    + "https://example.com/a?b=c#d    \n\n\n   end  "
)


def cases():
    c = [
        # trivial
        ("empty", ""),
        ("single_space", " "),
        ("single_newline", "\n"),
        ("ascii_hello", "Hello, world!"),
        # NBSP
        ("nbsp_run_1", NBSP),
        ("nbsp_run_7", NBSP * 7),
        ("nbsp_run_1000", NBSP * 1000),
        ("nbsp_mixed_spaces", "a" + NBSP + " " + NBSP + "b  " + NBSP * 2 + " c " + NBSP + " " * 3 + NBSP),
        ("nbsp_between_words", "Price:" + NBSP + "100" + NBSP + "€ and" + NBSP + "more" + NBSP * 3 + "text " + NBSP + " end" + NBSP),
        ("nbsp_around_newlines", NBSP * 2 + "hello" + NBSP + "\n" + NBSP + "world" + NBSP * 2 + "\n\n" + NBSP),
        # U+3000
        ("ideographic_space_1", IDSP),
        ("ideographic_space_run_50", IDSP * 50),
        ("ideographic_space_mixed", "日本語" + IDSP + "テキスト" + IDSP * 2 + "です。 " + IDSP + "abc" + IDSP + " " + IDSP * 3 + "\n" + IDSP),
        # CJK
        ("cjk_chinese", CJK_ZH),
        ("cjk_japanese_kana", CJK_JA),
        ("cjk_korean", CJK_KO),
        # emoji
        ("emoji_basic", "😀😃😄 🚀🔥💯 ✨ ☺ ☺️ ❤ ❤️ 🫠"),
        ("emoji_zwj_family", EMOJI_ZWJ_FAMILY),
        ("emoji_zwj_rainbow_flag", EMOJI_RAINBOW_FLAG),
        ("emoji_zwj_sequences_in_text", "Team: 👩‍💻 coding, 🧑‍🚀 flying, ❤️‍🔥 love, 🐻‍❄️ bear, " + EMOJI_ZWJ_FAMILY * 3 + "!"),
        ("emoji_skin_tones", "👍🏻👍🏼👍🏽👍🏾👍🏿 👋🏽 hi 🤝🏿 🧑🏾‍🤝‍🧑🏻"),
        ("emoji_flags", "🇺🇸🇯🇵🇩🇪🇫🇷🇧🇷🇮🇳 🇺🇦 and 🏴\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F Scotland"),
        # line endings / whitespace
        ("line_endings_crlf", "line one\r\nline two\r\n\r\nline three\r\n"),
        ("line_endings_lone_cr", "line one\rline two\r\rline three\r"),
        ("line_endings_mixed", "a\r\n\nb\n\r\nc\r\r\n\n\n d \r\n  \r\n\te\n\r"),
        ("tabs", "\tindented\n\t\tdouble\n\t \t mixed\t\tend\t"),
        ("whitespace_before_word", "    \n\n   x  \t\n  y   z\n \n"),
        ("whitespace_unicode_mix", " \t\n\r" + NBSP + IDSP + "\u2028 \u2009\u200a\u202f\u205f\u1680 x \u0085 y\u000b\u000c"),
        # long runs
        ("run_a_5000", "a" * 5000),
        ("run_space_3000", " " * 3000),
        ("run_space_3000_then_word", " " * 3000 + "word"),
        ("run_newline_500", "\n" * 500),
        ("run_digits_2000", "1234567890" * 200),
        ("run_exclamation_1000", "!" * 1000),
        # structured / code
        ("base64_blob", base64_blob()),
        ("json_minified", JSON_MINIFIED),
        ("code_rust", CODE_RUST),
        ("code_python", CODE_PYTHON),
        ("html_markup", '<!DOCTYPE html><html lang="en"><body><div class="x" data-id=\'42\'>Hello&nbsp;world &amp; &#x1F600;</div><br/></body></html>'),
        # contractions
        ("contractions_lower", "I'm sure you're right; we've said it's fine, they'll go, she'd know, don't worry, can't stop."),
        ("contractions_upper", "I'M SURE YOU'RE RIGHT; WE'VE SAID IT'S FINE, THEY'LL GO, SHE'D KNOW, DON'T WORRY, CAN'T STOP."),
        ("contractions_mixed_case", "'S 's 'T 't don'T Don'T I'M I'm 'Ll 'lL 'll 'LL 'rE 'Re 'VE 've 'D 'd 'M 'm '' 'x 'sS"),
        ("contractions_edge", "rock'n'roll o'clock y'all ma'am 'tis '90s students' it’s don’t ''s ' s"),
        # scripts / unicode features
        ("turkish_dotted_i", "İstanbul ırmak İİİ ııı İı DİYARBAKIR ıİ iİ Iı ışık IŞIK"),
        ("combining_marks", "e\u0301 cafe\u0301 n\u0303 a\u0300\u0301\u0302\u0303\u0304 x\u0336\u0336\u0336 Z\u0324\u0354\u0367\u0311\u0313a\u0308\u0356\u032d\u0308\u0307lgo \u0301 start"),
        ("precomposed_accents", "café naïve résumé Ångström façade coöperate Ǆ ǅ ǆ ﬁ ﬂ ß ẞ"),
        ("line_paragraph_separators", "a\u2028b\u2029c \u2028\u2029 \u2028\n\u2029 end\u2028"),
        ("zero_width_chars", "zero\u200bwidth\u200cnon\u200djoiner\u2060word\ufeffbom \u200b\u200b\u200b \u200e\u200f \u00ad soft\u00adhyphen"),
        # U+FEFF is whitespace to ECMAScript \s but NOT Unicode White_Space (tiktoken): JS-regex ports diverge here
        ("bom_feff", "\ufeffstart word\ufeffbom x \ufeff y \ufeff\ufeff end\ufeff"),
        ("rtl_arabic", ARABIC),
        ("rtl_hebrew", HEBREW),
        ("bidi_mixed", "English עברית English العربية 123 ‏mark‎ \u202bembed\u202c \u2067isolate\u2069"),
        ("devanagari", DEVANAGARI),
        ("thai", THAI),
        ("math_symbols", MATH),
        ("non_bmp_fraktur", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢"),
        ("non_bmp_cjk_ext_b", "𠜎𠜱𠝹𠱓 𩸽 𪚥"),
        ("non_bmp_misc", "𝕳𝖊𝖑𝖑𝖔 𝓦𝓸𝓻𝓵𝓭 𝟙𝟚𝟛 𐍈 𓀀 🀄 𝄞 \U0010FFFD"),
        # numbers / urls / misc
        ("number_1234567890", "1234567890"),
        ("number_pi", "3.14159"),
        ("numbers_misc", "1,234,567.89 -42 +7 1e-10 0x1F 2024-01-15 12:34:56 v1.2.3 ½ ² ٣٤٥ १२३ １２３ Ⅻ"),
        ("urls", "See https://example.com/path/to/page?query=value&other=123#fragment, http://localhost:8080/api/v1/users/42 and mailto:someone@example.org or ftp://ftp.example.net/pub/file.tar.gz."),
        ("punctuation_runs", "...!!!???,,, ;;; --- ___ *** ### @@@ $$$ %%% ^^^ &&& ((( ))) [[[ ]]] {{{ }}} ||| ~~~ ``` \"\"\" ''' <<< >>> ///"),
        ("case_styles", "HelloWorld camelCase snake_case SCREAMING_CASE PascalCase kebab-case iPhone McDonald's ABCdef abcDEF"),
        ("special_token_literals", "<|endoftext|> <|fim_prefix|><|fim_middle|><|fim_suffix|> <|endofprompt|> <|im_start|>user"),
        ("mix_everything", MIX_EVERYTHING),
        ("long_document", long_document()),
    ]
    names = [n for n, _ in c]
    assert len(set(names)) == len(names), "duplicate case names"
    return c


# ---------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check-cache", action="store_true", help="exit 0 iff encodings load from the cache")
    ap.add_argument("--seed-cache", action="store_true", help="load the encodings (from --rank-dir) and exit")
    ap.add_argument("--rank-dir", help="directory holding <encoding>.tiktoken files (e.g. gpt-tokenizer/data)")
    ap.add_argument("--out", help="fixture path to write")
    args = ap.parse_args()

    if args.check_cache:
        try:
            load_encodings(None)
        except Exception as e:  # noqa: BLE001
            print(f"[gen_counts] tiktoken cache not seeded yet ({e})", file=sys.stderr)
            sys.exit(3)
        return
    tiktoken, encs = load_encodings(args.rank_dir)
    if args.seed_cache:
        print(f"[gen_counts] seeded {os.environ['TIKTOKEN_CACHE_DIR']} with {', '.join(encs)} "
              f"(SHA-256 verified by tiktoken {tiktoken.__version__})", file=sys.stderr)
        return
    if not args.out:
        ap.error("--out is required")

    out_cases = []
    for name, text in cases():
        row = {"name": name, "text": text}
        for enc_name in ENCODINGS:
            toks = encs[enc_name].encode_ordinary(text)
            assert encs[enc_name].decode_bytes(toks) == text.encode("utf-8"), (name, enc_name)
            row[enc_name] = len(toks)
        out_cases.append(row)

    fixture = {
        "generator": "scripts/oracle/regen.sh",
        "tiktoken_version": tiktoken.__version__,
        "method": "encode_ordinary",
        "cases": out_cases,
    }
    data = (json.dumps(fixture, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    if len(data) > MAX_FIXTURE_BYTES:
        sys.exit(f"fixture too large: {len(data)} bytes > {MAX_FIXTURE_BYTES}")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, args.out)
    print(f"[gen_counts] wrote {args.out}: {len(out_cases)} cases, {len(data)} bytes, "
          f"tiktoken {tiktoken.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main()
