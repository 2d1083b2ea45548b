//! Model registry: context window, max output tokens, encoding and family for current models,
//! matched by exact name, then by the longest known prefix. Provider prefixes such as
//! `openai/gpt-4o` (AI SDK gateway ids) are stripped first. Unknown models get a conservative
//! default and the plan says so.

use serde::{Deserialize, Serialize};

use crate::counting::Encoding;

/// What the planner needs to know about a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    /// The name asked for.
    pub name: String,
    /// The registry entry it matched (`None` when unknown or given only by window).
    pub matched: Option<String>,
    /// The context window, in tokens (input and output together).
    pub context_window: u32,
    /// The most tokens the model writes in one response.
    pub max_output_tokens: u32,
    /// The exact encoding counts are made with (`o200k_base` or `cl100k_base`).
    pub encoding: Encoding,
    /// The Hugging Face tokenizer that counts this model exactly, by the name the registry
    /// expects it loaded under (`llama3_1`, `qwen3`, `gemma3`, ...; see `hf::load` and
    /// `loadTokenizer`). `None` when no public tokenizer counts it (Claude, Mistral, Llama 4).
    pub tokenizer: Option<String>,
    /// The tokenizer family, for the estimate factor of non-OpenAI models.
    pub family: Family,
    /// Estimated tokens per o200k/cl100k token for this model (1.0 for OpenAI: exact).
    pub token_ratio: f64,
}

impl ModelInfo {
    /// The model's Hugging Face tokenizer when it is loaded (then counts are exact).
    pub fn loaded_tokenizer(&self) -> Option<crate::counting::Tokenizer> {
        let name = self.tokenizer.as_deref()?;
        crate::counting::hf::get(name).map(crate::counting::Tokenizer)
    }
}

/// Tokenizer family. Only OpenAI counts are exact; the others are estimated from the o200k
/// count times a factor, then calibrated from observed provider usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// GPT-4o, GPT-4.1, GPT-5, o-series, GPT-4, GPT-3.5: exact counts.
    Openai,
    /// Claude.
    Anthropic,
    /// Gemini, Gemma.
    Google,
    /// Llama.
    Meta,
    /// Mistral, Mixtral, Codestral.
    Mistral,
    /// Qwen.
    Qwen,
    /// DeepSeek.
    Deepseek,
    /// xAI's Grok.
    Xai,
    /// A model the registry does not know.
    Unknown,
}

impl Family {
    /// Default ratio of the family's token count to the o200k count, for models counted by
    /// estimate (a model whose tokenizer is loaded counts exactly instead). Errs high;
    /// calibration from observed usage corrects it.
    /// - Claude up to 4.6: 1.20. Derived (bench/tokenizers/claude-factor.mjs) against
    ///   ai-tokenizer 1.0.6's Claude encoding x its 1.1 multiplier (published accuracy
    ///   97.6-99.98 % against count_tokens) on this repository's prose, code and JSON: measured
    ///   1.164 / 1.163 / 1.168, so 1.20 is 2.7-3.2 % high on each (CJK: 1.86, 36 % low).
    ///   Opus 4.7 and later: [`CLAUDE_47_RATIO`].
    /// - Gemini, Llama 3, Qwen: exact with their tokenizer; otherwise 1.08 (Gemini ~1.08 per
    ///   ai-tokenizer's table; Llama 3 and Qwen share cl100k-like 128-150k vocabularies).
    /// - Mistral (smaller vocabulary) 1.15; DeepSeek 1.08; Grok (no public tokenizer) 1.15, as
    ///   an unknown model.
    pub fn default_ratio(self) -> f64 {
        match self {
            Family::Openai => 1.0,
            Family::Anthropic => 1.20,
            Family::Google => 1.08,
            Family::Meta => 1.08,
            Family::Mistral => 1.15,
            Family::Qwen => 1.08,
            Family::Deepseek => 1.08,
            Family::Xai => 1.15,
            Family::Unknown => 1.15,
        }
    }
}

