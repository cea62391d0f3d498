"""The held-out slices measure what the README promises only while they stay held out: every
group parallel in the four languages, no reply naming its concept (the embeddings must
decide, not the literal rule), and the concepts said to be outside the glossary and every
other split still outside them. A glossary entry added for `chargeback` would otherwise
turn the figure for "a concept nobody here saw" into one for a concept the glossary knows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from redline.semantic.calibration import shipped_set
from redline.semantic.glossary import shipped_glossary
from redline.semantic.scorer import _names

DATA = Path(__file__).resolve().parents[1] / "bench" / "data"
LANGS = ("en", "zh", "id", "vi")
RELATED = {"paraphrase": True, "negation": True, "same-domain": False, "opposite": False}

#: The second slice's concepts that are glossary entries (replies for them no split had).
SECOND_SLICE_ENTRIES = {
    "lost parcel",
    "wrong item",
    "partial refund",
    "price match",
    "defective product",
    "security alert",
    "callback",
}


def _groups(file: str) -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = json.loads((DATA / file).read_text("utf-8"))["mentions"]
    return groups


def _other_splits() -> set[str]:
    """English concepts of the calibration split and the evaluation split."""
    evaluation = json.loads((DATA / "semantic_eval.json").read_text("utf-8"))["mentions"]
    return {g.concept["en"] for g in shipped_set().groups} | {
        g["concept"]["en"] for g in evaluation
    }


@pytest.mark.parametrize("file", ["semantic_heldout.json", "semantic_heldout2.json"])
def test_every_group_is_parallel_and_labelled_by_its_kind(file: str) -> None:
    groups = _groups(file)
    assert len(groups) == 84
    for group in groups:
        assert set(group["concept"]) == set(LANGS) and set(group["text"]) == set(LANGS)
        assert all(group["concept"][lang].strip() and group["text"][lang].strip() for lang in LANGS)
        assert group["related"] is RELATED[group["kind"]], group


@pytest.mark.parametrize("file", ["semantic_heldout.json", "semantic_heldout2.json"])
def test_no_reply_names_its_concept_in_any_language(file: str) -> None:
    named = [
        (group["concept"][a], group["text"][b])
        for group in _groups(file)
        for a in LANGS
        for b in LANGS
        if _names(group["concept"][a]).search(group["text"][b])
    ]
    assert named == []


def test_the_first_slice_is_outside_the_glossary_and_every_other_split() -> None:
    glossary = shipped_glossary()
    groups = _groups("semantic_heldout.json")
    assert not [
        g["concept"][lang]
        for g in groups
        for lang in LANGS
        if glossary.entry(g["concept"][lang], lang)
    ]
    assert not {g["concept"]["en"] for g in groups} & _other_splits()


def test_the_second_slice_has_seven_entries_and_seven_concepts_outside() -> None:
    glossary = shipped_glossary()
    english = {g["concept"]["en"] for g in _groups("semantic_heldout2.json")}
    assert len(english) == 14
    entries = {concept for concept in english if glossary.entry(concept, "en") is not None}
    assert entries == SECOND_SLICE_ENTRIES
    outside = [g for g in _groups("semantic_heldout2.json") if g["concept"]["en"] not in entries]
    assert not [
        g["concept"][lang]
        for g in outside
        for lang in LANGS
        if glossary.entry(g["concept"][lang], lang)
    ]
    assert not english & _other_splits()
    first = {g["concept"]["en"] for g in _groups("semantic_heldout.json")}
    assert not english & first
