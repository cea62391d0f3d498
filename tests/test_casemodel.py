"""The case-file model: one declaration for the loader and the guard, and how values compare."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
import yaml

from redline.assertions import Assertion, load_optional_types, register, registered_types
from redline.casemodel import CASE_KEYS, assertion_model, declared_types
from redline.casemodel.diff import diff_cases
from redline.casemodel.effective import effective_case, suite_bar
from redline.casemodel.values import (
    Change,
    forbidden_text_change,
    pattern_change,
    required_text_change,
)
from redline.errors import ProblemsError
from redline.guard import loosenings_between
from redline.suite.cases import load_suite

PROV = {"ticket": "T-1"}


def test_every_assertion_class_is_declared_and_every_declared_type_exists() -> None:
    load_optional_types()
    assert set(registered_types()) == set(declared_types())
    for name in declared_types():
        model = assertion_model(name)
        assert model is not None and model.params, name


def test_an_undeclared_type_cannot_register() -> None:
    with pytest.raises(ValueError, match="not declared in the case-file model"):

        @register("similarity")
        class Similarity(Assertion):  # pragma: no cover - never registered
            pass


def test_golden_is_a_case_key_read_verbatim(tmp_path: Path) -> None:
    assert "golden" in CASE_KEYS
    suite = {"name": "s", "prompt": {"system": "p.md", "user": "{{q}}"}, "model": "local"}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    (tmp_path / "p.md").write_text("Be brief.")
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "x.txt").write_bytes("Hello,\r\n  world ✓\n".encode())
    for name, golden in (("a", "file://fixtures/x.txt"), ("b", "inline answer")):
        case = {"id": name, "provenance": PROV, "vars": {"q": "hi"}, "golden": golden}
        case["assert"] = [{"type": "max-chars", "value": 9}]
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(case))
    loaded = load_suite(tmp_path)
    assert loaded.case("a").golden == "Hello,\r\n  world ✓\n"
    assert loaded.case("b").golden == "inline answer"
    assert tmp_path / "fixtures" / "x.txt" in loaded.case("a").files

    (tmp_path / "a.yaml").write_text((tmp_path / "a.yaml").read_text().replace("x.txt", "y.txt"))
    with pytest.raises(ProblemsError, match=r"golden answer .*y\.txt does not exist"):
        load_suite(tmp_path)


@pytest.mark.parametrize(
    ("old", "old_i", "new", "new_i", "expected"),
    [
        ("order", False, "your order", False, Change.TIGHTER),
        ("your order", False, "order", False, Change.LOOSER),
        ("refund", True, "refund", False, Change.TIGHTER),
        ("refund", False, "refund", True, Change.LOOSER),
        ("Refund", True, "your refund", True, Change.TIGHTER),
        ("42", False, "total 42", True, Change.TIGHTER),
        ("order", False, "parcel", False, Change.LOOSER),
        ("order", False, "order", False, Change.SAME),
    ],
)
def test_required_text(old: str, old_i: bool, new: str, new_i: bool, expected: Change) -> None:
    assert required_text_change(old, old_i, new, new_i) is expected


def test_forbidden_text() -> None:
    old = "I am just an AI language model"
    assert forbidden_text_change(old, "AI language model") is Change.TIGHTER
    assert forbidden_text_change("AI language model", old) is Change.LOOSER
    assert forbidden_text_change(old, "As a chatbot") is Change.LOOSER


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("\\d+ EUR", "^\\d+ EUR$", Change.TIGHTER),
        ("a|b", "^(?:a|b)$", Change.TIGHTER),
        ("\\bok\\b", "ok", Change.LOOSER),
        ("abc", "abc total", Change.TIGHTER),
        ("abc", "x|abc", Change.REVIEW),  # an alternative added widens it
        ("abc", "abc{0,1}", Change.REVIEW),  # the last letter made optional
        ("abc", "(?i)abc", Change.REVIEW),  # case-blind
        ("a|b", "a|bc", Change.REVIEW),
        ("abc", "[0-9]+", Change.REVIEW),
    ],
)
def test_patterns_are_narrower_only_when_provably_so(old: str, new: str, expected: Change) -> None:
    assert pattern_change(old, "", new, "") is expected


def test_regex_flags() -> None:
    assert pattern_change("x", "", "x", "i") is Change.LOOSER
    assert pattern_change("x", "im", "x", "m") is Change.TIGHTER
    assert pattern_change("x", "m", "x", "s") is Change.REVIEW


def _case(**extra: object) -> dict[str, object]:
    return {"id": "c", "provenance": PROV, **extra}


def test_effective_bar_applies_defaults_suite_settings_vars_and_files() -> None:
    files = {"s/fixtures/p.txt": b"your refund", "s/fixtures/q.txt": b"refund"}
    checks: list[dict[str, object]] = [
        {"type": "contains", "value": "Ticket {{t}}"},
        {"type": "mentions", "value": "refund"},
        {"type": "contains", "value": "file://fixtures/p.txt"},
    ]
    data = _case(vars={"t": "A-1234"}, required=2, **{"assert": checks})
    suite = suite_bar({"name": "s", "prompt": {"system": "a", "user": "b"}, "model": "m"})
    case = effective_case(data, "s/c.yaml", suite, files.get)
    assert case.valid, case.issues
    assert (case.samples.value, case.samples.default, case.required.value) == (5, True, 2)
    assert case.assertions[0].params["value"].value == "Ticket A-1234"
    threshold = case.assertions[1].params["threshold"]
    assert (threshold.value, threshold.default) == (0.5, True)
    assert case.assertions[2].params["value"].value == "your refund"
    assert case.assertions[2].params["value"].source == "s/fixtures/p.txt"

    bigger = suite_bar({"prompt": {"system": "a", "user": "b"}, "model": "m", "samples": 8})
    raised = effective_case(data, "s/c.yaml", bigger, files.get)
    (change,) = diff_cases(case, raised).changes
    assert change.change is Change.LOOSER
    assert "required 2/5 → 2/8" in str(change)

    inline = _case(vars={"t": "A-1234"}, required=2, **{"assert": checks[:2]})
    inline["assert"] = [*checks[:2], {"type": "contains", "value": "your refund"}]
    same = effective_case(inline, "s/c.yaml", suite, files.get)
    assert diff_cases(case, same).changes == ()


def test_what_the_loader_refuses_is_an_issue() -> None:
    suite = suite_bar({"prompt": {"system": "a", "user": "b"}, "model": "m"})
    bad = [
        _case(required=0.6, **{"assert": [{"type": "max-chars", "value": 3}]}),
        _case(**{"defaults": {"samples": 3}}),
        {"id": "c", "assert": [{"type": "max-chars", "value": 3}]},
        _case(**{"assert": [{"type": "similarity", "value": 0.8}]}),
        _case(**{"assert": [{"type": "contains", "value": "x", "reason": "y"}]}),
        _case(**{"assert": [{"type": "regex", "value": "("}]}),
    ]
    for data in bad:
        assert not effective_case(data, "s/c.yaml", suite, {}.get).valid, data


def test_loosenings_between_reads_files_beside_a_real_path(tmp_path: Path) -> None:
    (tmp_path / "phrase.txt").write_text("your refund of 40 EUR")
    old = yaml.safe_dump(_case(**{"assert": [{"type": "contains", "value": "file://phrase.txt"}]}))
    new = yaml.safe_dump(_case(**{"assert": [{"type": "contains", "value": "refund"}]}))
    found = loosenings_between(old, new, path=tmp_path / "c.yaml")
    assert [f.detail for f in found] == [
        f'assert[0] contains "your refund of 40 EUR" (from {(tmp_path / "phrase.txt").as_posix()})'
        ' → "refund"'
    ]
    same = yaml.safe_dump(
        _case(**{"assert": [{"type": "contains", "value": "your refund of 40 EUR"}]})
    )
    assert loosenings_between(old, same, path=tmp_path / "c.yaml") == []


# The guard judges a case file by the model's reading of it; it must refuse exactly what
# the loader refuses, or a broken file passes the guard (or a good one is refused).
_SUITE = {"name": "s", "prompt": {"system": "p.md", "user": "{{q}}"}, "model": "local"}
_GOOD: dict[str, object] = {
    "id": "c",
    "provenance": {"ticket": "T-1", "reported": "2026-01-02"},
    "vars": {"q": "file://fixtures/q.txt", "n": 3},
    "golden": "file://fixtures/q.txt",
    "quarantine": {
        "reason": "flaky on the new model",
        "ticket": "SUP-3",
        "until": date(2026, 12, 31),
    },
    "assert": [
        {"type": "is-json", "schema": "file://schemas/s.json"},
        {"type": "contains", "value": "Ticket {{n}}", "note": "why"},
        {"type": "icontains", "value": "file://fixtures/q.txt"},
        {"type": "not-contains", "value": 42},
        {"type": "equals", "value": {"a": [1, 2]}},
        {"type": "regex", "value": "^\\d+$", "flags": "im"},
        {"type": "python", "value": "len(output) > 3"},
        {"type": "refusal", "value": False},
        {"type": "max-chars", "value": 400},
        {"type": "max-cost", "value": 0.01},
        {"type": "compression-ratio", "value": 0.35},
        {"type": "distinct-n", "value": 0.7, "n": 2},
    ],
}
_BROKEN_VARIANTS: dict[str, tuple[str, object]] = {
    "unknown key": ("defaults", {"samples": 3}),
    "float required": ("required", 0.6),
    "required above samples": ("required", 9),
    "zero samples": ("samples", 0),
    "bad tier": ("tier", "nightly"),
    "retired marker": ("retired", True),
    "vars not a mapping": ("vars", ["a"]),
    "missing fixture": ("vars", {"q": "file://fixtures/none.txt"}),
    "missing golden": ("golden", "file://fixtures/none.txt"),
    "sequential with required": ("samples", {"min": 2, "max": 6}),
    "quarantine without reason": ("quarantine", {"until": date(2026, 12, 31)}),
    "quarantine without a date": ("quarantine", {"reason": "flaky", "until": "soon"}),
    "quarantine unknown key": (
        "quarantine",
        {"reason": "x", "until": date(2026, 12, 31), "by": "me"},
    ),
}
_BROKEN_ASSERTIONS: dict[str, dict[str, object]] = {
    "unknown type": {"type": "similarity", "value": 0.8},
    "unknown parameter": {"type": "contains", "value": "x", "reason": "y"},
    "missing value": {"type": "max-chars"},
    "text as number": {"type": "max-chars", "value": "400"},
    "out of range": {"type": "compression-ratio", "value": 1.5},
    "bad regex": {"type": "regex", "value": "("},
    "bad flag": {"type": "regex", "value": "x", "flags": "q"},
    "empty contains": {"type": "contains", "value": ""},
    "missing var": {"type": "contains", "value": "{{nope}}"},
    "schema not a file": {"type": "is-json", "schema": "schemas/s.json"},
    "schema twice": {
        "type": "is-json",
        "schema": "file://schemas/s.json",
        "value": "file://schemas/s.json",
    },
    "refusal not boolean": {"type": "refusal", "value": "yes"},
    "n below one": {"type": "distinct-n", "value": 0.5, "n": 0},
    "python syntax": {"type": "python", "value": "len(output) >"},
}


def _variants() -> list[tuple[str, dict[str, object]]]:
    import copy

    found = [("good", copy.deepcopy(_GOOD))]
    for name, (key, value) in _BROKEN_VARIANTS.items():
        case = copy.deepcopy(_GOOD)
        case[key] = value
        if name == "sequential with required":
            case["required"] = 2
        found.append((name, case))
    for name, entry in _BROKEN_ASSERTIONS.items():
        case = copy.deepcopy(_GOOD)
        case["assert"] = [*case["assert"], entry]  # type: ignore[list-item]
        found.append((name, case))
    no_provenance = copy.deepcopy(_GOOD)
    del no_provenance["provenance"]
    found.append(("no provenance", no_provenance))
    return found


@pytest.mark.parametrize(("name", "case"), _variants(), ids=[n for n, _c in _variants()])
def test_the_model_refuses_what_the_loader_refuses(
    tmp_path: Path, name: str, case: dict[str, object]
) -> None:
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(_SUITE))
    (tmp_path / "p.md").write_text("Be brief.")
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "q.txt").write_text("What is the total?")
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "s.json").write_text('{"type": "object"}')
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(case))
    try:
        load_suite(tmp_path)
        loads = True
    except ProblemsError:
        loads = False
    files = {
        f"s/{p.relative_to(tmp_path).as_posix()}": p.read_bytes()
        for p in tmp_path.rglob("*")
        if p.is_file()
    }
    effective = effective_case(case, "s/c.yaml", suite_bar(_SUITE), files.get)
    assert loads is (name == "good")
    assert effective.valid is loads, effective.issues


def test_the_repository_s_own_cases_are_valid_in_the_model() -> None:
    root = Path(__file__).resolve().parent.parent
    for suite_file in sorted((root / "cases").glob("*/suite.yaml")):
        suite = suite_bar(yaml.safe_load(suite_file.read_text()))
        assert not suite.issues, (suite_file, suite.issues)
        for path in sorted(suite_file.parent.glob("*.yaml")):
            if path.name == "suite.yaml":
                continue
            rel = path.relative_to(root).as_posix()

            def read(p: str) -> bytes | None:
                target = root / p
                return target.read_bytes() if target.is_file() else None

            case = effective_case(yaml.safe_load(path.read_text()), rel, suite, read)
            assert case.valid, (rel, case.issues)


def test_a_concept_in_several_languages_is_read_and_its_edit_needs_a_reviewer() -> None:
    suite = suite_bar({"prompt": {"system": "a", "user": "b"}, "model": "m"})

    def read(value: object) -> object:
        data = _case(vars={"x": "dana"}, **{"assert": [{"type": "mentions", "value": value}]})
        return effective_case(data, "s/c.yaml", suite, {}.get)

    one = read("refund")
    several = read({"en": "refund", "id": "pengembalian {{x}}"})
    assert several.valid, several.issues
    assert several.assertions[0].params["value"].value == {
        "en": "refund",
        "id": "pengembalian dana",
    }
    assert read(["refund", "退款"]).assertions[0].params["value"].value == ["refund", "退款"]
    (change,) = diff_cases(one, several).changes
    assert change.change is Change.REVIEW
    for bad in ({"english": "refund"}, {"en": ""}, [], ["refund", 3]):
        assert not read(bad).valid, bad
    # A tone is still one name.
    tone = _case(**{"assert": [{"type": "tone", "value": ["formal"]}]})
    assert not effective_case(tone, "s/c.yaml", suite, {}.get).valid