/// Claude Opus 4.7 and later (a new tokenizer; Anthropic: 1.0-1.35x the tokens of before). No
/// offline reference exists: derived as the Claude-4.6 reference times the published per-class
/// increases measured against count_tokens (English prose ~1.45x, code 1.13-1.20x, CJK 1.00x),
/// on the same corpus: 1.687 (prose) / 1.355 (code) / 1.360 (JSON) x o200k, mean 1.467; 1.50
/// errs high by 2 %. Its error per class is large (prose -11 %, code and JSON +10 %, CJK -20 %):
/// calibration matters more here (one observed step replaces the factor with the measured ratio).
pub const CLAUDE_47_RATIO: f64 = 1.50;

/// Window for models the registry does not know: small enough not to overflow most models
/// (an 8k-window local model included), and the plan carries an `unknown_model` note.
pub const UNKNOWN_MODEL_WINDOW: u32 = 8_192;
pub const UNKNOWN_MODEL_MAX_OUTPUT: u32 = 2_048;

struct Entry {
    prefix: &'static str,
    window: u32,
    max_output: u32,
    encoding: Encoding,
    family: Family,
    tokenizer: Option<&'static str>,
    ratio: Option<f64>,
}

const fn e(
    prefix: &'static str,
    window: u32,
    max_output: u32,
    encoding: Encoding,
    family: Family,
) -> Entry {
    Entry {
        prefix,
        window,
        max_output,
        encoding,
        family,
        tokenizer: None,
        ratio: None,
    }
}

impl Entry {
    /// Counted exactly by the Hugging Face tokenizer loaded under `name`.
    const fn tok(mut self, name: &'static str) -> Entry {
        self.tokenizer = Some(name);
        self
    }

    /// A ratio of its own (a tokenizer generation that differs from the family's).
    const fn ratio(mut self, ratio: f64) -> Entry {
        self.ratio = Some(ratio);
        self
    }
}

use Encoding::{Cl100kBase as CL, O200kBase as O2};
use Family::*;

