"""The pytest plugin, run for real in pytester sessions (in-process, so the model loads once)."""

from __future__ import annotations

import json
import re
import textwrap
from datetime import date, timedelta
from pathlib import Path

import pytest

import redline.providers
import redline.suite.behavior
from redline.cli import main as cli_main
from redline.config import parse_config
from redline.running.store import RunStore
from redline.vocabulary.records import CaseOutcome
from servers import LoopbackLLMServer
from test_judge_session import judge_requests, trust_rubric, write_judged_suite

pytest_plugins = ["pytester"]

#: Imported here, before pytester snapshots sys.modules, so in-process runs share numpy
#: and the loaded model instead of re-importing extension modules (which numpy refuses).
_SHARED_MODULES = (redline.suite.behavior, redline.providers)

RELATED = "Your refund of $45 has been issued to your card."
WEAKER = "We have sent the full amount back to your card."
UNRELATED = "Our autumn collection arrives next week."

BEHAVIOUR_TEST = """
from pathlib import Path
from redline import assert_behavior

def test_reply():
    output = Path("output.txt").read_text(encoding="utf-8")
    assert_behavior(output).mentions("refund")
"""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """An in-process run without the snapshot plugin (its session state is per process)."""
    return pytester.runpytest_inprocess("-p", "no:textual-snapshot", *args)


def _write_output(pytester: pytest.Pytester, text: str) -> None:
    (pytester.path / "output.txt").write_text(text, encoding="utf-8")


def _baseline(pytester: pytest.Pytester) -> dict[str, dict[str, object]]:
    path = pytester.path / "baselines" / "pytest-behavior.json"
    data: dict[str, dict[str, object]] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_baseline_save_then_compare_catches_status_regression(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_reply=BEHAVIOUR_TEST)
    _write_output(pytester, RELATED)
    saved = _run(pytester, "--llm-save-baseline")
    saved.assert_outcomes(passed=1)
    entry = _baseline(pytester)["test_reply.py::test_reply::mentions::refund"]
    assert entry["status"] == "passed" and isinstance(entry["score"], float)
    assert {"test", "assertion", "target", "timestamp"} <= set(entry)

    same = _run(pytester, "--llm-compare-baseline")
    same.assert_outcomes(passed=1)
    assert same.ret == 0

    _write_output(pytester, UNRELATED)
    regressed = _run(pytester, "--llm-compare-baseline")
    regressed.assert_outcomes(failed=1)
    regressed.stdout.fnmatch_lines(
        ["*REGRESSION test_reply.py::test_reply::mentions::refund: status passed → failed*"]
    )


def test_relative_score_drop_fails_the_session_even_when_tests_pass(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_reply=BEHAVIOUR_TEST)
    _write_output(pytester, RELATED)
    _run(pytester, "--llm-save-baseline").assert_outcomes(passed=1)
    _write_output(pytester, WEAKER)
    result = _run(pytester, "--llm-compare-baseline")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*REGRESSION*mentions::refund: score * → * (-*%*", "*1 regression*"]
    )
    lenient = _run(pytester, "--llm-compare-baseline", "--llm-score-drop", "0.9")
    assert lenient.ret == 0


def test_failure_report_has_score_table_and_golden_diff(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_golden=f"""
        from redline import assert_behavior

        def test_golden():
            golden = "{RELATED}"
            assert_behavior("{UNRELATED}", golden=golden).mentions("refund")
        """
    )
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*redline behaviour*",
            "status*assertion*target*score*threshold*",
            "failed*mentions*refund*0.500*",
            "--- golden",
            "+++ output",
            f"-{RELATED}",
            f"+{UNRELATED}",
        ]
    )


def test_unverified_check_behavior_fails_at_the_end_of_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_collect=f"""
        from redline import check_behavior

        def test_all_reported():
            check_behavior("{RELATED}").mentions("football match").mentions("refund").max_words(3)
        """
    )
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*2 of 3 behaviour checks failed*"])


def test_unavailable_backend_skips_with_the_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_nli=f"""
        from redline import assert_behavior

        def test_grounded():
            assert_behavior("{RELATED}").grounded_in("Refund of $45 to the card.")
        """
    )
    (pytester.path / "pyproject.toml").write_text(
        '[tool.redline.semantic]\nnli_model = "models/absent-nli"\n', encoding="utf-8"
    )
    result = _run(pytester, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        ["*redline: a check could not be evaluated*entailment could not be checked*"]
    )


