"""pytest plugin: behaviour baselines, failure reports, pytest-html columns, YAML suites.

- Every `assert_behavior`/`check_behavior` check in a test is recorded under the key
  `test::assertion::target` with its status and score.
  `--llm-save-baseline` writes them to a JSON file (merged into what is there);
  `--llm-compare-baseline` fails the session on a status regression (passed → failed)
  or a relative score drop beyond `--llm-score-drop`, listing each.
- A failing test gets a "redline behaviour" report section: the score table and,
  where the chain was given a golden output, the unified diff to it.
- A `check_behavior` chain that was never verified is verified when the test ends.
- A check whose model backend is missing makes the test skip with the reason.
- With pytest-html installed, the report gets "Assertions" and "Targets" columns.
- `pytest cases/` collects each redline suite (a folder with suite.yaml) and runs each
  case as one item: its samples on the suite's pinned model, planned, scheduled and drawn
  at the configured concurrency by the runner's own code and sample pipeline (`--llm-judge` and
  `--llm-judge-blocks` as `--judge` and `--judge-blocks`) and decided by the same rule
  (a sequentially sampled case draws until decided; marginal and inconclusive cases are
  skipped with the reason; a quarantined case that fails is an expected failure).
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import html
import json
import os
import secrets
from collections import Counter
from collections.abc import Generator, Iterable, Iterator, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from redline.config import Config
    from redline.providers.base import Provider
    from redline.running.judging import JudgeSession
    from redline.running.pipeline import SamplePipeline
    from redline.running.run_record import CaseResult
    from redline.suite.behavior import BehaviorAssertion, BehaviorResult
    from redline.suite.cases import Case, Suite
    from redline.vocabulary.records import SampleRecord

DEFAULT_BASELINE = "baselines/pytest-behavior.json"
DEFAULT_SCORE_DROP = 0.10
_SECTION = "redline behaviour"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("redline", "redline behaviour assertions")
    group.addoption(
        "--llm-save-baseline",
        action="store_true",
        default=False,
        help="record every assert_behavior check's status and score into the baseline file",
    )
    group.addoption(
        "--llm-compare-baseline",
        action="store_true",
        default=False,
        help="fail the session when a check regresses against the baseline file",
    )
    group.addoption(
        "--llm-baseline",
        metavar="PATH",
        default=None,
        help=f"baseline JSON file, relative to the rootdir (default: {DEFAULT_BASELINE})",
    )
    group.addoption(
        "--llm-judge",
        action="store_true",
        default=False,
        help="YAML suites: also run rubric judges, as `redline run --judge` does",
    )
    group.addoption(
        "--llm-judge-blocks",
        action="store_true",
        default=False,
        help="YAML suites: let calibrated (trusted) judges fail samples (needs --llm-judge)",
    )
    group.addoption(
        "--llm-score-drop",
        type=_fraction,
        metavar="FRACTION",
        default=DEFAULT_SCORE_DROP,
        help="relative score drop that counts as a regression (default: 0.10)",
    )


def _fraction(text: str) -> float:
    """`--llm-score-drop`: a fraction from 0 up to (not including) 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a fraction from 0 up to 1 (e.g. 0.10)")
    return value


class _Recorder:
    """The session's checks, keyed `test::assertion::target` (the worst result per key)."""

    def __init__(self) -> None:
        self.entries: dict[str, dict[str, Any]] = {}
        self.regressions: list[str] = []
        self.notes: list[str] = []

    def add(self, nodeid: str, result: BehaviorResult) -> None:
        key = f"{nodeid}::{result.assertion}::{result.target}"
        entry = {
            "test": nodeid,
            "assertion": result.assertion,
            "target": result.target,
            "status": result.status.value,
            "score": result.score,
            "threshold": result.threshold,
            "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        previous = self.entries.get(key)
        if previous is None or _worse(entry, previous):
            self.entries[key] = entry


def _worse(new: dict[str, Any], old: dict[str, Any]) -> bool:
    if (new["status"] == "failed") != (old["status"] == "failed"):
        return bool(new["status"] == "failed")
    if new["score"] is None or old["score"] is None:
        return False
    return bool(new["score"] < old["score"])


_RECORDER = pytest.StashKey[_Recorder]()
_CHAINS = pytest.StashKey[list[tuple["BehaviorAssertion", "BehaviorResult"]]]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "redline_case: a redline YAML case collected as a test")
    config.stash[_RECORDER] = _Recorder()
    if config.getoption("--llm-judge-blocks") and not config.getoption("--llm-judge"):
        raise pytest.UsageError("--llm-judge-blocks needs --llm-judge")
    if config.pluginmanager.hasplugin("html"):
        config.pluginmanager.register(_HtmlColumns(), "redline-html-columns")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    from redline.suite.behavior import BehaviorUnavailable, observe_results

    seen: list[tuple[BehaviorAssertion, BehaviorResult]] = []
    item.stash[_CHAINS] = seen
    recorder = item.config.stash[_RECORDER]

    def observe(chain: BehaviorAssertion, result: BehaviorResult) -> None:
        seen.append((chain, result))
        recorder.add(item.nodeid, result)

    try:
        with observe_results(observe):
            result = yield
    except BehaviorUnavailable as exc:
        pytest.skip(f"redline: a check could not be evaluated: {exc}")
    finally:
        if seen:
            checks = [f"{r.assertion} {r.target!r}".strip() for _, r in seen]
            item.user_properties.append(("redline_checks", checks))
    pending = [c for c in dict.fromkeys(chain for chain, _ in seen) if c.collect and not c.raised]
    try:
        for chain in pending:
            chain.verify()
    except BehaviorUnavailable as exc:
        pytest.skip(f"redline: a check could not be evaluated: {exc}")
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    seen = item.stash.get(_CHAINS, [])
    if report.when == "call" and report.failed and seen:
        report.sections.append((_SECTION, _failure_section(seen)))
    return report