/// Published limits (provider docs, 2025-2026). Longest matching prefix wins.
const REGISTRY: &[Entry] = &[
    e("gpt-5", 400_000, 128_000, O2, Openai),
    e("gpt-5-chat", 128_000, 16_384, O2, Openai),
    e("gpt-4.1", 1_047_576, 32_768, O2, Openai),
    e("gpt-4o", 128_000, 16_384, O2, Openai),
    e("gpt-4o-mini", 128_000, 16_384, O2, Openai),
    e("chatgpt-4o", 128_000, 16_384, O2, Openai),
    // GPT-4.5 (preview) uses o200k, not GPT-4's cl100k its name would match.
    e("gpt-4.5", 128_000, 16_384, O2, Openai),
    e("gpt-4-turbo", 128_000, 4_096, CL, Openai),
    e("gpt-4", 8_192, 8_192, CL, Openai),
    e("gpt-4-32k", 32_768, 8_192, CL, Openai),
    e("gpt-3.5-turbo", 16_385, 4_096, CL, Openai),
    e("o1", 200_000, 100_000, O2, Openai),
    e("o1-mini", 128_000, 65_536, O2, Openai),
    e("o3", 200_000, 100_000, O2, Openai),
    e("o3-mini", 200_000, 100_000, O2, Openai),
    e("o4-mini", 200_000, 100_000, O2, Openai),
    // gpt-oss's `o200k_harmony` is o200k_base's pattern and ranks plus special tokens (tiktoken's
    // `openai_public.py`): its text counts exactly as o200k_base (`gpt-oss-20b`, Ollama's
    // `gpt-oss:20b`, `openai/gpt-oss-120b`).
    e("gpt-oss", 131_072, 131_072, O2, Openai),
    e("claude-opus-4", 200_000, 32_000, O2, Anthropic),
    e("claude-opus-4-5", 200_000, 64_000, O2, Anthropic),
    e("claude-opus-4.5", 200_000, 64_000, O2, Anthropic),
    // Opus 4.7 and later: the new tokenizer (limits as Opus 4.5 until checked).
    e("claude-opus-4-7", 200_000, 64_000, O2, Anthropic).ratio(CLAUDE_47_RATIO),
    e("claude-opus-4.7", 200_000, 64_000, O2, Anthropic).ratio(CLAUDE_47_RATIO),
    e("claude-sonnet-4", 200_000, 64_000, O2, Anthropic),
    e("claude-haiku-4", 200_000, 64_000, O2, Anthropic),
    e("claude-3-7-sonnet", 200_000, 64_000, O2, Anthropic),
    e("claude-3-5-sonnet", 200_000, 8_192, O2, Anthropic),
    e("claude-3-5-haiku", 200_000, 8_192, O2, Anthropic),
    e("claude-3", 200_000, 4_096, O2, Anthropic),
    e("claude", 200_000, 8_192, O2, Anthropic),
    // Gemini 2.0, 2.5 and 3 use the Gemma 3 vocabulary (262,144 pieces): exact for text. Gemini
    // 3.1 and 3.5 moved to Gemma 4's (not in a registry package here): estimated. Source: the
    // local tokenizer table of google-genai 3.6.1 (`_local_tokenizer_loader.py`).
    e("gemini-2.5", 1_048_576, 65_536, O2, Google).tok("gemma3"),
    e("gemini-2.0", 1_048_576, 8_192, O2, Google).tok("gemma3"),
    e("gemini-1.5-pro", 2_097_152, 8_192, O2, Google),
    e("gemini-1.5-flash", 1_048_576, 8_192, O2, Google),
    e("gemini-3", 1_048_576, 65_536, O2, Google).tok("gemma3"),
    e("gemini-3.1", 1_048_576, 65_536, O2, Google),
    e("gemini-3.5", 1_048_576, 65_536, O2, Google),
    e("gemini", 1_048_576, 8_192, O2, Google),
    e("gemma-3", 131_072, 8_192, O2, Google).tok("gemma3"),
    e("gemma3", 131_072, 8_192, O2, Google).tok("gemma3"),
    // Llama: Hugging Face ids (meta-llama/Llama-3.1-8B-Instruct, Meta-Llama-3-8B-Instruct), the
    // hosted names (llama-3.3-70b-versatile) and Ollama's (llama3.1:8b).
    e("llama-3", 8_192, 2_048, O2, Meta).tok("llama3"),
    e("meta-llama-3", 8_192, 2_048, O2, Meta).tok("llama3"),
    e("llama3", 8_192, 2_048, O2, Meta).tok("llama3"),
    e("llama-3.1", 131_072, 8_192, O2, Meta).tok("llama3_1"),
    e("meta-llama-3.1", 131_072, 8_192, O2, Meta).tok("llama3_1"),
    e("llama3.1", 131_072, 8_192, O2, Meta).tok("llama3_1"),
    e("llama-3.2", 131_072, 8_192, O2, Meta).tok("llama3_2"),
    e("llama3.2", 131_072, 8_192, O2, Meta).tok("llama3_2"),
    e("llama-3.3", 131_072, 8_192, O2, Meta).tok("llama3_1"),
    e("llama3.3", 131_072, 8_192, O2, Meta).tok("llama3_1"),
    e("llama-4", 1_048_576, 16_384, O2, Meta),
    // Mistral: tekken where mistral-common 1.13.1's model table says so (MODEL_NAME_TO_TOKENIZER_CLS);
    // the SentencePiece ones (Large, Medium, Codestral 22B, Small before 2409) stay estimated.
    e("mistral-nemo", 131_072, 8_192, O2, Mistral).tok("mistral_tekken_240718"),
    e("open-mistral-nemo", 131_072, 8_192, O2, Mistral).tok("mistral_tekken_240718"),
    e("ministral-8b", 131_072, 8_192, O2, Mistral).tok("mistral_tekken_240718"),
    e("mistral-small-2409", 32_768, 8_192, O2, Mistral).tok("mistral_tekken_240718"),
    e("pixtral-12b", 131_072, 8_192, O2, Mistral).tok("mistral_tekken_240911"),
    // Both tekken files hold the same 150,000-token vocabulary (checked here: they differ only in
    // their image settings), which the later tekken models keep (131,072 ids, 1,000 special):
    // Mistral Small 3.x, Medium 3, Large 3 (`mistral-large-latest` since 2512), Magistral,
    // Devstral, Ministral 3 — mapped to it, assumed, not checked against their own files.
    e("mistral-large", 131_072, 8_192, O2, Mistral),
    e("mistral-large-latest", 262_144, 16_384, O2, Mistral).tok("mistral_tekken_240911"),
    e("mistral-large-2512", 262_144, 16_384, O2, Mistral).tok("mistral_tekken_240911"),
    e("mistral-large-3", 262_144, 16_384, O2, Mistral).tok("mistral_tekken_240911"),
    e("mistral-medium", 131_072, 8_192, O2, Mistral),
    e("mistral-medium-latest", 131_072, 8_192, O2, Mistral).tok("mistral_tekken_240911"),
    e("mistral-medium-3", 131_072, 8_192, O2, Mistral).tok("mistral_tekken_240911"),
    e("mistral-medium-2505", 131_072, 8_192, O2, Mistral).tok("mistral_tekken_240911"),
    e("mistral-medium-2508", 131_072, 8_192, O2, Mistral).tok("mistral_tekken_240911"),
    e("mistral-small", 32_768, 8_192, O2, Mistral),
    e("mistral-small-latest", 131_072, 8_192, O2, Mistral).tok("mistral_tekken_240911"),
    e("mistral-small-3", 131_072, 8_192, O2, Mistral).tok("mistral_tekken_240911"),
    e("mistral-small-2501", 32_768, 8_192, O2, Mistral).tok("mistral_tekken_240911"),
    e("mistral-small-2503", 131_072, 8_192, O2, Mistral).tok("mistral_tekken_240911"),
    e("mistral-small-2506", 131_072, 8_192, O2, Mistral).tok("mistral_tekken_240911"),
    // Ollama: mistral-small3.1, mistral-small3.2, mistral-small:24b (Small 3); :22b is 2409.
    e("mistral-small3", 131_072, 8_192, O2, Mistral).tok("mistral_tekken_240911"),
    e("mistral-small:24b", 32_768, 8_192, O2, Mistral).tok("mistral_tekken_240911"),
    e("mistral-small:22b", 32_768, 8_192, O2, Mistral).tok("mistral_tekken_240718"),
    e("magistral", 131_072, 40_960, O2, Mistral).tok("mistral_tekken_240911"),
    e("devstral", 131_072, 8_192, O2, Mistral).tok("mistral_tekken_240911"),
    e("ministral-3", 131_072, 8_192, O2, Mistral).tok("mistral_tekken_240911"),
    e("codestral", 262_144, 8_192, O2, Mistral),
    // Qwen: Qwen/Qwen2.5-7B-Instruct, qwen/qwen3-32b, qwen-2.5-72b-instruct, qwen2.5-coder:7b.
    e("qwen3", 131_072, 32_768, O2, Qwen).tok("qwen3"),
    e("qwen-3", 131_072, 32_768, O2, Qwen).tok("qwen3"),
    e("qwen2.5", 32_768, 8_192, O2, Qwen).tok("qwen2_5"),
    e("qwen-2.5", 32_768, 8_192, O2, Qwen).tok("qwen2_5"),
    // Qwen 2 and QwQ share Qwen 2.5's vocabulary and merges (assumed; only 2.5's file is here).
    e("qwen2", 32_768, 8_192, O2, Qwen).tok("qwen2_5"),
    e("qwen-2", 32_768, 8_192, O2, Qwen).tok("qwen2_5"),
    e("qwq", 131_072, 32_768, O2, Qwen).tok("qwen2_5"),
    // Qwen 3.5 changed vocabulary (not in a registry package here): estimated.
    e("qwen3.5", 262_144, 65_536, O2, Qwen),
    e("qwen", 32_768, 8_192, O2, Qwen),
    // xAI (docs.x.ai, Vercel AI Gateway's model pages): Grok 4 256k; Grok 4 Fast, 4.1 Fast 2M;
    // Grok Code Fast 256k; Grok 3 and 3 Mini 131,072; Grok 2 Vision 32,768, Grok Vision Beta
    // 8,192. Output caps are not published per model:
    // 32k as the fast models' listings say (30k-32k).
    e("grok", 131_072, 16_384, O2, Xai),
    e("grok-3", 131_072, 16_384, O2, Xai),
    e("grok-4", 256_000, 32_768, O2, Xai),
    e("grok-4-fast", 2_000_000, 30_000, O2, Xai),
    e("grok-4-1-fast", 2_000_000, 30_000, O2, Xai),
    e("grok-4.1-fast", 2_000_000, 30_000, O2, Xai),
    e("grok-code-fast", 256_000, 32_768, O2, Xai),
    e("grok-2-vision", 32_768, 8_192, O2, Xai),
    e("grok-vision", 8_192, 4_096, O2, Xai),
    // DeepSeek V3 / V3.1 / R1 (deepseek-chat, deepseek-reasoner) share V3's tokenizer.
    e("deepseek", 128_000, 8_192, O2, Deepseek),
    e("deepseek-v3", 128_000, 8_192, O2, Deepseek).tok("deepseek_v3"),
    e("deepseek-r1", 128_000, 8_192, O2, Deepseek).tok("deepseek_v3"),
    e("deepseek-chat", 128_000, 8_192, O2, Deepseek).tok("deepseek_v3"),
    e("deepseek-reasoner", 128_000, 8_192, O2, Deepseek).tok("deepseek_v3"),
    // R1's distilled models keep their base model's vocabulary: Qwen 2.5 (1.5B-32B), Llama 3.1 8B
    // and 3.3 70B, Qwen 3 8B (R1-0528). Ollama's `deepseek-r1` tags are these, but for 671b.
    e("deepseek-r1-distill-qwen", 131_072, 32_768, O2, Deepseek).tok("qwen2_5"),
    e("deepseek-r1-distill-llama", 131_072, 32_768, O2, Deepseek).tok("llama3_1"),
    e("deepseek-r1-0528-qwen3", 131_072, 32_768, O2, Deepseek).tok("qwen3"),
    e("deepseek-r1:1.5b", 131_072, 32_768, O2, Deepseek).tok("qwen2_5"),
    e("deepseek-r1:7b", 131_072, 32_768, O2, Deepseek).tok("qwen2_5"),
    e("deepseek-r1:14b", 131_072, 32_768, O2, Deepseek).tok("qwen2_5"),
    e("deepseek-r1:32b", 131_072, 32_768, O2, Deepseek).tok("qwen2_5"),
    e("deepseek-r1:8b", 131_072, 32_768, O2, Deepseek).tok("qwen3"),
    e("deepseek-r1:70b", 131_072, 32_768, O2, Deepseek).tok("llama3_1"),
];

