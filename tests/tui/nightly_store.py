"""A real nightly's scale for the triage app: 200 invoice cases, 40 failing for 5 reasons.

The case files are written to a git repository (so the app labels groups with the case
files' own assertions and can quarantine a case), the runs straight into a store:
four earlier nights, then the red one (NIGHTLY). Of the 40 failing cases, the 12 of the
first reason failed the night before too (still failing), two of the second alternate
between pass and fail (flapping), the rest are new tonight.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import git

from redline.config import parse_config
from redline.running.manifest import case_hash
from redline.running.quarantine import QUARANTINED_ARG
from redline.running.store import RunStore
from redline.suite.cases import load_suites
from redline.vocabulary.verdicts import AssertionResult, AssertionStatus, Verdict
from redline_tui.context import TriageContext
from runfactory import CaseSpec, RunSpec, write_run

SUITE = "invoices"
MODEL = "openai:fake-model-2026-01"
CASES = 200
EARLIER = ("a1b2c3000001", "a1b2c3000002", "a1b2c3000003", "a1b2c3000004")
NIGHTLY = "a1b2c3000005"
SAMPLES = 5

SUITE_YAML = f"""\
name: {SUITE}
prompt:
  system: prompts/system.md
  user: prompts/user.md
model: fake
samples: {SAMPLES}
tier: contract
"""

CASE_YAML = """\
id: {case_id}
provenance:
  ticket: INV-{n}
  note: "Invoice {n} came out wrong once"
vars:
  number: "{n}"
tier: contract
assert:
  - type: is-json
  - type: contains
    value: "12,000"
  - type: not-contains
    value: "I cannot help"
  - type: max-chars
    value: 400
  - type: regex
    value: "INV-[0-9]+"
