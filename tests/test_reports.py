"""JUnit XML, HTML and markdown reports of a stored run."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from redline.cli import main
from redline.presentation import VERDICT_COLOURS, WEB_COLOURS
from redline.report import build_run_report
from redline.report.html import html_report
from redline.report.junit import junit_xml, xml_safe
from redline.report.markdown import markdown_summary
from runfactory import (
    OK,
    TRANSPORT,
    WRONG,
    CaseSpec,
    RunSpec,
    open_store,
    write_config,
    write_run,
)

NASTY = "<script>alert('x')</script> \x00\x1b[31mred\x1b[0m & [bold]markup[/bold] \ud800 \x0c"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    with open_store(tmp_path) as store:
        write_run(
            store,
            RunSpec(
                "old",
                [CaseSpec("fails", [OK] * 5), CaseSpec("passes", [OK] * 5)],
                started_at="2026-01-01T00:00:00.000+00:00",
            ),
        )
        write_run(
            store,
            RunSpec(
                "red",
                [
                    CaseSpec(
                        "fails",
                        [OK, WRONG, WRONG, OK, OK],
                        outputs=["fine", NASTY, "Here is the JSON", "fine", "fine too"],
                    ),
                    CaseSpec("passes", [OK] * 5),
                    CaseSpec("lost", [TRANSPORT, TRANSPORT, TRANSPORT, OK, OK]),
                ],
                started_at="2026-01-02T00:00:00.000+00:00",
            ),
        )
    assert main(["baseline", "save", "old"]) == 0
    return tmp_path


def test_junit_parses_with_failure_vs_error(repo: Path) -> None:
    assert main(["report", "red", "--junit", "out/junit.xml"]) == 0
    text = (repo / "out/junit.xml").read_text(encoding="utf-8")
    root = ET.fromstring(text.encode("utf-8"))
    assert root.get("tests") == "3" and root.get("failures") == "1" and root.get("errors") == "1"
    cases = {tc.get("name"): tc for tc in root.iter("testcase")}
    failure = cases["fails"].find("failure")
    assert failure is not None and cases["fails"].find("error") is None
    assert failure.get("message") == (
        "3/5 passed, 4 required (3 ok, 2 wrong); failing: not-contains ×2"
    )
    error = cases["lost"].find("error")
    assert error is not None and cases["lost"].find("failure") is None
    assert "inconclusive" in (error.get("message") or "")
    assert "connection reset" in (error.text or "")
    assert cases["passes"].find("failure") is None and cases["passes"].find("error") is None
    out = cases["fails"].findtext("system-out") or ""
    assert "<script>alert('x')</script>" in out  # escaped in the file, intact once parsed
    assert "\\x00" in out and "\\x1b[31m" in out and "\\ud800" in out
    assert "Here is the JSON" in out and "fine too" not in out
    assert "&lt;script&gt;" in text


def test_xml_safe_keeps_tabs_and_newlines() -> None:
    assert xml_safe("a\tb\nc\rd\x00\x7f\ufffe") == "a\tb\nc\rd\\x00\x7f\\ufffe"


def test_html_is_self_contained_and_escapes_output(repo: Path) -> None:
    assert main(["report", "red", "--html", "out/report.html"]) == 0
    page = (repo / "out/report.html").read_text(encoding="utf-8")
    assert "<script" not in page.lower()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "\\x1b[31m" in page and "\x1b" not in page and "\x00" not in page
    assert "http" not in page.lower()
    assert re.findall(r"""(?:src|href)\s*=\s*["']?([^"'\s>]+)""", page) == [
        "#suite-a/fails",
        "#suite-a/lost",
        "#suite-a/passes",
    ]
    assert "url(" not in page and "@import" not in page
    # header, verdict counts, pass bars, badges, golden diff, history sparkline
    assert "local:model-a" in page and "abc123" in page and "manifest (1 inputs hashed)" in page
    assert 'class="badge v-wrong"' in page and 'class="bar passbar"' in page
    assert "diff to golden output" in page and '<span class="del">-fails answer 0</span>' in page
    assert page.count('<svg class="spark"') == 3


def test_html_keeps_urls_in_outputs_as_text(tmp_path: Path) -> None:
    with open_store(tmp_path) as store:
        write_run(
            store,
            RunSpec("u", [CaseSpec("c", [WRONG], outputs=['<img src="https://evil.example/x">'])]),
        )
        page = html_report(build_run_report(store, "u"))
    assert "<img" not in page and "&lt;img src=&quot;https://evil.example/x&quot;&gt;" in page


