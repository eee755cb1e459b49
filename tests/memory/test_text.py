"""What tell does to text: chunks cut between sentences, concepts found without a model."""

from __future__ import annotations

from apps.memory.text import CHUNK_CHARS, concepts_extract, content_chunks


def test_short_content_is_one_chunk() -> None:
    assert content_chunks("  One sentence.  ") == ["One sentence."]


def test_long_content_is_cut_between_sentences_and_loses_nothing() -> None:
    text = " ".join(f"Line {index} says something about item {index}." for index in range(1200))
    chunks = content_chunks(text)
    assert len(chunks) > 1
    assert all(len(chunk) <= CHUNK_CHARS for chunk in chunks)
    assert all(chunk.endswith(".") for chunk in chunks)
    assert " ".join(chunks) == text


def test_a_sentence_longer_than_a_chunk_is_cut_at_a_space_or_hard() -> None:
    words = "word " * 5000
    assert all(len(chunk) <= CHUNK_CHARS for chunk in content_chunks(words))
    assert [len(chunk) for chunk in content_chunks("x" * 20_000)] == [8000, 8000, 4000]


def test_concepts_are_phrases_identifiers_names_and_recurring_words() -> None:
    concepts = concepts_extract(
        "The Golden Gate Bridge opened in 1937. Engineers painted the bridge in International Orange. "
        "RFC-9110 defines HTTP semantics; the bridge carries US-101."
    )
    assert {"golden gate bridge", "international orange", "rfc-9110", "us-101", "bridge"} <= set(concepts)
    assert "the" not in concepts and "in" not in concepts
    assert concepts_extract("Backups run nightly; the backups are encrypted.")[0] == "backup"


def test_no_concepts_in_stopwords_alone() -> None:
    assert concepts_extract("and the of to it is") == []