/// Looks a model up: exact name, then the longest registry prefix. `None` when unknown.
pub fn lookup(name: &str) -> Option<ModelInfo> {
    let bare = name.rsplit('/').next().unwrap_or(name).to_ascii_lowercase();
    let entry = REGISTRY
        .iter()
        .filter(|entry| bare.starts_with(entry.prefix))
        .max_by_key(|entry| entry.prefix.len())?;
    Some(ModelInfo {
        name: name.to_owned(),
        matched: Some(entry.prefix.to_owned()),
        context_window: entry.window,
        max_output_tokens: entry.max_output,
        encoding: entry.encoding,
        tokenizer: entry.tokenizer.map(str::to_owned),
        family: entry.family,
        token_ratio: entry.ratio.unwrap_or(entry.family.default_ratio()),
    })
}

/// The registry's entry for `name`, or `unknown`'s defaults when it knows none; `token_ratio`
/// is 1 once the model's Hugging Face tokenizer is loaded (then it counts exactly), as in a
/// compactor for that model.
pub fn info(name: &str) -> ModelInfo {
    let mut model = lookup(name).unwrap_or_else(|| unknown(name));
    if model.loaded_tokenizer().is_some() {
        model.token_ratio = 1.0;
    }
    model
}

/// A text's tokens for a model ([`count_for_model`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCount {
    /// The tokens: exact, or the estimate (the encoding's count times `ratio`, rounded up).
    pub tokens: u32,
    /// Whether the model's own tokenizer counted them: an OpenAI model's encoding, or the
    /// model's Hugging Face tokenizer once loaded.
    pub exact: bool,
    /// What counted: the encoding or the loaded tokenizer's name.
    pub counter: String,
    /// The factor applied to the counter's tokens (1 when exact).
    pub ratio: f64,
}

