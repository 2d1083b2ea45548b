//! The prompt-cache cost model. Every change to a message already sent invalidates the
//! provider's cached prefix from that message on: the next call pays the write price for
//! everything after it instead of the read price. The planner uses this model to make each break
//! pay for itself — when it must change an earlier message anyway, it takes every edit that does
//! not move the break further forward (the cache is lost from there on regardless), and it skips
//! a break whose saving is too small to be worth one — and every plan reports the break's cost
//! beside its saving (`CacheImpact`).
//!
//! Prices are multiples of the model's uncached input price:
//!
//! | provider | read (cache hit) | write (first time a prefix is sent) | source |
//! |---|---:|---:|---|
//! | Anthropic, 5-minute TTL (default) | 0.1 | 1.25 | Anthropic prompt caching pricing |
//! | Anthropic, 1-hour TTL | 0.1 | 2.0 | idem |
//! | OpenAI (automatic prefix caching) | 0.5 (GPT-4o, o-series), 0.25 (GPT-4.1), 0.1 (GPT-5) | 1.0 | OpenAI pricing |
//! | Google Gemini (implicit caching) | 0.25 | 1.0 | Gemini API pricing (2.5 models) |
//! | none (open-weight servers, unknown models) | 1.0 | 1.0 | no cache: a break costs nothing |

use serde::{Deserialize, Serialize};

use crate::models::{Family, ModelInfo};

/// How the provider caches prompts. In JSON: `"anthropic"`, `"openai"`, `"gemini"`, `"none"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheProvider {
    /// Explicit breakpoints (`cacheControl`), a write premium.
    Anthropic,
    /// Automatic prefix caching, no write premium.
    Openai,
    /// Implicit caching, no write premium.
    Gemini,
    /// No prompt cache.
    None,
}

/// Anthropic's cache lifetime (it sets the write price).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum CacheTtl {
    /// Five minutes: writes cost 1.25×.
    #[default]
    #[serde(rename = "5m")]
    FiveMinutes,
    /// One hour: writes cost 2×.
    #[serde(rename = "1h")]
    OneHour,
}

/// The cache cost model's settings. Every field has a default from the model registry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct CacheConfig {
    /// The provider's caching; by default from the model's family (Claude → anthropic, GPT and
    /// o-series → openai, Gemini → gemini, others → none).
    pub provider: Option<CacheProvider>,
    /// Anthropic's cache lifetime. Default 5 minutes.
    pub ttl: CacheTtl,
    /// Overrides the read price (a multiple of the uncached input price).
    pub read_multiplier: Option<f64>,
    /// Overrides the write price.
    pub write_multiplier: Option<f64>,
    /// When tier 2 must change an earlier message, also take every other tier-2 edit at or after
    /// that message (it costs no further cache). Default true; false restores plain "stop at
    /// the target".
    pub batch: Option<bool>,
    /// Tier 2 skips a break that saves fewer tokens than this while the conversation is still
    /// under the lossy trigger (Anthropic's `clear_at_least`). Default: 0 without a cache,
    /// otherwise 2,000 or 5 % of the window, whichever is smaller.
    pub min_break_saving_tokens: Option<u32>,
    /// How long the provider keeps a prompt cache without a call, in seconds: a call later than
    /// this after the last one finds it expired ([`crate::PlanOptions::now`]). Default from the
    /// provider (see [`CacheConfig::lifetime`]); set it for a longer retention you asked for
    /// (OpenAI's `prompt_cache_retention: "24h"` is 86,400).
    pub lifetime_seconds: Option<u32>,
}

/// The resolved prices.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachePricing {
    /// Which provider the prices are for.
    pub provider: CacheProvider,
    /// Price of a cached input token, as a multiple of an uncached one.
    pub read: f64,
    /// Price of an input token written to the cache.
    pub write: f64,
}

