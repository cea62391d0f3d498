"""The loader and the guard read case files with one reader, so they cannot disagree.

The variants are generated from the declarations (every case, suite, samples, quarantine,
provenance and prompt key; every parameter of every assertion type), each given a value
of every kind YAML can hold. For each, the loader (file:line:column) and the guard's
reading (key paths, repository files) must accept or refuse alike, with the same messages
at the same places.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from redline.assertions import load_optional_types
from redline.casemodel import (
    CASE_KEYS,
    COMMON_KEYS,
    PROMPT_KEYS,
    PROVENANCE_KEYS,
    QUARANTINE_KEYS,
    SAMPLES_KEYS,
    SUITE_KEYS,
    Compare,
    Param,
    Value,
    assertion_model,
    declared_types,
)
from redline.casemodel.effective import Issue, effective_case, suite_bar
from redline.documents.yamlsource import load_text
from redline.errors import ProblemsError
from redline.guard import Kind, loosenings_between
from redline.suite.cases import load_suite

#: One value of every kind a YAML file can hold, including the awkward ones.
KINDS: dict[str, Any] = {
    "null": None,
    "true": True,
    "false": False,
    "zero": 0,
    "negative": -1,
    "one": 1,
    "two": 2,
    "large": 10_000,
    "fraction": 0.5,
    "above one": 1.5,
    "empty text": "",
    "blank text": "   ",
    "text": "some text",
    "placeholder": "{{nope}}",
    "file": "file://fixtures/q.txt",
    "missing file": "file://fixtures/none.txt",
    "json file": "file://schemas/s.json",
    "date": date(2026, 12, 31),
    "list": ["a"],
    "mapping": {"a": 1},
}
SUITE: dict[str, Any] = {
    "name": "s",
    "model": "local",
    "prompt": {"system": "p.md", "user": "{{q}}"},
}
CASE: dict[str, Any] = {
    "id": "c",
    "provenance": {"ticket": "T-1"},
    "vars": {"q": "hi"},
    "assert": [{"type": "max-chars", "value": 400}],
}
#: Types whose loader also asks the running installation (a backend that can answer, the
#: configured tones, a rubric's own file, the JSON Schema meta-schema): there the loader
#: may refuse more than the file says, never less.
ASKS_THE_INSTALLATION = {"mentions", "not-mentions", "tone", "grounded-in", "judge", "is-json"}


def _valid(param: Param) -> Any:
    """A value the declaration accepts for `param`."""
    if param.choices:
        return param.choices[0]
    if param.compare is Compare.CODE:
        return "len(output) > 0"
    by_kind: dict[Value, Any] = {
        Value.NUMBER: 0.5 if param.maximum is not None else 10,
        Value.INTEGER: 2,
        Value.BOOLEAN: True,
        Value.FLAGS: "i",
        Value.JSON_FILE: "file://schemas/s.json",
        Value.PATH: "file://fixtures/q.txt",
    }
    return by_kind.get(param.value, "some text")


def _entry(type_name: str) -> dict[str, Any]:
    model = assertion_model(type_name)
    assert model is not None
    entry: dict[str, Any] = {"type": type_name}
    for param in model.params:
        if param.required:
            entry[param.key] = _valid(param)
    return entry


def _variants() -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(name, suite, case) for every declared key and parameter with every kind of value."""
    for kind, value in KINDS.items():
        for key in sorted(CASE_KEYS):
            yield f"case {key}={kind}", SUITE, {**CASE, key: value}
        for key in sorted(SAMPLES_KEYS):
            samples = {"min": 2, "max": 6, key: value}
            yield f"case samples.{key}={kind}", SUITE, {**CASE, "samples": samples}
        for key in sorted(QUARANTINE_KEYS):
            quarantine = {"reason": "flaky", "until": date(2026, 12, 31), key: value}
            yield f"case quarantine.{key}={kind}", SUITE, {**CASE, "quarantine": quarantine}
        for key in sorted(PROVENANCE_KEYS):
            provenance = {"ticket": "T-1", key: value}
            yield f"case provenance.{key}={kind}", SUITE, {**CASE, "provenance": provenance}
        yield f"case vars.q={kind}", SUITE, {**CASE, "vars": {"q": value}}
        for key in sorted(SUITE_KEYS):
            yield f"suite {key}={kind}", {**SUITE, key: value}, CASE
        for key in sorted(PROMPT_KEYS):
            prompt = {**SUITE["prompt"], key: value}
            yield f"suite prompt.{key}={kind}", {**SUITE, "prompt": prompt}, CASE
        for type_name in declared_types():
            model = assertion_model(type_name)
            assert model is not None
            for key in sorted(model.keys | COMMON_KEYS):
                entry = {**_entry(type_name), key: value}
                yield f"{type_name}.{key}={kind}", SUITE, {**CASE, "assert": [entry]}
    for type_name in declared_types():
        yield f"{type_name} as declared", SUITE, {**CASE, "assert": [_entry(type_name)]}
        model = assertion_model(type_name)
        assert model is not None
        for param in model.params:
            entry = {k: v for k, v in _entry(type_name).items() if k != param.key}
            yield f"{type_name} without {param.key}", SUITE, {**CASE, "assert": [entry]}


