"""Case-file edits keep the author's formatting: only the changed lines differ."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from redline.deciding.edits import plan_loosen, plan_raise_samples, plan_retire
from redline.errors import UsageError

FOUR_SPACE = """\
# quirky but valid: four-space mappings, indentless sequence, flow map, quotes kept
id: 0100-four-space
provenance: {ticket: SUP-100, reported: 2026-09-01}
vars:
    text: 'It''s "quoted"'
tier: contract
assert:
- type: regex          # the shape
  value: '^\\d+$'
- type: max-chars
  value: 40
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "case.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    return [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=False) if a != b]


def test_raise_samples_inserts_the_key_and_keeps_everything_else(tmp_path: Path) -> None:
    path = _write(tmp_path, FOUR_SPACE)
    edit = plan_raise_samples(path, "0100-four-space", 20)
    after = edit.writes[path]
    assert after == FOUR_SPACE.replace("tier: contract\n", "tier: contract\nsamples: 20\n")
    assert path.read_text(encoding="utf-8") == FOUR_SPACE
    edit.apply()
    assert path.read_text(encoding="utf-8") == after


def test_raise_samples_refuses_to_lower(tmp_path: Path) -> None:
    path = _write(tmp_path, FOUR_SPACE.replace("tier: contract\n", "tier: contract\nsamples: 9\n"))
    with pytest.raises(UsageError, match="already 9"):
        plan_raise_samples(path, "0100-four-space", 5)


def test_loosen_changes_one_value_and_notes_the_reason(tmp_path: Path) -> None:
    path = _write(tmp_path, FOUR_SPACE)
    edit = plan_loosen(
        path, "0100-four-space", 1, "80", "ids grew to 5 digits", dt.date(2026, 11, 30)
    )
    after = edit.writes[path]
    assert _changed_lines(FOUR_SPACE, after) == [("  value: 40", "  value: 80")]
    assert after.endswith(
        "  value: 80\n  note: 'loosened 2026-11-30 (value 40 → 80): ids grew to 5 digits'\n"
    )
    assert edit.commit_message == (
        "redline: loosen case 0100-four-space assertion 1 (max-chars) value 40 → 80: "
        "ids grew to 5 digits"
    )


def test_loosen_needs_a_reason_and_an_existing_assertion(tmp_path: Path) -> None:
    path = _write(tmp_path, FOUR_SPACE)
    with pytest.raises(UsageError, match="needs a reason"):
        plan_loosen(path, "c", 1, "80", "  ", dt.date(2026, 11, 30))
    with pytest.raises(UsageError, match="no assertion number 5"):
        plan_loosen(path, "c", 5, "80", "why", dt.date(2026, 11, 30))


def test_retire_moves_into_retired_and_refuses_to_overwrite(tmp_path: Path) -> None:
    path = _write(tmp_path, FOUR_SPACE)
    edit = plan_retire(path, tmp_path, "0100-four-space", "noise", "ana", dt.date(2026, 11, 30))
    target = tmp_path / "retired" / "case.yaml"
    assert edit.removes == (path,)
    assert edit.writes[target] == (
        FOUR_SPACE + "retired:\n    date: 2026-11-30\n    reason: noise\n    by: ana\n"
    )
    edit.apply()
    assert not path.exists() and target.is_file()
    _write(tmp_path, FOUR_SPACE)
    with pytest.raises(UsageError, match="already exists"):
        plan_retire(path, tmp_path, "0100-four-space", "noise", "ana", dt.date(2026, 11, 30))


def test_typed_values_follow_the_current_value() -> None:
    from redline.deciding.edits import in_words, typed_value
    from redline.errors import UsageError

    assert typed_value("Here is", "Here is the JSON:") == "Here is the JSON:"
    assert typed_value("x", "{a: 1}") == "{a: 1}"
    assert typed_value(400, " 800 ") == 800
    assert typed_value(0.5, "0.3") == 0.3
    assert typed_value(True, "false") is False
    assert typed_value(["a"], '["a", "b"]') == ["a", "b"]
    for old, text in ((400, "8e2x"), (0.5, "nan"), (True, "yes please"), (["a"], "{a: 1}")):
        with pytest.raises(UsageError):
            typed_value(old, text)
    assert in_words("Here is the JSON:") == '"Here is the JSON:"'
    assert in_words(800) == "800"


SEQUENTIAL = """\
id: seq   # sequential, quality
provenance: {ticket: SUP-7,   reported: 2026-09-01}
tier:    quality
samples: {min: 3, max: 10, bar: 0.7}
assert:
  - {type: contains,  value: "total"}
  - type: max-chars
    value:    40
"""


def _plan_of(text: str) -> dict[str, object]:
    import yaml

    from redline.casemodel.effective import effective_case

    reading = effective_case(yaml.safe_load(text), "c.yaml", None, None)
    assert [i for i in reading.issues if i.at[:1] != ("retired",)] == []
    assert reading.sampling is not None
    return dict(reading.sampling)


def test_more_samples_on_a_sequential_case_raises_max_and_keeps_the_plan(tmp_path: Path) -> None:
    path = _write(tmp_path, SEQUENTIAL)
    edit = plan_raise_samples(path, "seq", 11)
    after = edit.writes[path]
    assert _changed_lines(SEQUENTIAL, after) == [
        ("samples: {min: 3, max: 10, bar: 0.7}", "samples: {min: 3, max: 11, bar: 0.7}")
    ]
    assert _plan_of(after) == {"min": 3, "max": 11, "margin": 0.15, "bar": 0.7}
    assert edit.summary == "samples.max 10 → 11"
    with pytest.raises(UsageError, match=r"samples.max is already 10"):
        plan_raise_samples(path, "seq", 10)


def test_a_plan_taken_from_the_suite_is_kept_when_the_case_gets_more_samples(
    tmp_path: Path,
) -> None:
    (tmp_path / "suite.yaml").write_text("samples: {min: 4, max: 8, bar: 0.9}\n")
    text = SEQUENTIAL.replace("samples: {min: 3, max: 10, bar: 0.7}\n", "")
    path = _write(tmp_path, text)
    after = plan_raise_samples(path, "seq", 12).writes[path]
    assert _plan_of(after) == {"min": 4, "max": 12, "margin": 0.15, "bar": 0.9}
    assert [line for line in after.splitlines() if line not in text.splitlines()] == [
        "samples: {min: 4, max: 12, margin: 0.15, bar: 0.9}"
    ]


def test_every_edit_keeps_a_sequential_plan_and_the_author_s_bytes(tmp_path: Path) -> None:
    from redline.deciding.edits import plan_quarantine

    day = dt.date(2026, 11, 30)
    edits = {
        "retire": lambda p: plan_retire(p, tmp_path, "seq", "noise", "ana", day),
        "quarantine": lambda p: plan_quarantine(
            p, "seq", "flaky", "T-9", dt.date(2027, 1, 31), day
        ),
        "loosen": lambda p: plan_loosen(p, "seq", 1, "80", "ids grew", day),
    }
    for name, plan in edits.items():
        path = _write(tmp_path, SEQUENTIAL)
        edit = plan(path)
        (after,) = edit.writes.values()
        assert _plan_of(after)["bar"] == 0.7, name
        kept = [line for line in SEQUENTIAL.splitlines() if line not in after.splitlines()]
        assert kept == (["    value:    40"] if name == "loosen" else []), name
