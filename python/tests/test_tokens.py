"""Exactness: every case of the committed fixture (tests/fixtures/token-counts.json, counted by
the official tiktoken's encode_ordinary) counts the same through the Python package, for both
encodings."""

from __future__ import annotations

import json
import math
import os

import pytest

from context_compactor import EncodingError, InvalidConfigError, InvalidMessageError, count_tokens

from conftest import REPO

with open(os.path.join(REPO, "tests", "fixtures", "token-counts.json"), encoding="utf-8") as f:
    FIXTURE = json.load(f)


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_every_fixture_case_counts_exactly(encoding: str) -> None:
    cases = FIXTURE["cases"]
    assert len(cases) > 50
    wrong = [(c["name"], count_tokens(c["text"], encoding), c[encoding]) for c in cases if count_tokens(c["text"], encoding) != c[encoding]]
    assert wrong == []
    # The fixture is not trivial: long, multi-token cases are in it.
    assert max(c[encoding] for c in cases) > 1_000


def test_unknown_encoding_and_non_text_are_typed_errors() -> None:
    with pytest.raises(EncodingError) as e:
        count_tokens("x", "p50k_base")
    assert e.value.code == "unknown_encoding" and e.value.details["name"] == "p50k_base"
    with pytest.raises(InvalidMessageError):
        count_tokens(7)  # type: ignore[arg-type]


def test_lone_surrogates_count_as_replacement_characters() -> None:
    # tiktoken replaces a lone surrogate with U+FFFD before encoding; so does the core.
    assert count_tokens("a\ud83d b") == count_tokens("a\ufffd b")


def test_model_info_and_count_model_tokens_exact_or_by_the_family_factor() -> None:
    from context_compactor import count_model_tokens, model_info

    text = "Count me for a model: 日本語, naïve café."
    gpt = count_model_tokens(text, "openai/gpt-4o")
    assert gpt == {"tokens": count_tokens(text), "exact": True, "counter": "o200k_base", "ratio": 1.0}
    claude = model_info("claude-sonnet-4-5")
    assert claude["tokenizer"] is None and claude["tokenRatio"] > 1
    estimate = count_model_tokens(text, "claude-sonnet-4-5")
    assert estimate["exact"] is False and estimate["ratio"] == claude["tokenRatio"]
    assert estimate["tokens"] == math.ceil(count_tokens(text) * claude["tokenRatio"])
    qwen = model_info("qwen/qwen3-32b")
    assert qwen["tokenizer"] == "qwen3"
    # Qwen's tokenizer ships with the package (loaded on first use): exact; GPT-4 (cl100k) exact;
    # Llama's is not shipped and not loaded here: its family's estimate.
    assert count_model_tokens(text, "qwen/qwen3-32b") == {"tokens": count_tokens(text, "qwen3"), "exact": True, "counter": "qwen3", "ratio": 1.0}
    assert count_tokens(text, "qwen3") != count_tokens(text)
    llama = model_info("meta-llama/Llama-3.1-8B-Instruct")
    assert count_model_tokens(text, "meta-llama/Llama-3.1-8B-Instruct") == {"tokens": math.ceil(count_tokens(text) * llama["tokenRatio"]), "exact": False, "counter": "o200k_base", "ratio": llama["tokenRatio"]}
    assert count_model_tokens(text, "gpt-4") == {"tokens": count_tokens(text, "cl100k_base"), "exact": True, "counter": "cl100k_base", "ratio": 1.0}
    assert model_info("nothing-like-it")["matched"] is None
    assert count_model_tokens("a\ud83d b", "gpt-4o")["tokens"] == count_tokens("a\ufffd b")
    with pytest.raises(InvalidMessageError):
        count_model_tokens(7, "gpt-4o")  # type: ignore[arg-type]
    with pytest.raises(InvalidConfigError) as e:
        model_info(None)  # type: ignore[arg-type]
    assert e.value.field == "model"
    assert model_info("claude-\ud83d")["family"] == "anthropic"