def test_pytest_html_gets_assertion_and_target_columns(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_html")
    pytester.makepyfile(
        test_html=f"""
        from redline import check_behavior

        def test_html():
            check_behavior("{RELATED}").mentions("refund <b>now</b>").max_words(50).verify()
        """
    )
    result = _run(pytester, "--html=report.html", "--self-contained-html")
    assert result.ret in (0, 1)
    page = (pytester.path / "report.html").read_text(encoding="utf-8")
    assert "Assertions" in page and "Targets" in page
    assert "max-words" in page
    assert "<b>now</b>" not in page


SUITE = """\
name: echo-suite
prompt:
  system: system.txt
  user: "MODE:echo {{message}}"
model: fake
samples: 2
tier: contract
"""

CASE = """\
id: {id}
provenance: {{ticket: T-1, reported: 2026-02-03, note: plugin test}}
vars:
  message: "{message}"
assert:
  - type: contains
    value: refund
"""


TWO_CASES = {"c1-ok": "please refund me", "c2-bad": "where is my parcel"}


def _echo_project(
    root: Path, llm_server: LoopbackLLMServer, messages: dict[str, str], suite_yaml: str = SUITE
) -> None:
    """`cases/echo-suite` on the loopback server: one case per message, each asking the
    echoed message to contain "refund"."""
    (root / "redline.toml").write_text(llm_server.redline_toml(), encoding="utf-8")
    suite = root / "cases" / "echo-suite"
    suite.mkdir(parents=True)
    (suite / "suite.yaml").write_text(suite_yaml, encoding="utf-8")
    (suite / "system.txt").write_text("Answer.", encoding="utf-8")
    for case_id, message in messages.items():
        (suite / f"{case_id}.yaml").write_text(
            textwrap.dedent(CASE.format(id=case_id, message=message)), encoding="utf-8"
        )


def test_yaml_suites_are_collected_as_one_item_per_case(
    pytester: pytest.Pytester, llm_server: LoopbackLLMServer, loopback_key: str
) -> None:
    _echo_project(pytester.path, llm_server, TWO_CASES)
    result = _run(pytester, "cases", "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*c1-ok PASSED*", "*c2-bad FAILED*", "*0/2 samples ok (required 2)*", "*contains*"]
    )
    assert llm_server.count(api="openai") == 4


def test_plugin_registers_via_the_entry_point() -> None:
    from importlib.metadata import entry_points

    names = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert names.get("redline") == "redline.pytest_plugin"


def test_compare_lists_every_regression() -> None:
    from redline.pytest_plugin import compare_baseline

    baseline = {
        "t::mentions::a": {"status": "passed", "score": 0.8},
        "t::tone::b": {"status": "passed", "score": 0.5},
        "t::tone::c": {"status": "passed", "score": -0.4},
        "t::mentions::d": {"status": "passed", "score": 0.8},
    }
    current = {
        "t::mentions::a": {"status": "failed", "score": 0.3},
        "t::tone::b": {"status": "passed", "score": 0.44},
        "t::tone::c": {"status": "passed", "score": -0.5},
        "t::mentions::d": {"status": "unavailable", "score": None},
        "t::mentions::new": {"status": "failed", "score": 0.1},
    }
    regressions, notes = compare_baseline(baseline, current, 0.10)
    assert regressions[0] == "t::mentions::a: status passed → failed"
    assert regressions[1].startswith("t::tone::b: score 0.500 → 0.440 (-12%")
    assert regressions[2].startswith("t::tone::c: score -0.400 → -0.500 (-25%")
    assert len(regressions) == 3
    assert notes == ["t::mentions::d: could not be evaluated now (was passed)"]