VARIANTS = list(_variants())


def _placed(text: str, issues: tuple[Issue, ...]) -> set[tuple[int, str, str]]:
    root, problems = load_text(text, "c.yaml")
    assert root is not None, problems
    return {(root.mark_at(i.at, i.on_key).line, i.message, i.hint) for i in issues}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    load_optional_types()
    root = tmp_path_factory.mktemp("parity")
    (root / "p.md").write_text("Be brief.")
    (root / "fixtures").mkdir()
    (root / "fixtures" / "q.txt").write_text("What is the total?")
    (root / "schemas").mkdir()
    (root / "schemas" / "s.json").write_text('{"type": "object"}')
    return root


def test_the_variants_cover_every_declared_key_and_parameter() -> None:
    names = {name.split("=")[0] for name, _s, _c in VARIANTS}
    assert {f"case {key}" for key in CASE_KEYS} <= names
    assert {f"suite {key}" for key in SUITE_KEYS} <= names
    for type_name in declared_types():
        model = assertion_model(type_name)
        assert model is not None
        assert {f"{type_name}.{key}" for key in model.keys} <= names
    assert len(VARIANTS) > 2000


@pytest.mark.parametrize(("name", "suite", "case"), VARIANTS, ids=[v[0] for v in VARIANTS])
def test_loader_and_guard_agree(
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    suite: dict[str, Any],
    case: dict[str, Any],
) -> None:
    monkeypatch.chdir(folder)
    suite_text = yaml.safe_dump(copy.deepcopy(suite))
    case_text = yaml.safe_dump(copy.deepcopy(case))
    (folder / "suite.yaml").write_text(suite_text)
    (folder / "c.yaml").write_text(case_text)
    try:
        load_suite(Path("."))
        problems: list[Any] = []
    except ProblemsError as exc:
        problems = exc.problems
    files = {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }
    bar = suite_bar(yaml.safe_load(suite_text), "", files.get)
    reading = effective_case(yaml.safe_load(case_text), "c.yaml", bar, files.get)

    loader_case = {(p.line, p.message, p.hint) for p in problems if p.path == "c.yaml"}
    guard_case = _placed(case_text, reading.issues)
    loader_suite = {(p.line, p.message, p.hint) for p in problems if p.path == "suite.yaml"}
    guard_suite = _placed(suite_text, bar.issues)
    entries = case.get("assert")
    listed = entries if isinstance(entries, list) else []
    installation = {str(e.get("type")) for e in listed if isinstance(e, dict)}
    if installation & ASKS_THE_INSTALLATION:
        assert guard_case <= loader_case, name
    else:
        assert loader_case == guard_case, name
    # Model aliases are checked against the configuration, which only the loader has.
    assert {p for p in loader_suite if "must be an alias" not in p[1]} == guard_suite


SUITE_TEXT = "name: s\nmodel: local\nprompt: {system: p.md, user: '{{q}}'}\n"
CASE_HEAD = "id: c\nprovenance: {ticket: T-1}\nvars: {q: hi}\n"


