//! Our BPE against tiktoken-rs, the reference: the committed rank files hold exactly its
//! vocabularies, and pieces, token ids and counts agree on generated strings built from the hard
//! classes (every Unicode class the patterns distinguish, contractions with `ſ`, NBSP and U+3000
//! runs, CJK, long runs, base64, minified JSON, CRLF mixes).
//!
//! `TOKENIZER_CASES=2000000 cargo test --release --test tokenizer` runs millions; the default
//! is sized for CI. `REGENERATE=1` rewrites `data/*.ranks` from tiktoken-rs.

use context_compactor::bpe::{self, Bpe, RankData};
use context_compactor::Encoding;
use tiktoken_rs::CoreBPE;

fn reference(encoding: Encoding) -> &'static CoreBPE {
    match encoding {
        Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
        Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
    }
}

/// The patterns tiktoken-rs splits with (cl100k's is private to its constructor).
fn reference_pieces(encoding: Encoding, text: &str) -> Vec<String> {
    static PATTERNS: std::sync::OnceLock<[fancy_regex::Regex; 2]> = std::sync::OnceLock::new();
    let patterns = PATTERNS.get_or_init(|| {
        [
            fancy_regex::Regex::new(tiktoken_rs::O200K_BASE_PAT_STR).unwrap(),
            fancy_regex::Regex::new(
                r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s",
            )
            .unwrap(),
        ]
    });
    let regex = &patterns[match encoding {
        Encoding::O200kBase => 0,
        Encoding::Cl100kBase => 1,
    }];
    regex
        .find_iter(text)
        .map(|m| m.unwrap().as_str().to_owned())
        .collect()
}

fn ours(encoding: Encoding) -> &'static Bpe {
    bpe::get(encoding).expect("embedded ranks")
}

const ENCODINGS: [(Encoding, usize); 2] = [
    (Encoding::O200kBase, 199_998),
    (Encoding::Cl100kBase, 100_256),
];

#[test]
fn rank_files_hold_tiktokens_vocabularies() {
    let vocabulary = |encoding: Encoding, count: usize| -> Vec<Vec<u8>> {
        (0..count as u32)
            .map(|r| {
                reference(encoding)
                    .decode_bytes(&[r])
                    .expect("rank in vocabulary")
            })
            .collect()
    };
    let o200k = vocabulary(Encoding::O200kBase, ENCODINGS[0].1);
    for (encoding, count) in ENCODINGS {
        let tokens = vocabulary(encoding, count);
        // cl100k is stored by reference to o200k's tokens (version 2); o200k as itself.
        let expected = match encoding {
            Encoding::O200kBase => RankData::write(encoding.as_str(), &tokens),
            Encoding::Cl100kBase => {
                RankData::write_referenced(encoding.as_str(), &tokens, "o200k_base", &o200k)
            }
        };
        let path = format!(
            "{}/data/{}.ranks",
            env!("CARGO_MANIFEST_DIR"),
            encoding.as_str()
        );
        if std::env::var_os("REGENERATE").is_some() {
            std::fs::write(&path, &expected).unwrap();
        }
        let committed = std::fs::read(&path).unwrap();
        assert!(
            committed == expected,
            "{path} differs from tiktoken-rs (REGENERATE=1)"
        );
        let bpe = ours(encoding);
        assert_eq!(bpe.len(), count);
        for (rank, token) in tokens.iter().enumerate() {
            assert_eq!(bpe.token(rank as u32), Some(&token[..]));
        }
    }
}