def test_compare_knows_which_way_a_score_gets_worse() -> None:
    """`not-mentions` gets worse upwards; a budget still under its cap is never a drop."""
    from redline.pytest_plugin import compare_baseline

    baseline = {
        "t::max-words::50": {"status": "passed", "score": 12, "assertion": "max-words"},
        "u::max-words::50": {"status": "passed", "score": 12, "assertion": "max-words"},
        "t::not-mentions::x": {"status": "passed", "score": 0.2, "assertion": "not-mentions"},
        "t::mentions::y": {"status": "passed", "score": 0.5, "assertion": "mentions"},
        "t::max-latency-ms::900": {"status": "passed", "score": 100, "assertion": "max-latency-ms"},
    }
    current = {
        "t::max-words::50": {"status": "passed", "score": 5, "assertion": "max-words"},
        "u::max-words::50": {"status": "passed", "score": 30, "assertion": "max-words"},
        "t::not-mentions::x": {"status": "passed", "score": 0.3, "assertion": "not-mentions"},
        "t::mentions::y": {"status": "passed", "score": 0.45, "assertion": "mentions"},
        "t::max-latency-ms::900": {"status": "passed", "score": 800, "assertion": "max-latency-ms"},
    }
    regressions, _ = compare_baseline(baseline, current, 0.10)
    # max-words 12 → 30 under a cap of 50 is a longer answer that passes, not a worse one.
    assert regressions == [
        "t::not-mentions::x: score 0.200 → 0.300 (+50%, worse by more than the allowed 10%)",
    ]


def test_baseline_path_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_reply=BEHAVIOUR_TEST)
    _write_output(pytester, RELATED)
    _run(pytester, "--llm-save-baseline", "--llm-baseline", "b/x.json")
    assert "test_reply.py::test_reply::mentions::refund" in json.loads(
        Path(pytester.path / "b" / "x.json").read_text(encoding="utf-8")
    )


@pytest.mark.parametrize("value", ["-1", "1.5", "ten"])
def test_score_drop_must_be_a_fraction(pytester: pytest.Pytester, value: str) -> None:
    """A negative drop would call every unchanged score a regression: refused up front."""
    pytester.makepyfile(test_reply=BEHAVIOUR_TEST)
    _write_output(pytester, RELATED)
    result = _run(pytester, "--llm-compare-baseline", f"--llm-score-drop={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*argument --llm-score-drop: *"])


def _judged_project(root: Path, llm_server: LoopbackLLMServer) -> Path:
    """`cases/judged` (every judge path) on the loopback server, its rubric calibrated."""
    (root / "redline.toml").write_text(llm_server.redline_toml(), encoding="utf-8")
    folder = write_judged_suite(root / "cases" / "judged")
    trust_rubric(parse_config(root / "redline.toml"), folder / "rubrics" / "slop.yaml")
    return folder


def _run_outcomes(root: Path) -> dict[str, CaseOutcome]:
    with RunStore.open(root / ".redline" / "redline.db") as store:
        run = store.latest_run(kind=None)
        assert run is not None
        return {c.case_id: c.result for c in store.cases(run.id)}


_ITEM_OUTCOME = {"PASSED": CaseOutcome.PASS, "FAILED": CaseOutcome.FAIL}


def _item_outcomes(result: pytest.RunResult) -> dict[str, CaseOutcome | str]:
    outcomes: dict[str, CaseOutcome | str] = {}
    for line in result.outlines:
        match = re.match(r"cases/judged/suite\.yaml::(\S+) (PASSED|FAILED|SKIPPED)", line)
        if match:
            outcomes[match[1]] = _ITEM_OUTCOME.get(match[2], match[2])
    return outcomes


def test_yaml_suite_judges_exactly_like_redline_run(
    pytester: pytest.Pytester, llm_server: LoopbackLLMServer, loopback_key: str
) -> None:
    _judged_project(pytester.path, llm_server)
    assert cli_main(["run", "cases/judged", "--judge", "--judge-blocks", "--quiet"]) == 1
    by_run = _run_outcomes(pytester.path)
    judged_by_run = judge_requests(llm_server)
    llm_server.reset()

    result = _run(pytester, "cases", "-v", "-rs", "--llm-judge", "--llm-judge-blocks")
    by_pytest = _item_outcomes(result)
    assert judge_requests(llm_server) == judged_by_run > 0
    assert by_run["0003-sloppy"] is CaseOutcome.FAIL  # only the trusted judge fails it
    assert by_pytest["0003-sloppy"] is CaseOutcome.FAIL
    result.stdout.fnmatch_lines(["*judge: failed: judge slop score 5*"])
    for case_id, outcome in by_run.items():
        expected = outcome if outcome in _ITEM_OUTCOME.values() else "SKIPPED"
        assert by_pytest[case_id] == expected, (case_id, outcome, result.outlines)