/// `text`'s tokens for the model `name`, as a compactor for that model counts them before any
/// calibration by the provider's usage: with the model's Hugging Face tokenizer when it is
/// loaded, else with its encoding times the family's factor (exact for OpenAI models). (A
/// compactor for an unknown model given only a context window counts with o200k exactly, factor
/// 1; here an unknown model gets the default factor.) `encoding_not_loaded` when the encoding is
/// not loaded.
pub fn count_for_model(text: &str, name: &str) -> Result<ModelCount, crate::Error> {
    use crate::counting::TokenCounter;
    let model = info(name);
    let saturate = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    if let Some(tokenizer) = model.loaded_tokenizer() {
        return Ok(ModelCount {
            tokens: saturate(tokenizer.count(text)),
            exact: true,
            counter: model.tokenizer.unwrap_or_default(),
            ratio: 1.0,
        });
    }
    let raw = saturate(crate::counting::count_tokens(text, model.encoding)?);
    let exact = model.family == Family::Openai && model.matched.is_some();
    let ratio = if exact { 1.0 } else { model.token_ratio };
    Ok(ModelCount {
        tokens: if ratio == 1.0 {
            raw
        } else {
            (f64::from(raw) * ratio).ceil() as u32
        },
        exact,
        counter: model.encoding.as_str().to_owned(),
        ratio,
    })
}