#[test]
fn damaged_rank_data_is_a_typed_error() {
    let good = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/cl100k_base.ranks"
    ))
    .unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("wrong magic", b"XXXX\x0bcl100k_base".to_vec()),
        ("truncated", good[..good.len() / 2].to_vec()),
        ("trailing bytes", [&good[..], b"x"].concat()),
        ("referenced, truncated planes", good[..40_000].to_vec()),
        ("referenced, unknown base", {
            let mut d = good.clone();
            d[5 + 11 + 4 + 1] = b'x'; // o200k_base -> x200k_base
            d
        }),
    ];
    for (what, data) in cases {
        let err = Bpe::from_rank_data(Encoding::Cl100kBase, data).unwrap_err();
        assert!(
            matches!(err, context_compactor::Error::InvalidRankData { .. }),
            "{what}: {err:?}"
        );
    }
    let err = Bpe::from_rank_data(Encoding::O200kBase, good).unwrap_err();
    assert!(err.to_string().contains("for \"cl100k_base\""), "{err}");
}

/// A small deterministic generator (splitmix64): no dependency, same strings everywhere.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// Characters from every class the patterns distinguish, weighted toward the tricky ones.
const ALPHABET: &[&str] = &[
    "a",
    "e",
    "s",
    "t",
    "l",
    "d",
    "m",
    "r",
    "v",
    "S",
    "T",
    "L",
    "D",
    "M",
    "R",
    "V",
    "E",
    "A",
    "Z",
    "ſ",
    "K",
    "İ",
    "ı",
    "ß",
    "é",
    "É",
    "ǅ",
    "ʰ",
    "ˆ",
    "々",
    "ª",
    "中",
    "文",
    "字",
    "語",
    "ア",
    "ー",
    "한",
    "글",
    "\u{0301}",
    "\u{0308}",
    "\u{20DD}",
    "\u{0903}",
    "0",
    "7",
    "٣",
    "Ⅻ",
    "½",
    "²",
    "𝟘",
    " ",
    " ",
    " ",
    "\t",
    "\n",
    "\r",
    "\r\n",
    "\u{00A0}",
    "\u{3000}",
    "\u{2028}",
    "\u{0085}",
    "\u{000B}",
    "\u{000C}",
    "\u{2003}",
    "\u{200B}",
    "'",
    "'",
    "’",
    "\"",
    ".",
    ",",
    "!",
    "?",
    "/",
    "//",
    "-",
    "_",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ":",
    ";",
    "=",
    "+",
    "*",
    "#",
    "@",
    "$",
    "%",
    "^",
    "&",
    "|",
    "\\",
    "<",
    ">",
    "`",
    "~",
    "😀",
    "👍🏽",
    "\u{200D}",
    "\u{FEFF}",
    "\u{0000}",
    "\u{007F}",
    "\u{E000}",
    "\u{10FFFF}",
    "🜀",
    "ﷺ",
    "\u{1F3FB}",
];

/// Snippets that hit contractions, code, JSON and prose.
const WORDS: &[&str] = &[
    "'s",
    "'S",
    "'ſ",
    "'t",
    "'T",
    "'re",
    "'RE",
    "'rE",
    "'ve",
    "'VE",
    "'m",
    "'M",
    "'ll",
    "'LL",
    "'Ll",
    "'d",
    "'D",
    "'x",
    "'",
    "don't",
    "I'M",
    "HELLO'S",
    " hello",
    " world",
    "the",
    " The",
    "fn main() {",
    "}\n",
    "    let x = 1;\n",
    "{\"key\": [1, 2, 3]}",
    "https://example.com/a/b",
    "2024-01-01T00:00:00Z",
    "1234567",
    "3.14159",
    "\r\n\r\n",
    "  \n  ",
    "\n\n\n",
    "日本語のテキスト",
    "Ελληνικά",
    "Русский текст",
    "العربية",
    "हिन्दी",
    "ﬁ",
    "ÅNGSTRÖM",
    "naïve café",
];

fn random_string(rng: &mut Rng) -> String {
    let mut s = String::new();
    let parts = 1 + rng.below(24);
    for _ in 0..parts {
        match rng.below(10) {
            0..=4 => s.push_str(rng.pick(ALPHABET)),
            5..=7 => s.push_str(rng.pick(WORDS)),
            8 => {
                // A run of one character: whitespace runs are the classic superlinear trap.
                let c = rng.pick(ALPHABET);
                for _ in 0..1 + rng.below(12) {
                    s.push_str(c);
                }
            }
            _ => {
                let c = char::from_u32(rng.below(0x3_0000) as u32).unwrap_or('x');
                s.push(c);
            }
        }
    }
    s
}