"""


@dataclass(frozen=True)
class Reason:
    """One way of failing: the assertion that fails first, the verdict, a bad output."""

    assertion: int
    type: str
    verdict: Verdict
    output: str
    reason: str
    cases: int


REASONS = (
    Reason(
        0,
        "is-json",
        Verdict.MALFORMED,
        'Here is the JSON you asked for:\n{{"total": "12,000", "ref": "INV-{n}"}}',
        "the output is not JSON: Expecting value at line 1",
        12,
    ),
    Reason(
        1,
        "contains",
        Verdict.WRONG,
        '{{"total": "12k", "ref": "INV-{n}"}}',
        "'12,000' not found in the output",
        10,
    ),
    Reason(
        2,
        "not-contains",
        Verdict.REFUSED,
        '{{"note": "I cannot help with invoice {n}, total 12,000, ref INV-{n}"}}',
        "'I cannot help' found in the output",
        8,
    ),
    Reason(
        3,
        "max-chars",
        Verdict.WRONG,
        '{{"total": "12,000", "ref": "INV-{n}", "lines": ["' + "line " * 90,
        "the output is longer than 400 characters",
        6,
    ),
    Reason(
        4,
        "regex",
        Verdict.WRONG,
        '{{"total": "12,000", "ref": "#{n}"}}',
        "no match for 'INV-[0-9]+'",
        4,
    ),
)
FAILING = sum(r.cases for r in REASONS)
GOOD = '{{"total": "12,000", "ref": "INV-{n}"}}'
#: Flapping: pass, fail, pass, fail on the earlier nights, failing tonight.
FLAPPING = ("0012-invoice", "0013-invoice")
#: Held in quarantine on the nightly, passing again.
QUARANTINED = "0150-invoice"
#: A phrase only the malformed outputs hold.
PREAMBLE = "Here is the JSON you asked for"


def case_id(n: int) -> str:
    return f"{n:04d}-invoice"


def reason_of(n: int) -> Reason | None:
    """Cases 0..39 fail tonight, in blocks: the first 12 for the first reason, and so on."""
    start = 0
    for reason in REASONS:
        if start <= n < start + reason.cases:
            return reason
        start += reason.cases
    return None


def fails(n: int, night: int) -> bool:
    """Whether case n fails on night 0..4 (4 is NIGHTLY)."""
    reason = reason_of(n)
    if reason is None:
        return False
    if night == 4:
        return True
    if case_id(n) in FLAPPING:
        return night % 2 == 1
    # The first reason started two nights ago: still failing.
    return reason is REASONS[0] and night >= 2


def write_suite(root: Path) -> Path:
    """The suite folder with its 200 case files, committed in a new repository."""
    folder = root / "cases" / SUITE
    (folder / "prompts").mkdir(parents=True)
    (root / "redline.toml").write_text(f'[models]\nfake = "{MODEL}"\n', encoding="utf-8")
    (root / ".gitignore").write_text(".redline/\n", encoding="utf-8")
    (folder / "suite.yaml").write_text(SUITE_YAML, encoding="utf-8")
    (folder / "prompts" / "system.md").write_text("You extract invoices as JSON.\n", "utf-8")
    (folder / "prompts" / "user.md").write_text("Invoice {{number}}", encoding="utf-8")
    for n in range(CASES):
        path = folder / f"{case_id(n)}.yaml"
        path.write_text(CASE_YAML.format(case_id=case_id(n), n=n), encoding="utf-8")
    repo = git.Repo.init(root, initial_branch="main")
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "Test")
        cfg.set_value("user", "email", "test@example.invalid")
        cfg.set_value("commit", "gpgsign", "false")
    repo.git.add(A=True)
    repo.index.commit("invoice suite")
    return folder


def _case(n: int, bad: bool, hashes: Mapping[str, str]) -> CaseSpec:
    """Case n on one night: its first three samples fail for its reason when `bad`."""
    reason = reason_of(n) if bad else None
    verdicts = [reason.verdict if reason and i < 3 else Verdict.OK for i in range(SAMPLES)]
    return CaseSpec(
        case_id(n),
        verdicts,
        suite=SUITE,
        tier="contract",
        required=SAMPLES,
        case_hash=hashes.get(case_id(n), f"h-{n}"),
        outputs=[(reason.output if reason and i < 3 else GOOD).format(n=n) for i in range(SAMPLES)],
        assertions=[_results(reason if i < 3 else None) for i in range(SAMPLES)],
        latency_ms=[200.0 + i for i in range(SAMPLES)],
        output_tokens=20,
    )


def _results(reason: Reason | None) -> tuple[AssertionResult, ...]:
    """The five assertions of every case file: all pass but the one of `reason`."""
    return tuple(
        AssertionResult(
            index=a,
            type=kind,
            status=AssertionStatus.FAILED
            if reason is not None and a == reason.assertion
            else AssertionStatus.PASSED,
            reason=reason.reason if reason is not None and a == reason.assertion else "ok",
        )
        for a, kind in enumerate(("is-json", "contains", "not-contains", "max-chars", "regex"))
    )


def _store_night(
    store: RunStore, run_id: str, night: int, args: dict[str, object], hashes: Mapping[str, str]
) -> None:
    day = 25 + night
    write_run(
        store,
        RunSpec(
            run_id,
            [_case(n, fails(n, night), hashes) for n in range(CASES)],
            started_at=f"2026-11-{day:02d}T02:00:00.000+00:00",
            finished_at=f"2026-11-{day:02d}T03:00:00.000+00:00",
            model_id=MODEL,
            model_alias="fake",
            git_commit="0123456789abcdef0123456789abcdef01234567",
            args=args,
            manifest={f"cases/{SUITE}/suite.yaml": "a" * 64},
        ),
    )


def build_nightly(path: Path, hashes: Mapping[str, str] | None = None) -> RunStore:
    """Four earlier nights and the red NIGHTLY, one case of it held in quarantine; `hashes`
    are the case files' hashes as the runs recorded them (those written by `write_suite`)."""
    store = RunStore.open(path)
    hashes = hashes or {}
    for night, run_id in enumerate(EARLIER):
        _store_night(store, run_id, night, {"suites": [f"cases/{SUITE}"]}, hashes)
    held = {f"{SUITE}/{QUARANTINED}": "quarantined until 2026-12-10 (INV-150): upstream flaky"}
    args = {"suites": [f"cases/{SUITE}"], QUARANTINED_ARG: held}
    _store_night(store, NIGHTLY, 4, args, hashes)
    return store


def nightly_context(root: Path) -> TriageContext:
    """The suite's repository at `root` and its store, as `redline triage` opens them."""
    root.mkdir()
    write_suite(root)
    config = parse_config(root / "redline.toml")
    hashes = {c.id: case_hash(c) for s in load_suites(config.suites, config) for c in s.cases}
    return TriageContext(
        store=build_nightly(root / ".redline" / "redline.db", hashes),
        root=root,
        config=config,
        today=lambda: dt.date(2026, 11, 30),
        user="ana",
    )


def failing_ids(reason: Reason) -> Sequence[str]:
    return [case_id(n) for n in range(CASES) if reason_of(n) is reason]