impl CacheConfig {
    /// The prices for `model`, with this config's overrides.
    pub fn pricing(&self, model: &ModelInfo) -> CachePricing {
        let provider = self.provider.unwrap_or(match model.family {
            Family::Anthropic => CacheProvider::Anthropic,
            Family::Openai => CacheProvider::Openai,
            Family::Google if model.name.contains("gemini") => CacheProvider::Gemini,
            _ => CacheProvider::None,
        });
        let (read, write) = match provider {
            CacheProvider::Anthropic => (
                0.1,
                match self.ttl {
                    CacheTtl::FiveMinutes => 1.25,
                    CacheTtl::OneHour => 2.0,
                },
            ),
            CacheProvider::Openai => {
                let name = model.name.as_str();
                let read = if name.contains("gpt-5") {
                    0.1
                } else if name.contains("gpt-4.1") {
                    0.25
                } else {
                    0.5
                };
                (read, 1.0)
            }
            CacheProvider::Gemini => (0.25, 1.0),
            CacheProvider::None => (1.0, 1.0),
        };
        CachePricing {
            provider,
            read: self.read_multiplier.unwrap_or(read),
            write: self.write_multiplier.unwrap_or(write),
        }
    }

    /// The cache lifetime in seconds: [`CacheConfig::lifetime_seconds`], else the provider's.
    ///
    /// | provider | lifetime | source |
    /// |---|---:|---|
    /// | Anthropic, `ttl` 5m / 1h | 300 / 3,600 | Anthropic prompt caching: "5 minutes", refreshed on each use; 1 hour on request |
    /// | OpenAI (in-memory retention) | 600 | OpenAI / Azure prompt caching: "typically cleared within 5 to 10 minutes of inactivity, always within one hour" |
    /// | Gemini (implicit caching) | 600 | not documented; OpenAI's figure assumed |
    /// | none | 0 | no cache (never expires: nothing to lose) |
    pub fn lifetime(&self, pricing: &CachePricing) -> u32 {
        self.lifetime_seconds.unwrap_or(match pricing.provider {
            CacheProvider::Anthropic => match self.ttl {
                CacheTtl::FiveMinutes => 300,
                CacheTtl::OneHour => 3_600,
            },
            CacheProvider::Openai | CacheProvider::Gemini => 600,
            CacheProvider::None => 0,
        })
    }

    /// Whether edits are batched into a break (see [`CacheConfig::batch`]).
    pub fn batches(&self, pricing: &CachePricing) -> bool {
        self.batch.unwrap_or(pricing.read < 1.0)
    }

    /// The smallest saving worth a break in a `window`-token context (see
    /// [`CacheConfig::min_break_saving_tokens`]).
    pub fn min_break_saving(&self, pricing: &CachePricing, window: u32) -> u32 {
        self.min_break_saving_tokens
            .unwrap_or(if pricing.read < 1.0 {
                2_000.min(window / 20)
            } else {
                0
            })
    }
}

impl CachePricing {
    /// What a break costs beyond a cache hit, in uncached-input-token equivalents: the tokens
    /// from the first changed message on are written instead of read.
    pub fn break_cost(&self, tokens_invalidated: u32) -> f64 {
        f64::from(tokens_invalidated) * (self.write - self.read).max(0.0)
    }

    /// What every later call saves when `saved` tokens leave the cached prefix.
    pub fn saving_per_call(&self, saved: u32) -> f64 {
        f64::from(saved) * self.read
    }
}

/// Anthropic accepts at most this many cache breakpoints (`cache_control`) per request.
pub const ANTHROPIC_MAX_BREAKPOINTS: usize = 4;

/// Where a request's Anthropic cache breakpoints go ([`anthropic_breakpoints`]): the messages to
/// mark and the ones to unmark, by index.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Breakpoints {
    /// Messages to give a breakpoint.
    pub add: Vec<usize>,
    /// Messages whose breakpoint to take off.
    pub remove: Vec<usize>,
}