fn check(encoding: Encoding, text: &str) {
    // Pieces first: two splits can encode alike and still differ elsewhere.
    let pieces: Vec<&str> = ours(encoding).pieces(text).collect();
    assert_eq!(
        pieces,
        reference_pieces(encoding, text),
        "{}: pieces of {text:?}",
        encoding.as_str()
    );
    let expected = reference(encoding).encode_ordinary(text);
    let got = ours(encoding).encode(text);
    if got != expected {
        let pieces: Vec<&str> = ours(encoding).pieces(text).collect();
        panic!(
            "{}: {text:?}\n ours      {got:?}\n tiktoken  {expected:?}\n our pieces {pieces:?}",
            encoding.as_str()
        );
    }
    assert_eq!(
        ours(encoding).count(text),
        expected.len(),
        "count of {text:?}"
    );
}

#[test]
fn generated_strings_match_tiktoken() {
    let cases: usize = std::env::var("TOKENIZER_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let mut rng = Rng(42);
    for _ in 0..cases {
        let text = random_string(&mut rng);
        for (encoding, _) in ENCODINGS {
            check(encoding, &text);
        }
    }
}

/// The hard inputs of the performance issue, at sizes that take the heap merge path.
pub fn hard_inputs(size: usize) -> Vec<(&'static str, String)> {
    let fill = |unit: &str| unit.repeat(size / unit.len() + 1);
    let mut rng = Rng(7);
    let base64: String = (0..size)
        .map(|_| {
            rng.pick(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") as char
        })
        .collect();
    vec![
        ("nbsp", fill("\u{00A0}")),
        ("ideographic space", fill("\u{3000}")),
        ("nbsp words", fill("a\u{00A0}\u{00A0}")),
        ("cjk", fill("中文字語日本語")),
        ("one char", fill("a")),
        ("spaces", fill(" ")),
        ("newlines", fill("\n")),
        ("digits", fill("7")),
        ("punct", fill("!")),
        ("base64", base64),
        (
            "minified json",
            fill("{\"id\":12345,\"name\":\"x\",\"tags\":[\"a\",\"b\"]},"),
        ),
        ("marks", fill("\u{0301}")),
        ("upper", fill("A")),
    ]
}

#[test]
fn long_runs_match_tiktoken() {
    for (what, text) in hard_inputs(5_000) {
        for (encoding, _) in ENCODINGS {
            let expected = reference(encoding).encode_ordinary(&text);
            assert_eq!(ours(encoding).count(&text), expected.len(), "{what}");
            assert_eq!(ours(encoding).encode(&text), expected, "{what}");
        }
    }
}

#[test]
fn crafted_edge_cases_match_tiktoken() {
    let cases = [
        "\u{0301}A1",
        "\u{0301}AB.",
        "ʰA1",
        "AʰB1",
        "A\u{0301}B1",
        " \u{0301}A1",
        "\u{0301}",
        "\u{0301}\u{0301}A",
        "HELLO'S",
        "HELLO'ſ",
        "hello'ſ",
        "'ſ",
        "'K",
        "İstanbul",
        "a\u{00A0}\u{00A0}b",
        "x \u{3000} y",
        "a\r\n\r\n  ",
        "a \n ",
        "a  ",
        " \t\n",
        "!\n/",
        "!//\n\n/",
        "12345",
        "١٢٣٤",
        "don'T",
        "I'VE'S",
        "\r",
        "\n\r",
        " \u{2028}x",
        "\u{0085}a",
        "A\u{0301}",
        "\u{0301}a",
        "ǅa",
        "ǅA1",
        "々A1",
    ];
    for text in cases {
        for (encoding, _) in ENCODINGS {
            check(encoding, text);
        }
    }
}
