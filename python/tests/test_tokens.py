"""Exactness: every case of the committed fixture (tests/fixtures/token-counts.json, counted by
the official tiktoken's encode_ordinary) counts the same through the Python package, for both
encodings."""

from __future__ import annotations

import json
import os

import pytest

from context_compactor import EncodingError, InvalidMessageError, count_tokens

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
