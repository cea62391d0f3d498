"""The guard on real temporary git repositories: what loosens, what tightens, what blocks."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import git
import pytest
import yaml

from redline.cli import main
from redline.guard import (
    Finding,
    GuardReport,
    Kind,
    check_commit,
    check_range,
    check_range_as_one,
    check_staged,
    index_has_prompt_change,
    loosenings_between,
)

CASE = "cases/support/0042-amount-suffix.yaml"
SCHEMA = "cases/support/schemas/invoice.json"
PYPROJECT = """\
[project]
name = "demo"
version = "1.0"

[tool.redline.models]
local = "local:smollm2-135m-instruct-q4_1"
"""
SUITE: dict[str, Any] = {
    "name": "support",
    "prompt": {"system": "system.md", "user": "file://user.txt"},
    "model": "local",
    "samples": 5,
    "tier": "quality",
}
BASE_CASE: dict[str, Any] = {
    "id": "0042-amount-suffix",
    "provenance": {"ticket": "T-42", "reported": "2025-01-10", "note": "12k read as 12"},
    "vars": {"amount": "12k"},
    "tier": "contract",
    "samples": 5,
    "required": 5,
    "expect_refusal": False,
    "assert": [
        {"type": "is-json", "schema": "file://schemas/invoice.json"},
        {"type": "contains", "value": "refund"},
        {"type": "max-chars", "value": 400},
        {"type": "not-contains", "value": "lawsuit"},
        {"type": "compression-ratio", "value": 0.35},
        {"type": "distinct-n", "value": 0.7, "n": 3},
        {"type": "mentions", "value": "refund", "threshold": 0.8},
        {"type": "regex", "value": "^\\d+"},
        {"type": "python", "value": "len(output) > 3"},
        {"type": "max-words", "value": 80},
        {"type": "max-tokens", "value": 200},
        {"type": "max-latency-ms", "value": 3000},
        {"type": "max-cost", "value": 0.01},
    ],
}
SCHEMA_DOC: dict[str, Any] = {
    "type": "object",
    "required": ["total", "currency"],
    "additionalProperties": False,
    "properties": {
        "total": {"type": "integer", "minimum": 0},
        "currency": {"enum": ["EUR", "USD"]},
        "lines": {"type": "array", "items": {"type": "object", "required": ["sku"]}},
    },
}


class TempRepo:
    """A small real git repository with one suite, written through the filesystem."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.repo = git.Repo.init(path, initial_branch="main")
        with self.repo.config_writer() as cfg:
            cfg.set_value("user", "name", "Guard Test")
            cfg.set_value("user", "email", "guard@example.invalid")
            cfg.set_value("commit", "gpgsign", "false")

    def write(self, rel: str, content: str | bytes | dict[str, Any]) -> None:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, dict):
            if rel.endswith(".json"):
                content = json.dumps(content, indent=2)
            else:
                content = yaml.safe_dump(content, sort_keys=False, allow_unicode=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")

    def move(self, src: str, dst: str) -> None:
        (self.path / dst).parent.mkdir(parents=True, exist_ok=True)
        self.repo.git.mv(src, dst)

    def remove(self, rel: str) -> None:
        (self.path / rel).unlink()

    def stage(self) -> None:
        self.repo.git.add("-A")

    def commit(self, message: str) -> str:
        self.stage()
        self.repo.git.commit("-m", message, "--no-verify", "--allow-empty")
        return self.repo.head.commit.hexsha

    def change_prompt(self) -> None:
        text = (self.path / "cases/support/system.md").read_text()
        self.write("cases/support/system.md", text + "Always answer in one sentence.\n")


def base_repo(path: Path, case: dict[str, Any] | None = None) -> TempRepo:
    repo = TempRepo(path)
    repo.write("pyproject.toml", PYPROJECT)
    repo.write("cases/support/suite.yaml", SUITE)
    repo.write("cases/support/system.md", "You are a careful support agent.\n")
    repo.write("cases/support/user.txt", "Customer wrote: {{amount}}\n")
    repo.write(CASE, case or BASE_CASE)
    repo.write(SCHEMA, SCHEMA_DOC)
    repo.write("cases/support/rubrics/slop.yaml", RUBRIC)
    repo.commit("initial suite")
    return repo


RUBRIC: dict[str, Any] = {
    "name": "slop",
    "judges": "filler and marketing language",
    "anchors": {1: "no filler", 3: "some filler", 5: "all filler"},
    "pass": {"max_score": 2},
    "min_kappa": 0.6,
    "model": "local",
    "prompt": "Rate the slop of: {{output}}",
}


def find(report: GuardReport, kind: Kind, text: str) -> Finding:
    for finding in report.findings:
        if finding.kind is kind and text in str(finding):
            return finding
    listing = "\n".join(f"{f.kind}: {f}" for f in report.findings)
    raise AssertionError(f"no {kind} finding containing {text!r} in:\n{listing}")


Mutation = Callable[[dict[str, Any]], None]


def _set(index: int, key: str, value: Any) -> Mutation:
    def apply(case: dict[str, Any]) -> None:
        case["assert"][index][key] = value

    return apply


def _top(key: str, value: Any) -> Mutation:
    def apply(case: dict[str, Any]) -> None:
        case[key] = value

    return apply


def _pop_assert(index: int) -> Mutation:
    def apply(case: dict[str, Any]) -> None:
        del case["assert"][index]

    return apply


def _both(*mutations: Mutation) -> Mutation:
    def apply(case: dict[str, Any]) -> None:
        for m in mutations:
            m(case)

    return apply


# (test id, mutation of the case, expected text, loosens?)
CASE_CHANGES: list[tuple[str, Mutation, str, bool]] = [
    ("required-lowered", _top("required", 4), "required 5 → 4 (of 5 samples)", True),
    ("tier-loosened", _top("tier", "quality"), 'tier "contract" → "quality"', True),
    (
        "samples-lowered-same-rate",
        _both(_top("samples", 3), _top("required", 3)),
        "samples 5 → 3, required 5/5 → 3/3",
        True,
    ),
    (
        "samples-raised-lower-rate",
        _both(_top("samples", 10), _top("required", 8)),
        "samples 5 → 10, required 5/5 → 8/10 (100% → 80%)",
        True,
    ),
    ("max-chars-raised", _set(2, "value", 800), "assert[2] max-chars 400 → 800", True),
    ("max-words-raised", _set(9, "value", 120), "assert[9] max-words 80 → 120", True),
    ("max-tokens-raised", _set(10, "value", 400), "assert[10] max-tokens 200 → 400", True),
    (
        "max-latency-raised",
        _set(11, "value", 9000),
        "assert[11] max-latency-ms 3000 → 9000",
        True,
    ),
    ("max-cost-raised", _set(12, "value", 0.05), "assert[12] max-cost 0.01 → 0.05", True),
    (
        "compression-lowered",
        _set(4, "value", 0.2),
        "assert[4] compression-ratio 0.35 → 0.2",
        True,
    ),
    ("distinct-n-lowered", _set(5, "value", 0.5), "assert[5] distinct-n 0.7 → 0.5", True),
    (
        "similarity-lowered",
        _set(6, "threshold", 0.6),
        "assert[6] mentions threshold 0.8 → 0.6",
        True,
    ),
    ("assertion-removed", _pop_assert(2), "assert[2] max-chars 400 removed", True),
    (
        "not-contains-removed",
        _pop_assert(3),
        'assert[3] not-contains "lawsuit" removed',
        True,
    ),
    (
        "not-contains-longer",
        _set(3, "value", "lawsuit filed"),
        'assert[3] not-contains "lawsuit" → "lawsuit filed"',
        True,
    ),
    (
        "contains-changed",
        _set(1, "value", "money back"),
        'assert[1] contains "refund" → "money back" (changed)',
        True,
    ),
    ("regex-changed", _set(7, "value", "^\\d*"), "assert[7] regex", True),
    ("python-changed", _set(8, "value", "len(output) > 0"), "assert[8] python", True),
    # tightening twins
    (
        "samples-raised-same-rate",
        _both(_top("samples", 10), _top("required", 10)),
        "samples 5 → 10, required 5/5 → 10/10 (100% → 100%)",
        False,
    ),
    ("max-chars-lowered", _set(2, "value", 300), "assert[2] max-chars 400 → 300", False),
    ("max-words-lowered", _set(9, "value", 60), "assert[9] max-words 80 → 60", False),
    ("max-tokens-lowered", _set(10, "value", 100), "assert[10] max-tokens 200 → 100", False),
    (
        "max-latency-lowered",
        _set(11, "value", 2000),
        "assert[11] max-latency-ms 3000 → 2000",
        False,
    ),
    ("max-cost-lowered", _set(12, "value", 0.005), "assert[12] max-cost 0.01 → 0.005", False),
    (
        "compression-raised",
        _set(4, "value", 0.4),
        "assert[4] compression-ratio 0.35 → 0.4",
        False,
    ),
    ("distinct-n-raised", _set(5, "value", 0.8), "assert[5] distinct-n 0.7 → 0.8", False),
    (
        "similarity-raised",
        _set(6, "threshold", 0.9),
        "assert[6] mentions threshold 0.8 → 0.9",
        False,
    ),
    (
        "assertion-added",
        lambda c: c["assert"].append({"type": "not-contains", "value": "sorry"}),
        'assert[13] not-contains "sorry" added',
        False,
    ),
    (
        "not-contains-shorter",
        _set(3, "value", "laws"),
        'assert[3] not-contains "lawsuit" → "laws"',
        False,
    ),
    ("expect-refusal-on", _top("expect_refusal", True), "expect_refusal false → true", False),
]


@pytest.mark.parametrize(
    ("mutate", "expected", "loosens"),
    [pytest.param(m, e, lo, id=name) for name, m, e, lo in CASE_CHANGES],
)
def test_case_change_with_prompt_change(
    tmp_path: Path, mutate: Mutation, expected: str, loosens: bool
) -> None:
    repo = base_repo(tmp_path)
    case = copy.deepcopy(BASE_CASE)
    mutate(case)
    repo.write(CASE, case)
    repo.change_prompt()
    report = check_commit(tmp_path, repo.commit("prompt and case"))

    find(report, Kind.PROMPT, "prompt cases/support/system.md")
    assert report.blocked is loosens
    kinds = {Kind.LOOSENING, Kind.REWRITE} if loosens else {Kind.TIGHTENING}
    hits = [f for f in report.findings if f.kind in kinds and expected in str(f)]
    assert hits, [str(f) for f in report.findings]
    assert all(str(h).startswith("case 0042-amount-suffix: ") for h in hits)
    if not loosens:
        assert report.loosenings == []


def test_expect_refusal_turned_off_is_a_loosening(tmp_path: Path) -> None:
    case = copy.deepcopy(BASE_CASE)
    case["expect_refusal"] = True
    repo = base_repo(tmp_path, case)
    case["expect_refusal"] = False
    repo.write(CASE, case)
    repo.change_prompt()
    report = check_commit(tmp_path, repo.commit("prompt + refusal off"))
    find(report, Kind.LOOSENING, "expect_refusal true → false")
    assert report.blocked


def test_quality_to_contract_and_lower_required_fraction(tmp_path: Path) -> None:
    case = copy.deepcopy(BASE_CASE)
    case.update(tier="quality", required=4)
    repo = base_repo(tmp_path, case)
    case.update(tier="contract", required=5)
    repo.write(CASE, case)
    repo.change_prompt()
    report = check_commit(tmp_path, repo.commit("tighten"))
    find(report, Kind.TIGHTENING, 'tier "quality" → "contract"')
    find(report, Kind.TIGHTENING, "required 4 → 5 (of 5 samples)")
    assert not report.blocked


def test_required_count_raised_is_fine(tmp_path: Path) -> None:
    case = copy.deepcopy(BASE_CASE)
    case["required"] = 3
    repo = base_repo(tmp_path, case)
    case["required"] = 4
    repo.write(CASE, case)
    repo.change_prompt()
    report = check_commit(tmp_path, repo.commit("raise the bar"))
    find(report, Kind.TIGHTENING, "case 0042-amount-suffix: required 3 → 4 (of 5 samples)")
    assert not report.blocked


def test_rewrite_is_allowed_with_allow_rewrite(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    case = copy.deepcopy(BASE_CASE)
    case["assert"][7]["value"] = "^[0-9]+"
    repo.write(CASE, case)
    repo.change_prompt()
    sha = repo.commit("prompt + regex rewrite")
    report = check_commit(tmp_path, sha)
    find(report, Kind.REWRITE, 'assert[7] regex "^\\\\d+" → "^[0-9]+" (changed, review)')
    assert report.blocked
    assert not check_commit(tmp_path, sha, allow_rewrite=True).blocked


def test_inserted_assertion_does_not_shift_the_others(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    case = copy.deepcopy(BASE_CASE)
    case["assert"].insert(0, {"type": "max-chars", "value": 1000})
    case["assert"][3]["value"] = 500  # the old max-chars 400, now at index 3
    repo.write(CASE, case)
    repo.change_prompt()
    report = check_commit(tmp_path, repo.commit("insert and loosen"))
    changed = [f for f in report.findings if f.kind is not Kind.PROMPT]
    assert [str(f) for f in changed] == [
        "case 0042-amount-suffix: assert[3] max-chars 400 → 500",
        "case 0042-amount-suffix: assert[0] max-chars 1000 added",
    ]


def test_reordered_assertions_are_not_changes(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    case = copy.deepcopy(BASE_CASE)
    case["assert"].reverse()
    case["assert"][0]["note"] = "annotation only"
    repo.write(CASE, case)
    repo.change_prompt()
    report = check_commit(tmp_path, repo.commit("reorder"))
    assert [f.kind for f in report.findings] == [Kind.PROMPT]
    assert not report.blocked


# (test id, schema mutation, expected text, loosens?)
SCHEMA_CHANGES: list[tuple[str, Callable[[dict[str, Any]], None], str, bool]] = [
    (
        "required-removed",
        lambda s: s["required"].remove("currency"),
        "$ required property 'currency' removed",
        True,
    ),
    (
        "required-added",
        lambda s: s["required"].append("lines"),
        "$ required property 'lines' added",
        False,
    ),
    (
        "additional-relaxed",
        lambda s: s.pop("additionalProperties"),
        "$ additionalProperties false → true (relaxed)",
        True,
    ),
    (
        "enum-widened",
        lambda s: s["properties"]["currency"]["enum"].append("GBP"),
        "enum widened",
        True,
    ),
    (
        "enum-narrowed",
        lambda s: s["properties"]["currency"]["enum"].remove("USD"),
        "enum narrowed",
        False,
    ),
    (
        "type-widened",
        lambda s: s["properties"]["total"].update(type=["integer", "string"]),
        "$.properties.total type",
        True,
    ),
    (
        "type-narrowed",
        lambda s: s["properties"]["total"].update(type="integer", multipleOf=5),
        "$.properties.total multipleOf 5 added",
        False,
    ),
    (
        "nested-required-removed",
        lambda s: s["properties"]["lines"]["items"].update(required=[]),
        "$.properties.lines.items required property 'sku' removed",
        True,
    ),
    (
        "minimum-lowered",
        lambda s: s["properties"]["total"].update(minimum=-10),
        "$.properties.total minimum 0 → -10",
        True,
    ),
]


@pytest.mark.parametrize(
    ("mutate", "expected", "loosens"),
    [pytest.param(m, e, lo, id=name) for name, m, e, lo in SCHEMA_CHANGES],
)
def test_schema_change_with_prompt_change(
    tmp_path: Path, mutate: Callable[[dict[str, Any]], None], expected: str, loosens: bool
) -> None:
    repo = base_repo(tmp_path)
    schema = copy.deepcopy(SCHEMA_DOC)
    mutate(schema)
    repo.write(SCHEMA, schema)
    repo.change_prompt()
    report = check_commit(tmp_path, repo.commit("prompt and schema"))
    kind = Kind.LOOSENING if loosens else Kind.TIGHTENING
    finding = find(report, kind, expected)
    assert finding.subject == f"schema {SCHEMA}"
    find(report, Kind.NOTE, "used by case 0042-amount-suffix")
    assert report.blocked is loosens


def test_case_repointed_to_a_laxer_schema(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    lax = copy.deepcopy(SCHEMA_DOC)
    lax["required"] = ["total"]
    repo.write("cases/support/schemas/lax.json", lax)
    case = copy.deepcopy(BASE_CASE)
    case["assert"][0]["schema"] = "file://schemas/lax.json"
    repo.write(CASE, case)
    repo.change_prompt()
    report = check_commit(tmp_path, repo.commit("point at lax schema"))
    finding = find(report, Kind.LOOSENING, "required property 'currency' removed")
    assert "invoice.json → cases/support/schemas/lax.json" in finding.subject
    assert report.blocked


@pytest.mark.parametrize("where", ["deleted", "retired"])
def test_case_deleted_or_retired_is_a_loosening(tmp_path: Path, where: str) -> None:
    repo = base_repo(tmp_path)
    if where == "retired":
        repo.move(CASE, "cases/support/retired/0042-amount-suffix.yaml")
    else:
        repo.remove(CASE)
    repo.change_prompt()
    report = check_commit(tmp_path, repo.commit(f"{where} a case"))
    find(report, Kind.LOOSENING, f"case 0042-amount-suffix: {where}")
    assert report.blocked


def test_new_case_and_restored_case_are_fine(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    repo.move(CASE, "cases/support/retired/0042-amount-suffix.yaml")
    repo.commit("retire")
    repo.move("cases/support/retired/0042-amount-suffix.yaml", CASE)
    new_case = copy.deepcopy(BASE_CASE)
    new_case["id"] = "0043-currency"
    repo.write("cases/support/0043-currency.yaml", new_case)
    repo.change_prompt()
    report = check_commit(tmp_path, repo.commit("restore + new"))
    find(report, Kind.TIGHTENING, "case 0042-amount-suffix: restored from retired/")
    find(report, Kind.TIGHTENING, "case 0043-currency: new case")
    assert not report.blocked


def test_suite_defaults_loosened(tmp_path: Path) -> None:
    case = {k: v for k, v in BASE_CASE.items() if k not in ("tier", "samples", "required")}
    repo = base_repo(tmp_path, case)
    suite = dict(SUITE, samples=3, tier="quality")
    repo.write("cases/support/suite.yaml", suite)
    repo.change_prompt()
    report = check_commit(tmp_path, repo.commit("fewer samples for the suite"))
    find(report, Kind.LOOSENING, "suite support: samples 5 → 3, required 4/5 → 2/3")
    assert report.blocked


def test_suite_tier_and_model_alias(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    repo.write("cases/support/suite.yaml", dict(SUITE, tier="contract", model="big"))
    report = check_commit(tmp_path, repo.commit("contract tier, other model"))
    find(report, Kind.TIGHTENING, 'suite support: tier "quality" → "contract"')
    find(report, Kind.PROMPT, 'suite support: model "local" → "big"')
    assert not report.blocked


def test_inline_user_template_change_is_a_prompt_change(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    suite = copy.deepcopy(SUITE)
    suite["prompt"]["user"] = "Customer: {{amount}}"
    repo.write("cases/support/suite.yaml", suite)
    case = copy.deepcopy(BASE_CASE)
    case["required"] = 4
    repo.write(CASE, case)
    report = check_commit(tmp_path, repo.commit("inline prompt + lower required"))
    find(report, Kind.PROMPT, "suite support: prompt.user cases/support/user.txt → inline")
    assert report.blocked


def test_prompt_only_commit_passes(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    repo.change_prompt()
    report = check_commit(tmp_path, repo.commit("reword"))
    assert [str(f) for f in report.findings] == [
        "prompt cases/support/system.md: changed (used by suite support)"
    ]
    assert not report.blocked


def test_loosening_only_commit_passes(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    case = copy.deepcopy(BASE_CASE)
    case["assert"][2]["value"] = 800
    repo.write(CASE, case)
    report = check_commit(tmp_path, repo.commit("loosen max-chars: answers now cite policy"))
    assert [str(f) for f in report.loosenings] == [
        "case 0042-amount-suffix: assert[2] max-chars 400 → 800"
    ]
    assert report.prompt_changes == []
    assert not report.blocked


def test_two_commit_pr_passes_range_but_not_squashed(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    base = repo.repo.head.commit.hexsha
    repo.change_prompt()
    repo.commit("reword the system prompt")
    case = copy.deepcopy(BASE_CASE)
    case["assert"][2]["value"] = 800
    repo.write(CASE, case)
    head = repo.commit("loosen max-chars on its own")

    reports = check_range(tmp_path, f"{base}..{head}")
    assert len(reports) == 2
    assert [r.blocked for r in reports] == [False, False]
    assert reports[0].prompt_changes and not reports[0].loosenings
    assert reports[1].loosenings and not reports[1].prompt_changes

    repo.repo.git.reset("--soft", base)
    squashed = repo.commit("both at once")
    assert check_range(tmp_path, f"{base}..{squashed}")[0].blocked


def test_a_pull_request_splitting_prompt_and_loosening_is_refused_as_one_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each commit passes alone, but the range as one change (a squash merge) holds both:
    refused, naming which commit changed the prompt and which loosened the bar."""
    repo = base_repo(tmp_path)
    base = repo.repo.head.commit.hexsha
    repo.change_prompt()
    prompt = repo.commit("reword the system prompt")
    repo.write("notes.txt", "unrelated\n")
    repo.commit("notes")
    case = copy.deepcopy(BASE_CASE)
    case["assert"][2]["value"] = 800
    repo.write(CASE, case)
    loosening = repo.commit("loosen max-chars on its own")

    report = check_range_as_one(tmp_path, f"{base}..{loosening}")
    assert [r.blocked for r in report.commits] == [False, False, False]
    assert report.whole is not None and report.whole.blocked
    assert report.blocked and report.split
    [loosened] = report.whole.loosenings
    assert str(loosened) == "case 0042-amount-suffix: assert[2] max-chars 400 → 800"
    assert report.commits_of(loosened) == (f"{loosening[:12]} loosen max-chars on its own",)
    [changed] = report.whole.prompt_changes
    assert report.commits_of(changed) == (f"{prompt[:12]} reword the system prompt",)

    monkeypatch.chdir(tmp_path)
    assert main(["guard", "--range", f"{base}..{loosening}"]) == 1
    out = capsys.readouterr().out
    assert f"[in {loosening[:12]} loosen max-chars on its own]" in out
    assert f"[in {prompt[:12]} reword the system prompt]" in out
    assert "refused the range as one change" in out and "different commits" in out


def test_a_loosening_undone_later_in_the_pull_request_passes_as_one_change(
    tmp_path: Path,
) -> None:
    """A commit that loosens beside a commit that changes the prompt, then a commit putting
    the bar back: the range as one change loosens nothing. Only the commits are judged."""
    repo = base_repo(tmp_path)
    base = repo.repo.head.commit.hexsha
    repo.change_prompt()
    repo.commit("reword")
    case = copy.deepcopy(BASE_CASE)
    case["assert"][2]["value"] = 800
    repo.write(CASE, case)
    repo.commit("loosen")
    repo.write(CASE, BASE_CASE)
    head = repo.commit("put the bar back")
    report = check_range_as_one(tmp_path, f"{base}..{head}")
    assert report.whole is not None and report.whole.loosenings == []
    assert not report.blocked


def test_rename_plus_loosening_is_followed(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    renamed = "cases/support/0042-amount-suffix-eur.yaml"
    repo.move(CASE, renamed)
    case = copy.deepcopy(BASE_CASE)
    case["assert"][2]["value"] = 450
    repo.write(renamed, case)
    repo.change_prompt()
    report = check_commit(tmp_path, repo.commit("rename and loosen"))
    finding = find(report, Kind.LOOSENING, "assert[2] max-chars 400 → 450")
    assert finding.path == renamed
    find(report, Kind.NOTE, f"moved {CASE} → {renamed}")
    assert not [f for f in report.findings if "deleted" in f.detail or "new case" in f.detail]
    assert report.blocked


def test_rewritten_and_moved_case_matched_by_id(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    repo.remove(CASE)
    case = {
        "id": "0042-amount-suffix",
        "provenance": {"ticket": "T-42"},
        "vars": {"amount": "twelve thousand"},
        "assert": [{"type": "max-chars", "value": 999}],
    }
    repo.write("cases/support/amounts.yaml", case)
    report = check_commit(tmp_path, repo.commit("rewrite"))
    find(report, Kind.LOOSENING, "assert[0] max-chars 400 → 999")
    assert not [f for f in report.findings if "deleted" in f.detail]


def test_pinned_model_bump_is_a_prompt_change(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    repo.write("pyproject.toml", PYPROJECT.replace("q4_1", "q8_0"))
    case = copy.deepcopy(BASE_CASE)
    case["required"] = 4
    repo.write(CASE, case)
    report = check_commit(tmp_path, repo.commit("bump model, lower bar"))
    find(
        report,
        Kind.PROMPT,
        "pinned model in pyproject.toml: local local:smollm2-135m-instruct-q4_1 → "
        "local:smollm2-135m-instruct-q8_0",
    )
    assert report.blocked


def test_other_pyproject_edit_is_not_a_prompt_change(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    edited = PYPROJECT.replace('version = "1.0"', 'version = "1.1"')
    edited = edited.replace("[tool.redline.models]", "# pinned here\n[tool.redline.models]")
    repo.write("pyproject.toml", edited + "\n[tool.ruff]\nline-length = 100\n")
    case = copy.deepcopy(BASE_CASE)
    case["required"] = 4
    repo.write(CASE, case)
    report = check_commit(tmp_path, repo.commit("version bump, lower bar"))
    assert report.prompt_changes == []
    assert not report.blocked


def test_redline_toml_wins_over_pyproject(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    repo.write("redline.toml", '[models]\nlocal = "local:smollm2-135m-instruct-q4_1"\n')
    repo.commit("move config")
    repo.write("redline.toml", '[models]\nlocal = "openai:gpt-4o-mini-2024-07-18"\n')
    report = check_commit(tmp_path, repo.commit("switch model"))
    find(report, Kind.PROMPT, "pinned model in redline.toml: local")


def test_rubric_threshold_vs_rubric_text(tmp_path: Path) -> None:
    case = copy.deepcopy(BASE_CASE)
    case["assert"].append({"type": "judge", "rubric": "rubrics/slop.yaml"})
    repo = base_repo(tmp_path, case)
    rubric = copy.deepcopy(RUBRIC)
    rubric["min_kappa"] = 0.4
    repo.write("cases/support/rubrics/slop.yaml", rubric)
    report = check_commit(tmp_path, repo.commit("lower kappa bar"))
    find(report, Kind.LOOSENING, "min_kappa 0.6 → 0.4")
    assert report.prompt_changes == []

    rubric["prompt"] = "Rate how much filler is in: {{output}}"
    rubric["pass"] = {"max_score": 3}
    repo.write("cases/support/rubrics/slop.yaml", rubric)
    report = check_commit(tmp_path, repo.commit("reword judge and loosen pass"))
    find(report, Kind.PROMPT, "rubric cases/support/rubrics/slop.yaml")
    find(report, Kind.LOOSENING, "pass.max_score 2 → 3")
    assert report.blocked


def test_broken_yaml_on_the_new_side_needs_review(tmp_path: Path) -> None:
    broken = "id: 0042-amount-suffix\nassert:\n  - {type: max-chars, value: 400\n"
    repo = base_repo(tmp_path)
    repo.write(CASE, broken)
    report = check_commit(tmp_path, repo.commit("touch the case"))
    # Where the unclosed `{` opened, and where YAML gave up (the end of the file).
    finding = find(report, Kind.BROKEN, "new side does not parse: line 3, column 5")
    assert "line 4, column 1 (the end of the file)" in finding.detail
    assert finding.path == CASE
    assert finding.line == 3
    assert report.blocked


def test_binary_case_file_needs_review(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    repo.write(CASE, b"\x00\x01binary")
    report = check_commit(tmp_path, repo.commit("oops"))
    find(report, Kind.BROKEN, "new side: binary, not YAML")
    assert report.blocked


def test_staged_and_index_api(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    assert index_has_prompt_change(tmp_path) == []
    repo.change_prompt()
    repo.stage()
    assert index_has_prompt_change(tmp_path) == [
        "prompt cases/support/system.md: changed (used by suite support)"
    ]
    case = copy.deepcopy(BASE_CASE)
    case["assert"][2]["value"] = 800
    repo.write(CASE, case)
    assert not check_staged(tmp_path).blocked  # the loosening is not staged yet
    repo.stage()
    assert check_staged(tmp_path).blocked


def test_loosenings_between_texts() -> None:
    old = yaml.safe_dump(BASE_CASE)
    case = copy.deepcopy(BASE_CASE)
    case["assert"][2]["value"] = 800
    case["assert"][7]["value"] = "x"
    case["samples"] = 10
    case["required"] = 10
    found = loosenings_between(old, yaml.safe_dump(case), path=CASE)
    assert [str(f) for f in found] == [
        "case 0042-amount-suffix: assert[2] max-chars 400 → 800",
        'case 0042-amount-suffix: assert[7] regex "^\\\\d+" → "x" (changed, review)',
    ]
    assert [str(f) for f in loosenings_between(old, yaml.safe_dump(case), allow_rewrite=True)] == [
        "case 0042-amount-suffix: assert[2] max-chars 400 → 800"
    ]
    assert loosenings_between(old, old) == []
    broken = loosenings_between(old, "assert: [", path=CASE)
    assert broken[0].kind is Kind.BROKEN and "new side does not parse" in broken[0].detail
    suite_found = loosenings_between(
        yaml.safe_dump(SUITE), yaml.safe_dump(dict(SUITE, tier="quality", samples=2)), suite=True
    )
    assert [str(f) for f in suite_found] == [
        "suite support: samples 5 → 2, required 4/5 → 1/2 (80% → 50%)"
    ]


def test_schema_given_as_is_json_value(tmp_path: Path) -> None:
    case = copy.deepcopy(BASE_CASE)
    case["assert"][0] = {"type": "is-json", "value": "file://schemas/invoice.json"}
    repo = base_repo(tmp_path, case)
    schema = copy.deepcopy(SCHEMA_DOC)
    schema["properties"]["currency"]["enum"].append("JPY")
    repo.write(SCHEMA, schema)
    repo.change_prompt()
    report = check_commit(tmp_path, repo.commit("widen currencies"))
    find(report, Kind.LOOSENING, '$.properties.currency enum widened by ["JPY"]')
    assert report.blocked

    case["assert"][0] = {"type": "is-json"}
    found = loosenings_between(yaml.safe_dump(BASE_CASE), yaml.safe_dump(case))
    assert [f.detail for f in found] == [
        'assert[0] is-json schema "file://schemas/invoice.json" removed'
    ]


def test_refusal_and_icontains_assertions() -> None:
    prov = {"ticket": "T-1"}
    old = {
        "id": "c",
        "provenance": prov,
        "assert": [{"type": "refusal"}, {"type": "icontains", "value": "refund"}],
    }
    new = {
        "id": "c",
        "provenance": prov,
        "assert": [{"type": "refusal", "value": False}, {"type": "icontains", "value": "money"}],
    }
    found = loosenings_between(yaml.safe_dump(old), yaml.safe_dump(new))
    assert [f.detail for f in found] == [
        "assert[0] refusal true (default) → false",
        'assert[1] icontains "refund" → "money" (changed)',
    ]
    same = {"id": "c", "provenance": prov, "assert": [{"type": "refusal", "value": True}]}
    written = {"id": "c", "provenance": prov, "assert": [{"type": "refusal"}]}
    assert loosenings_between(yaml.safe_dump(written), yaml.safe_dump(same)) == []


def test_a_suite_dropped_from_the_configured_folders_is_a_loosening(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    repo.write("pyproject.toml", PYPROJECT + '\n[tool.redline]\nsuites = ["evals"]\n')
    repo.change_prompt()
    report = check_commit(tmp_path, repo.commit("point the config elsewhere"))
    find(report, Kind.LOOSENING, "suite cases/support: no longer under the configured suites")
    assert report.blocked