/// The breakpoints for a request of `system.len()` messages (`system[i]`: message `i` is a
/// system message; `marked[i]`: it carries a breakpoint already), at most `max` in all (at most
/// [`ANTHROPIC_MAX_BREAKPOINTS`]; fewer when the tools carry some): one on the last system
/// message and one on the last message, so the next call reads the whole conversation so far
/// from the cache; the breakpoints already set are kept, newest first, and the oldest others
/// taken off to stay within `max`. One rule for every host (npm `anthropicCacheControl`, Python
/// `anthropic_cache_control`).
///
/// ```
/// use context_compactor::anthropic_breakpoints;
/// let b = anthropic_breakpoints(&[true, false, false, false], &[false, true, false, false], 4);
/// assert_eq!((b.add, b.remove), (vec![0, 3], vec![]));
/// let b = anthropic_breakpoints(&[false; 6], &[true, true, true, true, false, false], 4);
/// assert_eq!((b.add, b.remove), (vec![5], vec![0]));
/// ```
pub fn anthropic_breakpoints(system: &[bool], marked: &[bool], max: usize) -> Breakpoints {
    let n = system.len().min(marked.len());
    let max = max.min(ANTHROPIC_MAX_BREAKPOINTS);
    let mut wanted: Vec<usize> = Vec::new();
    if let Some(last_system) = (0..n).rev().find(|&i| system[i]) {
        wanted.push(last_system);
    }
    if n > 0 && !wanted.contains(&(n - 1)) {
        wanted.push(n - 1);
    }
    wanted.truncate(max);
    let mut out = Breakpoints::default();
    let mut on: Vec<bool> = marked[..n].to_vec();
    for &i in &wanted {
        if !on[i] {
            on[i] = true;
            out.add.push(i);
        }
    }
    let mut count = on.iter().filter(|&&m| m).count();
    for i in 0..n {
        if count <= max {
            break;
        }
        if on[i] && !wanted.contains(&i) {
            on[i] = false;
            out.remove.push(i);
            count -= 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pricing_follows_the_family_and_the_overrides() {
        let claude = crate::models::lookup("claude-sonnet-4-5").unwrap();
        let p = CacheConfig::default().pricing(&claude);
        assert_eq!(
            (p.provider, p.read, p.write),
            (CacheProvider::Anthropic, 0.1, 1.25)
        );
        let hour = CacheConfig {
            ttl: CacheTtl::OneHour,
            ..CacheConfig::default()
        };
        assert_eq!(hour.pricing(&claude).write, 2.0);
        let gpt = crate::models::lookup("gpt-4o").unwrap();
        assert_eq!(CacheConfig::default().pricing(&gpt).read, 0.5);
        let none = CacheConfig {
            provider: Some(CacheProvider::None),
            ..CacheConfig::default()
        };
        let p = none.pricing(&gpt);
        assert_eq!((p.read, p.break_cost(1_000)), (1.0, 0.0));
        assert!(!none.batches(&p) && none.min_break_saving(&p, 128_000) == 0);
        let p = CacheConfig::default().pricing(&claude);
        assert_eq!(
            (
                p.read < 1.0,
                CacheConfig::default().min_break_saving(&p, 8_000)
            ),
            (true, 400)
        );
        assert_eq!(CacheConfig::default().min_break_saving(&p, 200_000), 2_000);
        let p = CacheConfig::default().pricing(&claude);
        assert!((p.break_cost(1_000) - 1_150.0).abs() < 1e-9);
    }

    #[test]
    fn anthropic_breakpoints_stay_within_the_limit() {
        assert_eq!(anthropic_breakpoints(&[], &[], 4), Breakpoints::default());
        // The system prompt last: one breakpoint serves both.
        let b = anthropic_breakpoints(&[false, true], &[false, false], 4);
        assert_eq!((b.add, b.remove), (vec![1], vec![]));
        // One allowed: the system prompt's; the others go, oldest first.
        let b = anthropic_breakpoints(&[true, false, false], &[false, true, true], 1);
        assert_eq!((b.add, b.remove), (vec![0], vec![1, 2]));
        // None allowed: every breakpoint goes.
        let b = anthropic_breakpoints(&[true, false], &[true, true], 0);
        assert_eq!((b.add, b.remove), (vec![], vec![0, 1]));
        // More than Anthropic takes: four.
        let b = anthropic_breakpoints(&[false; 7], &[true; 7], 9);
        assert_eq!((b.add, b.remove), (vec![], vec![0, 1, 2]));
    }
}
