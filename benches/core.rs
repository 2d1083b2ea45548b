//! Native figures for the core: `cargo bench --bench core`. Prints rank-load time, counting
//! MB/s (first pass on fresh tables, then warm) for both encodings, and planning time for a
//! 2,000-message conversation. No harness dependency: each figure is the median of a few runs.

use std::time::Instant;

use context_compactor::bpe::Bpe;
use context_compactor::{Compactor, Config, Encoding, Message};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// ~4 MB of mixed text: prose, code, JSON, logs, CJK, whitespace runs. Deterministic.
fn corpus() -> Vec<String> {
    let mut seed = 42u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let words = [
        "the",
        "context",
        "window",
        "compaction",
        "agent",
        "tool",
        "result",
        "offload",
        "summary",
        "Token",
        "counting",
        "is",
        "exact",
        "and",
        "fast",
        "naïve",
        "café",
        "日本語",
        "文章",
        "fn",
        "main()",
        "{",
        "}",
        "let",
        "x",
        "=",
        "42;",
        "\"key\":",
        "[1,",
        "2]",
        "ERROR",
        "src/lib.rs:120",
        "0x7fff5fbff8a0",
        "don't",
        "we'll",
        "HTTP/1.1",
        "200",
        "OK",
    ];
    (0..1000)
        .map(|i| {
            let mut s = String::new();
            while s.len() < 4000 {
                s.push_str(words[(next() % words.len() as u64) as usize]);
                s.push(match next() % 12 {
                    0 => '\n',
                    1 => '\t',
                    _ => ' ',
                });
                if i % 50 == 0 {
                    s.push_str("        ");
                }
            }
            s
        })
        .collect()
}

fn main() {
    let texts = corpus();
    let bytes: usize = texts.iter().map(|t| t.len()).sum();
    println!(
        "corpus: {} texts, {:.2} MB",
        texts.len(),
        bytes as f64 / 1e6
    );
    for (encoding, file) in [
        (Encoding::O200kBase, "data/o200k_base.ranks"),
        (Encoding::Cl100kBase, "data/cl100k_base.ranks"),
    ] {
        let data = std::fs::read(file).expect("run from the repository root");
        let mut loads = Vec::new();
        let mut firsts = Vec::new();
        let mut warms = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            let bpe = Bpe::from_rank_data(encoding, data.clone()).unwrap();
            loads.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            let n: usize = texts.iter().map(|s| bpe.count(s)).sum();
            firsts.push(bytes as f64 / 1e6 / t.elapsed().as_secs_f64());
            let t = Instant::now();
            let m: usize = texts.iter().map(|s| bpe.count(s)).sum();
            warms.push(bytes as f64 / 1e6 / t.elapsed().as_secs_f64());
            assert_eq!(n, m);
        }
        println!(
            "{}: load {:.1} ms, first pass {:.1} MB/s, warm {:.1} MB/s",
            encoding.as_str(),
            median(loads),
            median(firsts),
            median(warms)
        );
    }

    // Planning: 2,000 messages of ~100 tokens each for a 128k window.
    let messages: Vec<Message> = texts
        .iter()
        .cycle()
        .take(2000)
        .enumerate()
        .map(|(i, t)| {
            let end = (0..=t.len().min(420))
                .rev()
                .find(|&e| t.is_char_boundary(e))
                .unwrap_or(0);
            Message::user(format!("{i}: {}", &t[..end]))
        })
        .collect();
    let config = Config::from_json(r#"{"model":"gpt-4o"}"#).unwrap();
    let mut firsts = Vec::new();
    let mut replans = Vec::new();
    for _ in 0..5 {
        let compactor = Compactor::new(config.clone()).unwrap();
        let t = Instant::now();
        let plan = compactor.plan(&messages).unwrap();
        firsts.push(t.elapsed().as_secs_f64() * 1e3);
        assert!(plan.tokens_before > 100_000);
        let mut grown = messages.clone();
        grown.push(Message::user("one more".to_owned()));
        let t = Instant::now();
        let _ = compactor.plan(&grown).unwrap();
        replans.push(t.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "plan 2,000 messages: first {:.1} ms, re-plan after one append {:.2} ms",
        median(firsts),
        median(replans)
    );
}