/// The registry's names nearest to `name` (a model it does not know), best first, at most `n`:
/// what to suggest when a name is refused. Entries match by prefix, so each is ranked by its
/// edit distance (Levenshtein) to the closest start of the name (lowercased, without its
/// provider prefix: `gpt4o-mini-2024` is one edit from `gpt-4o`), relative to the entry's
/// length; then by the longest common prefix, then in registry order.
pub fn nearest(name: &str, n: usize) -> Vec<&'static str> {
    let bare: Vec<char> = name
        .rsplit('/')
        .next()
        .unwrap_or(name)
        .to_ascii_lowercase()
        .chars()
        .collect();
    let mut ranked: Vec<(usize, std::cmp::Reverse<usize>, usize, &'static str)> = REGISTRY
        .iter()
        .enumerate()
        .map(|(order, entry)| {
            let prefix: Vec<char> = entry.prefix.chars().collect();
            let distance = prefix_distance(&prefix, &bare);
            let common = bare.iter().zip(&prefix).take_while(|(a, b)| a == b).count();
            let relative = distance * 1_000 / prefix.len().max(1);
            (relative, std::cmp::Reverse(common), order, entry.prefix)
        })
        .collect();
    ranked.sort();
    ranked.into_iter().take(n).map(|r| r.3).collect()
}

/// The registry's names a misspelling of `name` likely meant, at most `n`: the entries fewest
/// edits away, relative to their length ([`nearest`]'s measure, over bytes), if a third of an
/// entry's characters at most; none for a name of another model altogether (a local model's):
/// what an unknown model's note suggests ([`crate::Note::UnknownModel`]). Kept lean (no sort,
/// bytes): it is in the wasm core, where [`nearest`], the CLI's, is not.
pub fn suggestions(name: &str, n: usize) -> Vec<&'static str> {
    let bare = name.rsplit('/').next().unwrap_or(name).to_ascii_lowercase();
    let digits = |s: &str| s.bytes().filter(u8::is_ascii_digit).collect::<Vec<u8>>();
    let given = digits(&bare);
    let mut best = (334, Vec::new());
    for entry in REGISTRY {
        let prefix = entry.prefix.as_bytes();
        // A misspelling keeps the start and the version: `llama2` is no `llama3`, `mistral` no
        // `magistral`.
        if prefix.get(..2) != bare.as_bytes().get(..2) || !given.starts_with(&digits(entry.prefix))
        {
            continue;
        }
        let relative = prefix_distance(prefix, bare.as_bytes()) * 1_000 / prefix.len().max(1);
        if relative < best.0 {
            best = (relative, Vec::new());
        }
        if relative == best.0 && best.1.len() < n {
            best.1.push(entry.prefix);
        }
    }
    best.1
}

/// The fewest edits (Levenshtein) that turn `prefix` into some start of `text`.
fn prefix_distance<T: PartialEq>(prefix: &[T], text: &[T]) -> usize {
    // row[j]: the distance from prefix[..i] to text[..j]; the last row's minimum is the answer.
    let mut row: Vec<usize> = (0..=text.len()).collect();
    for (i, p) in prefix.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, t) in text.iter().enumerate() {
            let next = (diagonal + usize::from(p != t))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row.into_iter().min().unwrap_or(0)
}

