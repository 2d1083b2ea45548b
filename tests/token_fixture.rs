//! Exactness: our counts equal the official tiktoken's on every case of the committed fixture
//! (regenerate it with scripts/oracle/regen.sh).

use context_compactor::{count_tokens, Encoding};

#[test]
fn counts_match_official_tiktoken() {
    let fixture: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/token-counts.json")).expect("fixture parses");
    let cases = fixture["cases"].as_array().expect("cases");
    assert!(cases.len() >= 50, "fixture too small: {}", cases.len());
    let mut mismatches = Vec::new();
    for case in cases {
        let text = case["text"].as_str().unwrap();
        for (key, encoding) in [
            ("o200k_base", Encoding::O200kBase),
            ("cl100k_base", Encoding::Cl100kBase),
        ] {
            let expected = case[key].as_u64().unwrap() as usize;
            let got = count_tokens(text, encoding).unwrap();
            if got != expected {
                mismatches.push(format!(
                    "{} {key}: expected {expected}, got {got}",
                    case["name"]
                ));
            }
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