def _both(tmp_path: Path, case_text: str) -> tuple[list[str], list[str]]:
    """(the loader's messages, the guard's findings) for one case file on disk."""
    (tmp_path / "suite.yaml").write_text(SUITE_TEXT)
    (tmp_path / "p.md").write_text("Be brief.")
    good = CASE_HEAD + "assert: [{type: max-chars, value: 400}]\n"
    (tmp_path / "c.yaml").write_text(case_text)
    try:
        load_suite(tmp_path)
        loader: list[str] = []
    except ProblemsError as exc:
        loader = [f"{p.line}:{p.column} {p.message}" for p in exc.problems]
    guard = [
        f"{f.detail}"
        for f in loosenings_between(good, case_text, path=tmp_path / "c.yaml")
        if f.kind is Kind.BROKEN
    ]
    return loader, guard


@pytest.mark.parametrize(
    ("written", "message"),
    [
        ("id: ''\n", "`id` is empty"),
        ("id: 42\n", "`id` must be a non-empty string, not an integer"),
        ("golden: 5\n", "`golden` must be text or a file:// reference, not an integer"),
        ("samples: {min: 0, max: 4}\n", "`min` must be at least 1, got 0"),
    ],
)
def test_what_the_loader_refuses_the_guard_refuses_in_the_same_words(
    tmp_path: Path, written: str, message: str
) -> None:
    case_text = CASE_HEAD.replace("id: c\n", "") + written
    case_text += "assert: [{type: max-chars, value: 400}]\n"
    loader, guard = _both(tmp_path, case_text)
    assert [m.split(" ", 1)[1] for m in loader] == [message]
    assert guard == [f"new side does not load: {message}"]


def test_a_refusal_with_a_null_value_loads_and_the_guard_lets_it_through(tmp_path: Path) -> None:
    case_text = CASE_HEAD + "assert: [{type: refusal, value: null}]\n"
    assert _both(tmp_path, case_text) == ([], [])
    refusal = load_suite(tmp_path).case("c").assertions[0]
    assert getattr(refusal, "expected", None) is True  # the declared default


def test_samples_min_is_reported_under_its_own_key_path(tmp_path: Path) -> None:
    case_text = CASE_HEAD + "samples:\n  max: 4\n  min: 0\nassert: [{type: max-chars, value: 9}]\n"
    reading = effective_case(yaml.safe_load(case_text), "c.yaml", None, None)
    assert [(i.at, i.message) for i in reading.issues] == [
        (("samples", "min"), "`min` must be at least 1, got 0")
    ]
    loader, _ = _both(tmp_path, case_text)
    assert loader == ["6:8 `min` must be at least 1, got 0"]


def test_a_declared_case_setting_is_read_checked_compared_and_handed_to_the_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from redline import casemodel

    monkeypatch.setattr(casemodel, "_SETTINGS", {})
    casemodel.declare_setting(
        Param("max_steps", Value.INTEGER, Compare.CEILING, default=None, minimum=1)
    )
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "q.txt").write_text("What is the total?")
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "s.json").write_text('{"type": "object"}')
    for kind, value in KINDS.items():
        case = {**CASE, "max_steps": value}
        folder = tmp_path / kind.replace(" ", "-")
        folder.mkdir()
        for name in ("fixtures", "schemas"):
            (folder / name).symlink_to(tmp_path / name)
        loader, guard = _both(folder, yaml.safe_dump(case))
        usable = isinstance(value, int) and not isinstance(value, bool) and value >= 1
        assert bool(loader) is not (usable or value is None), kind
        assert [f"new side does not load: {m.split(' ', 1)[1]}" for m in loader] == guard, kind
        if usable:
            assert load_suite(folder).case("c").settings == {"max_steps": value}
    good = CASE_HEAD + "max_steps: 3\nassert: [{type: max-chars, value: 400}]\n"
    looser = good.replace("max_steps: 3", "max_steps: 5")
    found = loosenings_between(good, looser, path=tmp_path / "one" / "c.yaml")
    assert [(f.kind, f.detail) for f in found] == [(Kind.LOOSENING, "max_steps 3 → 5")]
    assert loosenings_between(looser, good, path=tmp_path / "one" / "c.yaml") == []
