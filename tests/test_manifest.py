from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

from casefiles import CASE_HEAD, write_suite
from redline.running.manifest import case_hash, sample_configuration, suite_manifest
from redline.suite.cases import Suite, load_suite
from redline.text.words import COUNTING_RULE
from redline.version import __version__

SCHEMA = '{"type": "object"}'
CASE_A = (
    CASE_HEAD.replace("hello", "file://fixtures/scan.txt")
    + "assert:\n  - type: is-json\n    value: file://schemas/s.json\n"
)
CASE_B = CASE_HEAD + "assert: [{type: contains, value: hello}]\n"


def build(root: Path, scan: bytes = b"Rp 12.500.000,-\r\n") -> Suite:
    folder = write_suite(
        root,
        {"a.yaml": CASE_A, "b.yaml": CASE_B},
        files={"fixtures/scan.txt": scan, "schemas/s.json": SCHEMA},
    )
    return load_suite(folder)


def test_manifest_lists_every_input(tmp_path: Path) -> None:
    manifest = suite_manifest(build(tmp_path), "local:smollm2-135m-instruct-q4_1")
    assert sorted(manifest) == [
        "@model",
        "@redline",
        "@word-counting",
        "demo/@prompt.system",
        "demo/@prompt.user",
        "demo/a.yaml",
        "demo/b.yaml",
        "demo/fixtures/scan.txt",
        "demo/schemas/s.json",
        "demo/suite.yaml",
        "demo/system.txt",
    ]
    assert manifest["@model"] == "local:smollm2-135m-instruct-q4_1"
    assert manifest["@redline"] == __version__
    assert manifest["@word-counting"] == COUNTING_RULE
    assert manifest["demo/schemas/s.json"] == hashlib.sha256(SCHEMA.encode()).hexdigest()


def test_same_inputs_give_the_same_hashes(tmp_path: Path) -> None:
    first = build(tmp_path / "one")
    second = build(tmp_path / "two")
    assert suite_manifest(first, "m") == suite_manifest(second, "m")
    assert [case_hash(c) for c in first.cases] == [case_hash(c) for c in second.cases]
    assert suite_manifest(first, "m") == suite_manifest(load_suite(first.path), "m")


def test_one_changed_fixture_byte_changes_exactly_that_entry_and_case(tmp_path: Path) -> None:
    before = build(tmp_path / "one")
    after = build(tmp_path / "two", scan=b"Rp 12.500.000,-\n")
    old, new = suite_manifest(before, "m"), suite_manifest(after, "m")
    assert [k for k in old if old[k] != new[k]] == ["demo/fixtures/scan.txt"]
    assert case_hash(before.cases[0]) != case_hash(after.cases[0])
    assert case_hash(before.cases[1]) == case_hash(after.cases[1])


def test_prompt_and_model_change_the_manifest_but_not_the_case_hash(tmp_path: Path) -> None:
    suite = build(tmp_path)
    hashes = [case_hash(c) for c in suite.cases]
    old = suite_manifest(suite, "m")
    (suite.path / "system.txt").write_text("A reworded system prompt.", encoding="utf-8")
    changed = load_suite(suite.path)
    new = suite_manifest(changed, "m2")
    assert {k for k in old if old[k] != new[k]} == {
        "@model",
        "demo/@prompt.system",
        "demo/system.txt",
    }
    assert [case_hash(c) for c in changed.cases] == hashes


#: YAML that reads one way in a loaded case and could read another on a second parse: a
#: byte-order mark, an anchor and a `<<` merge, a date, an explicit string tag.
CASE_YAML_FEATURES = (
    "\ufeff"
    + CASE_HEAD.replace("hello", "!!str 2026-01-02")
    + "samples: 4\nassert:\n  - &c {type: contains, value: '2026'}\n"
    + "  - <<: *c\n    value: '01'\n"
)


def test_a_sample_configuration_is_the_same_read_from_the_loaded_case_or_its_file(
    tmp_path: Path,
) -> None:
    """A run hashes the case content it loaded instead of parsing each file again; the
    configurations stay those of earlier runs, whose samples count together with its own."""
    build(tmp_path)  # cases with a fixture and a schema
    suite = load_suite(write_suite(tmp_path, {"f.yaml": CASE_YAML_FEATURES}))
    assert len(suite.cases) == 3
    for case in suite.cases:
        assert case.content is not None
        from_file = sample_configuration(suite, replace(case, content=None), "m")
        assert sample_configuration(suite, case, "m") == from_file