def test_html_manifest_shows_the_pinned_model_id_whole(tmp_path: Path) -> None:
    manifest = {"@model": "openai:gpt-4.1-2025-04-14", "suite-a/c.yaml": "ab" * 32}
    with open_store(tmp_path) as store:
        write_run(store, RunSpec("h", [CaseSpec("c", [OK])], manifest=manifest))
        page = html_report(build_run_report(store, "h"))
    assert "<td><code>openai:gpt-4.1-2025-04-14</code></td>" in page
    assert f"<td><code>{'ab' * 8}</code></td>" in page


def test_markdown_summary(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "red", "--markdown"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("## redline run `red`: **red**")
    assert "| 10 | 2 | 0 | 0 | 0 | 3 |" in md
    assert "| suite-a/fails | quality | 3/5 | 4 | fail | not-contains ×2 | █▅ |" in md
    assert "suite-a/lost" in md and "inconclusive" in md
    assert "<script>" not in md


def test_markdown_marks_case_changed_and_escapes_ids(tmp_path: Path) -> None:
    with open_store(tmp_path) as store:
        write_run(store, RunSpec("m", [CaseSpec("a|<b>", [WRONG] * 2)]))
        md = markdown_summary(build_run_report(store, "m"))
    assert "a\\|&lt;b&gt;" in md


def test_markdown_code_spans_show_ids_literally(tmp_path: Path) -> None:
    # Inside `code` GitHub shows backslashes and entities as typed: no escaping there.
    with open_store(tmp_path) as store:
        spec = RunSpec("d_1", [CaseSpec("c", [OK])], model_id="openai:gpt-4.1_(eu)")
        spec.git_commit, spec.git_dirty = "f" * 40, True
        write_run(store, spec)
        md = markdown_summary(build_run_report(store, "d_1"))
    assert md.startswith("## redline run `d_1`: **green**")
    assert "Model `openai:gpt-4.1_(eu)` ·" in md
    assert "commit `ffffffffffff (dirty)` ·" in md


def test_report_defaults_to_latest_run_and_needs_an_output(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "--markdown"]) == 0
    assert "`red`" in capsys.readouterr().out
    assert main(["report", "red"]) == 2
    assert "choose at least one" in capsys.readouterr().err


def test_html_draws_each_verdict_in_its_terminal_colour(tmp_path: Path) -> None:
    with open_store(tmp_path) as store:
        write_run(store, RunSpec("h", [CaseSpec("c", [OK, WRONG])]))
        page = html_report(build_run_report(store, "h"))
    palette = dict(re.findall(r"--([a-z]+):(#[0-9a-f]{6});", page))
    for verdict, colour in VERDICT_COLOURS.items():
        # `redline show` prints "wrong" red; the report's "wrong" badge is a web red.
        assert palette[verdict.value] == WEB_COLOURS[colour]
    assert 'class="badge v-wrong"' in page and ".v-wrong { background: var(--wrong); }" in page
    assert len(set(palette[v.value] for v in VERDICT_COLOURS)) == len(VERDICT_COLOURS)


def test_junit_testsuites_carry_skipped_and_time_and_no_finish_none(tmp_path: Path) -> None:
    """JUnit readers sum `tests`, `failures`, `errors`, `skipped` and `time` per
    <testsuite>; a sample with no finish reason (a transport failure) prints none."""
    write_config(tmp_path)
    with open_store(tmp_path) as store:
        write_run(
            store,
            RunSpec(
                "night",
                [
                    CaseSpec("lost", [TRANSPORT, TRANSPORT, OK], latency_ms=[1000.0, 500.0, 250.0]),
                    CaseSpec("fine", [OK, OK], latency_ms=[100.0, 150.0]),
                ],
            ),
        )
        report = build_run_report(store, "night")
    # A sample lost to transport has no finish reason at all.
    cases = tuple(
        replace(c, samples=tuple(replace(s, finish_reason=None) for s in c.samples))
        for c in report.cases
    )
    text = junit_xml(replace(report, cases=cases))
    assert "----- sample 0 [transport] -----" in text
    root = ET.fromstring(text.encode("utf-8"))
    [suite] = root.iter("testsuite")
    assert (suite.get("skipped"), suite.get("time")) == ("0", "2.000")
    assert (root.get("skipped"), root.get("time")) == ("0", "2.000")
    assert "None" not in text


def test_html_says_a_sample_without_output_had_none(tmp_path: Path) -> None:
    """A transport sample has no output: the page says why instead of an empty box."""
    write_config(tmp_path)
    with open_store(tmp_path) as store:
        write_run(store, RunSpec("night", [CaseSpec("lost", [TRANSPORT, OK], outputs=["", "ok"])]))
        page = html_report(build_run_report(store, "night"))
    assert '<p class="no-output">no output (transport: connection reset)</p>' in page
    assert "<pre></pre>" not in page