def test_without_llm_judge_the_yaml_judge_is_skipped_and_never_called(
    pytester: pytest.Pytester, llm_server: LoopbackLLMServer, loopback_key: str
) -> None:
    _judged_project(pytester.path, llm_server)
    result = _run(pytester, "cases", "-v", "-k", "0003-sloppy or 0001-good")
    result.assert_outcomes(passed=2)
    assert judge_requests(llm_server) == 0


def test_llm_judge_blocks_needs_llm_judge(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "--llm-judge-blocks")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--llm-judge-blocks needs --llm-judge*"])


def test_yaml_suite_item_redacts_the_key_from_its_evidence(
    pytester: pytest.Pytester, llm_server: LoopbackLLMServer, loopback_key: str
) -> None:
    _echo_project(pytester.path, llm_server, {"c1-leak": f"my key is {loopback_key}"})
    result = _run(pytester, "cases")
    result.assert_outcomes(failed=1)
    assert loopback_key not in result.stdout.str()
    result.stdout.fnmatch_lines(["*[[]redacted $REDLINE_LOOPBACK_KEY]*"])


def test_sequentially_sampled_yaml_case_draws_until_decided_like_a_run(
    pytester: pytest.Pytester, llm_server: LoopbackLLMServer, loopback_key: str
) -> None:
    sequential = SUITE.replace("samples: 2", "samples: {min: 3, max: 8}")
    _echo_project(pytester.path, llm_server, TWO_CASES, sequential)
    result = _run(pytester, "cases", "-v")
    result.assert_outcomes(passed=1, failed=1)
    # Both are decided by their first `min` samples, not by the suite's most (8).
    result.stdout.fnmatch_lines(["*0/3 samples ok (required 3)*"])
    assert llm_server.count(api="openai") == 3 + 3
    assert cli_main(["run", "cases", "--quiet"]) == 1
    assert _run_outcomes(pytester.path) == {"c1-ok": CaseOutcome.PASS, "c2-bad": CaseOutcome.FAIL}
    assert llm_server.count(api="openai") == 2 * (3 + 3)


def test_yaml_case_stops_at_a_refused_key_and_says_what_to_do(
    pytester: pytest.Pytester, llm_server: LoopbackLLMServer, loopback_key: str
) -> None:
    _echo_project(pytester.path, llm_server, {"c1-refused": "MODE:401 refund"})
    result = _run(pytester, "cases")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*redline: *401*Fix the key*then run again*"])
    # Only the samples already in flight were asked, each once: a refused key is not retried.
    assert 1 <= llm_server.count(api="openai") <= 2


def test_a_failing_quarantined_yaml_case_is_an_expected_failure(
    pytester: pytest.Pytester, llm_server: LoopbackLLMServer, loopback_key: str
) -> None:
    _echo_project(pytester.path, llm_server, TWO_CASES)
    case = pytester.path / "cases" / "echo-suite" / "c2-bad.yaml"
    until = date.today() + timedelta(days=7)
    held = f"quarantine: {{reason: flaps, ticket: SUP-9, until: {until}}}\n"
    case.write_text(case.read_text(encoding="utf-8") + held, encoding="utf-8")
    result = _run(pytester, "cases", "-rx")
    result.assert_outcomes(passed=1, xfailed=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([f"*0/2 samples ok*quarantined until {until} (SUP-9): flaps*"])


def test_a_failing_check_s_traceback_ends_at_the_test_not_in_redline(
    pytester: pytest.Pytester,
) -> None:
    """The traceback of a failing `assert_behavior` or `check_behavior` shows the test's
    line and the message; redline's own frames are hidden (`__tracebackhide__`)."""
    pytester.makepyfile(
        test_reply="""
from redline import assert_behavior, check_behavior

def test_fail_fast():
    assert_behavior("a b c d e f g h").max_words(3)

def test_collected():
    check_behavior("a b c d e f g h").max_words(3).not_degenerate().verify()

def test_in_a_block():
    with check_behavior("a b c d e f g h") as reply:
        reply.max_words(3)
"""
    )
    result = _run(pytester, "--tb=long")
    result.assert_outcomes(failed=3)
    text = result.stdout.str()
    assert 'assert_behavior("a b c d e f g h").max_words(3)' in text
    assert "max-words '3' failed" in text and "behaviour checks failed" in text
    assert "redline/suite/behavior.py" not in text and "def _record" not in text