def _failure_section(seen: list[tuple[BehaviorAssertion, BehaviorResult]]) -> str:
    rows = [("status", "assertion", "target", "score", "threshold")]
    for _, r in seen:
        rows.append(
            (
                r.status.value,
                r.assertion,
                r.target,
                "-" if r.score is None else f"{r.score:.3f}",
                "-" if r.threshold is None else f"{r.threshold:.3f}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    for _, r in seen:
        if r.status.value != "passed":
            lines.append(f"{r.assertion} {r.target!r}: {r.reason}")
    for chain in dict.fromkeys(chain for chain, _ in seen):
        if chain.golden is not None and chain.golden != chain.output:
            diff = difflib.unified_diff(
                chain.golden.splitlines(),
                chain.output.splitlines(),
                fromfile="golden",
                tofile="output",
                lineterm="",
            )
            lines.append("")
            lines.extend(diff)
    return "\n".join(lines)


def _baseline_path(config: pytest.Config) -> Path:
    given = config.getoption("--llm-baseline") or DEFAULT_BASELINE
    return Path(config.rootpath) / given


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    recorder = config.stash.get(_RECORDER, None)
    if recorder is None:
        return
    path = _baseline_path(config)
    if config.getoption("--llm-compare-baseline"):
        drop = float(config.getoption("--llm-score-drop"))
        recorder.regressions, recorder.notes = compare_baseline(
            _read_baseline(path), recorder.entries, drop
        )
        if not path.is_file():
            recorder.notes.append(f"no baseline at {path}: nothing compared")
        if recorder.regressions and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if config.getoption("--llm-save-baseline") and recorder.entries:
        stored = _read_baseline(path)
        stored.update(recorder.entries)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(stored, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
        recorder.notes.append(f"saved {len(recorder.entries)} check(s) to {path}")


def compare_baseline(
    baseline: dict[str, Any], current: dict[str, dict[str, Any]], drop: float
) -> tuple[list[str], list[str]]:
    """(regressions, notes): passed → failed, or a relative score drop beyond `drop`.

    Scores get worse the way `redline baseline compare` says they do: only scored checks
    (semantic ones and judges) can drop, and for `not-mentions` a rise is the drop; a budget
    that still passes is not a drop.
    """
    from redline.deciding.baseline import score_drops

    regressions: list[str] = []
    notes: list[str] = []
    for key, now in sorted(current.items()):
        before = baseline.get(key)
        if not isinstance(before, dict):
            continue
        was, is_ = before.get("status"), now["status"]
        if was == "passed" and is_ == "failed":
            regressions.append(f"{key}: status passed → failed")
            continue
        if was == "passed" and is_ == "unavailable":
            notes.append(f"{key}: could not be evaluated now (was passed)")
            continue
        old, new = before.get("score"), now["score"]
        if isinstance(old, int | float) and isinstance(new, int | float):
            kind = now.get("assertion") or before.get("assertion") or key.rsplit("::", 2)[-2]
            scored = f"score:{kind}"
            limit = before.get("threshold")
            limits = {scored: float(limit)} if isinstance(limit, int | float) else None
            for worse in score_drops({scored: float(old)}, {scored: float(new)}, drop, limits):
                regressions.append(f"{key}: score {old:.3f} → {new:.3f} ({worse.describe(drop)})")
    return regressions, notes


def _read_baseline(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise pytest.UsageError(f"baseline {path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise pytest.UsageError(f"baseline {path} must hold a JSON object")
    return data


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    recorder = config.stash.get(_RECORDER, None)
    if recorder is None or not (recorder.regressions or recorder.notes):
        return
    terminalreporter.section("redline baseline")
    for line in recorder.regressions:
        terminalreporter.write_line(f"REGRESSION {line}", red=True)
    for line in recorder.notes:
        terminalreporter.write_line(line)
    if recorder.regressions:
        terminalreporter.write_line(
            f"{len(recorder.regressions)} regression(s) against the baseline", red=True, bold=True
        )


class _HtmlColumns:
    """pytest-html 4 hooks, registered only when pytest-html is active."""

    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        cells.insert(2, "<th>Assertions</th>")
        cells.insert(3, "<th>Targets</th>")

    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list[str]) -> None:
        checks: list[str] = []
        for name, value in report.user_properties:
            if name == "redline_checks" and isinstance(value, list):
                checks.extend(str(v) for v in value)
        types = sorted({c.split(" ", 1)[0] for c in checks})
        targets = [c.split(" ", 1)[1] for c in checks if " " in c]
        cells.insert(2, f"<td>{html.escape(', '.join(types))}</td>")
        cells.insert(3, f"<td>{html.escape('; '.join(targets))}</td>")


# --- redline YAML suites as pytest items -------------------------------------------------


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name == "suite.yaml":
        return SuiteFile.from_parent(parent, path=file_path)
    return None


class SuiteFile(pytest.File):
    """A redline suite: one pytest item per case (retired cases are not collected)."""

    def collect(self) -> Iterator[pytest.Item]:
        from redline.suite.cases import load_suite

        suite = load_suite(self.path.parent, _session_config(self.config))
        for case in suite.cases:
            yield CaseItem.from_parent(self, name=case.id, suite=suite, case=case)


class CaseItem(pytest.Item):
    """One case on the suite's pinned model, drawn and decided as `redline run` does:
    passes when enough samples are `ok`."""

    def __init__(self, *, suite: Suite, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.suite = suite
        self.case = case
        self.add_marker(pytest.mark.redline_case)
        self.user_properties.append(("redline_checks", [a.describe() for a in case.assertions]))

    def runtest(self) -> None:
        from redline.vocabulary.records import CaseOutcome

        samples, result = _cases(self.config).decide(self.suite, self.case)
        outcome = result.outcome
        summary = f"{result.passes}/{result.samples} samples ok (required {result.required})"
        if result.uncounted:
            summary += (
                f"; {result.uncounted} more drawn in the same batch after the sequential "
                "test had decided, not counted"
            )
        held = self.case.quarantine
        if outcome is CaseOutcome.FAIL and held is not None and held.active(date.today()):
            pytest.xfail(f"{summary}; {held.describe()}: it cannot fail the run until then")
        if outcome is CaseOutcome.FAIL:
            raise CaseFailed(summary, _evidence(samples))
        if outcome is CaseOutcome.INCONCLUSIVE:
            pytest.skip(f"inconclusive: {summary}; truncated or transport samples decide it")
        if outcome is CaseOutcome.MARGINAL:
            pytest.skip(f"marginal: {summary}; the pass rate sits on the case's bar")

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str:
        from redline.errors import RedlineError

        if isinstance(excinfo.value, CaseFailed):
            return "\n".join([excinfo.value.summary, *excinfo.value.lines])
        if isinstance(excinfo.value, RedlineError):
            return f"redline: {excinfo.value}"
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.case.path, 0, f"{self.suite.name}::{self.case.id}"


def _evidence(samples: Sequence[SampleRecord]) -> list[str]:
    """Each sample's verdict, what failed and why, and the start of its output."""
    lines: list[str] = []
    for sample in samples:
        lines.append(f"sample {sample.index}: {sample.verdict.value}")
        lines.extend(
            f"    {r.type}: {r.status.value}: {r.reason}" for r in sample.assertions if not r.passed
        )
        if sample.error:
            lines.append(f"    transport: {sample.error}")
        lines.append(f"    output: {sample.output[:300]!r}")
    return lines


class CaseFailed(Exception):
    def __init__(self, summary: str, lines: list[str]) -> None:
        super().__init__(summary)
        self.summary = summary
        self.lines = lines


_CONFIG = pytest.StashKey["Config"]()
_CASES = pytest.StashKey["_CaseRunner"]()


def _session_config(config: pytest.Config) -> Config:
    if _CONFIG not in config.stash:
        from redline.config import load_config

        config.stash[_CONFIG] = load_config(Path(config.rootpath))
    return config.stash[_CONFIG]


class _Samples:
    """A pytest item's samples: kept in memory, as the run store would keep them."""

    def __init__(self) -> None:
        self.samples: list[SampleRecord] = []

    def add_samples(self, samples: Iterable[SampleRecord]) -> None:
        self.samples.extend(samples)


class _CaseRunner:
    """One event loop for the session, one sample pipeline per suite (with its judges
    under `--llm-judge`), one provider per model alias."""

    def __init__(self, config: Config, *, judge: bool, judge_blocks: bool) -> None:
        #: Seeds are drawn per session, as `redline run` draws them per run.
        self.session_id = secrets.token_hex(6)
        self.config = config
        self.judge = judge
        self.judge_blocks = judge_blocks
        self.loop = asyncio.new_event_loop()
        self.providers: dict[str, Provider] = {}
        self.judges: dict[str, JudgeSession] = {}
        self.pipelines: dict[str, SamplePipeline] = {}

    def decide(self, suite: Suite, case: Case) -> tuple[list[SampleRecord], CaseResult]:
        """The case's samples (in index order) and its result, planned, scheduled and
        decided by the runner's own code."""
        from redline.running.execution import Commits, Tally, concurrency, draw_samples
        from redline.running.options import RunOptions
        from redline.running.planning import plan_run
        from redline.running.run_record import case_result
        from redline.running.schedule import Schedule

        pipeline = self.pipeline(suite)
        plan = plan_run([(suite, case)], RunOptions(), self.session_id)
        jobs = Schedule(plan)
        sink = _Samples()
        limit = concurrency(RunOptions(), self.config, pipeline.provider, plan)
        commits = Commits(sink, Tally(self.session_id, jobs, None, 0.0), None)
        self.loop.run_until_complete(draw_samples(limit, pipeline, commits))
        samples = sorted(sink.samples, key=lambda s: s.index)
        seq = plan.sequential.get((case.suite, case.id))
        _, _, planned = plan.cases[0]
        verdicts = Counter(s.verdict for s in samples)
        return samples, case_result(case, planned, verdicts, seq.draw if seq else None)

    def pipeline(self, suite: Suite) -> SamplePipeline:
        if suite.name not in self.pipelines:
            from redline.redaction import KeyRedactor
            from redline.running.pipeline import SamplePipeline
            from redline.targets.factory import make_target, unpinned

            if suite.target is not None:
                model = self.config.model(suite.model) if suite.model else unpinned(suite.target)
                key = f"target:{suite.name}"
                if key not in self.providers:
                    self.providers[key] = make_target(suite.target, model, self.config.concurrency)
                provider = self.providers[key]
            else:
                model = self.config.model(suite.model)
                provider = self.provider(model.alias)
            self.pipelines[suite.name] = SamplePipeline(
                provider,
                run_id=f"pytest-{self.session_id}",
                model_name=model.name,
                judges=self.judge_session(suite),
                redactor=KeyRedactor.from_config(self.config, os.environ),
                stop_when_settled=self.config.stop_when_settled,
            )
        return self.pipelines[suite.name]

    def provider(self, alias: str) -> Provider:
        if alias not in self.providers:
            from redline.providers.factory import make_provider

            model = self.config.model(alias)
            self.providers[alias] = make_provider(model, self.config, os.environ)
        return self.providers[alias]

    def judge_session(self, suite: Suite) -> JudgeSession | None:
        if not self.judge:
            return None
        from redline.running.judging import JudgeSession

        session = JudgeSession.open([suite], self.config, blocks=self.judge_blocks)
        self.judges[suite.name] = session
        return session

    def close(self) -> None:
        for judges in self.judges.values():
            self.loop.run_until_complete(judges.aclose())
        for provider in self.providers.values():
            self.loop.run_until_complete(provider.aclose())
        self.loop.close()


def _cases(config: pytest.Config) -> _CaseRunner:
    if _CASES not in config.stash:
        config.stash[_CASES] = _CaseRunner(
            _session_config(config),
            judge=bool(config.getoption("--llm-judge")),
            judge_blocks=bool(config.getoption("--llm-judge-blocks")),
        )
    return config.stash[_CASES]


def pytest_unconfigure(config: pytest.Config) -> None:
    cases = config.stash.get(_CASES, None)
    if cases is not None:
        cases.close()