/// The entry used for a model the registry does not know.
pub fn unknown(name: &str) -> ModelInfo {
    ModelInfo {
        name: name.to_owned(),
        matched: None,
        context_window: UNKNOWN_MODEL_WINDOW,
        max_output_tokens: UNKNOWN_MODEL_MAX_OUTPUT,
        encoding: Encoding::O200kBase,
        tokenizer: None,
        family: Family::Unknown,
        token_ratio: Family::Unknown.default_ratio(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_for_a_model_exact_or_by_its_factor() {
        let text = "fn main() { println!(\"héllo, wörld\"); } // 日本語";
        let raw = crate::count_tokens(text, Encoding::O200kBase).unwrap() as u32;
        let gpt = count_for_model(text, "openai/gpt-4o").unwrap();
        assert_eq!(
            (gpt.tokens, gpt.exact, gpt.counter.as_str(), gpt.ratio),
            (raw, true, "o200k_base", 1.0)
        );
        let claude = count_for_model(text, "claude-sonnet-4-5").unwrap();
        let factor = info("claude-sonnet-4-5").token_ratio;
        assert!(factor > 1.0);
        assert_eq!(
            (claude.tokens, claude.exact, claude.ratio),
            ((f64::from(raw) * factor).ceil() as u32, false, factor)
        );
        // A model whose tokenizer is public but not loaded: its encoding times its factor.
        let qwen = count_for_model(text, "qwen3-32b").unwrap();
        assert_eq!((qwen.exact, qwen.counter.as_str()), (false, "o200k_base"));
        assert_eq!(info("qwen3-32b").tokenizer.as_deref(), Some("qwen3"));
        // Unknown: the defaults, never exact.
        let other = count_for_model(text, "my-local-model").unwrap();
        assert_eq!((other.exact, info("my-local-model").matched), (false, None));
        assert_eq!(count_for_model("", "gpt-4o").unwrap().tokens, 0);
        // GPT-4 counts with cl100k; GPT-4.5 with o200k (not GPT-4's prefix).
        let gpt4 = count_for_model(text, "gpt-4").unwrap();
        assert_eq!((gpt4.exact, gpt4.counter.as_str()), (true, "cl100k_base"));
        assert_eq!(
            count_for_model(text, "gpt-4.5-preview").unwrap().counter,
            "o200k_base"
        );
        // Claude Opus 4.7's tokenizer generation has its own factor.
        let opus = count_for_model(text, "claude-opus-4-7").unwrap();
        assert_eq!(opus.ratio, CLAUDE_47_RATIO);
        assert!(opus.ratio > claude.ratio);
    }

    #[test]
    fn grok_models_by_their_published_windows() {
        for (name, window) in [
            ("grok-4-0709", 256_000),
            ("xai/grok-4", 256_000),
            ("grok-4-fast-reasoning", 2_000_000),
            ("grok-4-1-fast-non-reasoning", 2_000_000),
            ("grok-code-fast-1", 256_000),
            ("grok-3-mini", 131_072),
            ("grok-2-vision-1212", 32_768),
            ("grok-vision-beta", 8_192),
        ] {
            let model = info(name);
            assert_eq!(
                (model.context_window, model.family),
                (window, Family::Xai),
                "{name}"
            );
        }
    }

    #[test]
    fn nearest_names_for_an_unknown_model() {
        assert_eq!(nearest("gpt4o", 1), ["gpt-4o"]);
        assert_eq!(suggestions("gpt4o", 1), ["gpt-4o"]);
        assert_eq!(suggestions("claud-sonet-4", 1), ["claude-sonnet-4"]);
        // Another model altogether (a local model, another version): nothing to suggest.
        assert!(suggestions("my-local-finetune", 3).is_empty());
        assert!(suggestions("acme-chat-large", 3).is_empty());
        for other in [
            "mistral",
            "mistral:7b",
            "mixtral:8x7b",
            "llama2",
            "gemma2",
            "gemma:7b",
        ] {
            assert!(
                suggestions(other, 3).is_empty(),
                "{other}: {:?}",
                suggestions(other, 3)
            );
        }
        assert_eq!(suggestions("gpt4o-mini-2024-07-18", 1), ["gpt-4o-mini"]);
        assert_eq!(nearest("openai/GPT4o-mini", 1), ["gpt-4o-mini"]);
        assert_eq!(nearest("claud-sonet-4", 1), ["claude-sonnet-4"]);
        assert_eq!(nearest("lama-3.1-8b", 1), ["llama-3.1"]);
        assert_eq!(nearest("claud-sonet-4-5", 1), ["claude-sonnet-4"]);
        assert_eq!(nearest("sonnet", 1), ["claude-sonnet-4"]);
        let three = nearest("gpt-4x", 3);
        assert_eq!(three.len(), 3);
        assert!(three.contains(&"gpt-4"), "{three:?}");
        assert_eq!(nearest("", 5).len(), 5);
    }

    #[test]
    fn exact_and_prefix_matches() {
        let m = lookup("gpt-4o").unwrap();
        assert_eq!(
            (m.context_window, m.encoding),
            (128_000, Encoding::O200kBase)
        );
        assert_eq!(
            lookup("gpt-4o-2024-08-06").unwrap().matched.as_deref(),
            Some("gpt-4o")
        );
        assert_eq!(lookup("gpt-4-0613").unwrap().encoding, Encoding::Cl100kBase);
        assert_eq!(
            lookup("gpt-4-turbo-preview").unwrap().context_window,
            128_000
        );
        assert_eq!(
            lookup("openai/gpt-4.1-mini").unwrap().context_window,
            1_047_576
        );
        assert_eq!(
            lookup("anthropic/claude-sonnet-4-5-20250929")
                .unwrap()
                .family,
            Family::Anthropic
        );
        assert!(lookup("my-local-model").is_none());
        let tokenizer = |name: &str| lookup(name).and_then(|m| m.tokenizer);
        // The families with prebuilt data, by the names providers, vLLM (Hugging Face ids),
        // Ollama and LM Studio use.
        for (name, expected) in [
            ("qwen/qwen3-32b", Some("qwen3")),
            ("Qwen/Qwen3-8B", Some("qwen3")),
            ("qwen3:8b", Some("qwen3")),
            ("lmstudio-community/Qwen3-8B-GGUF", Some("qwen3")),
            ("qwen2.5-coder:7b", Some("qwen2_5")),
            ("Qwen/Qwen2.5-72B-Instruct", Some("qwen2_5")),
            ("qwq:32b", Some("qwen2_5")),
            ("deepseek-chat", Some("deepseek_v3")),
            ("deepseek/deepseek-r1", Some("deepseek_v3")),
            ("deepseek-ai/DeepSeek-V3-0324", Some("deepseek_v3")),
            ("deepseek-r1:671b", Some("deepseek_v3")),
            ("deepseek-r1:8b", Some("qwen3")),
            ("deepseek-r1:14b", Some("qwen2_5")),
            (
                "deepseek-ai/DeepSeek-R1-Distill-Llama-70B",
                Some("llama3_1"),
            ),
            (
                "mistral/mistral-large-latest",
                Some("mistral_tekken_240911"),
            ),
            ("mistral-large-latest", Some("mistral_tekken_240911")),
            ("mistral-large-2411", None),
            ("mistral-nemo", Some("mistral_tekken_240718")),
            (
                "mistralai/Mistral-Nemo-Instruct-2407",
                Some("mistral_tekken_240718"),
            ),
            ("mistral-small3.2:24b", Some("mistral_tekken_240911")),
            ("llama3.1:8b", Some("llama3_1")),
            ("meta-llama/Llama-3.3-70B-Instruct", Some("llama3_1")),
        ] {
            assert_eq!(tokenizer(name).as_deref(), expected, "{name}");
        }
        // gpt-oss counts exactly with o200k_base (o200k_harmony's text encoding).
        for name in ["gpt-oss-20b", "openai/gpt-oss-120b", "gpt-oss:20b"] {
            let m = lookup(name).unwrap();
            assert_eq!(
                (m.encoding, m.family),
                (Encoding::O200kBase, Family::Openai),
                "{name}"
            );
        }
        assert_eq!(unknown("x").context_window, UNKNOWN_MODEL_WINDOW);
    }
}
