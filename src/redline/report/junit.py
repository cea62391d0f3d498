"""JUnit XML: one testcase per case, so any CI shows a red run the way it shows tests.

A content failure is `<failure>`; an infrastructure problem (inconclusive case, transport
errors) is `<error>`. The raw outputs of failing samples go into `system-out`. XML 1.0
cannot hold most control characters at all, even escaped, so those are written as
visible `\\xNN` escapes: the file always parses.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from redline.report import CaseReport, RunReport, failed_assertions
from redline.running.quarantine import QuarantinedCase
from redline.transcript import transcript_text
from redline.vocabulary.records import CaseOutcome, RunRecord
from redline.vocabulary.verdicts import VERDICT_ORDER, Verdict

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def xml_safe(text: str) -> str:
    """`text` with every character XML 1.0 forbids replaced by a visible escape."""
    return _NOT_XML.sub(_visible, text)


def _verdict_summary(case: CaseReport) -> str:
    parts = [f"{case.case.verdicts.get(v, 0)} {v}" for v in VERDICT_ORDER]
    return ", ".join(p for p in parts if not p.startswith("0 "))


def _message(case: CaseReport) -> str:
    c = case.case
    text = f"{c.passes}/{c.samples} passed, {c.required} required ({_verdict_summary(case)})"
    failing = case.failing_text()
    if failing:
        text += f"; failing: {failing}"
    return text


def _details(case: CaseReport) -> str:
    lines = []
    for s in case.failing_samples:
        reasons = "; ".join(f"{a.type}: {a.reason}" for a in failed_assertions(s))
        if s.error:
            reasons = f"{reasons}; error: {s.error}" if reasons else f"error: {s.error}"
        lines.append(f"sample {s.index} [{s.verdict}] {reasons}".rstrip())
    return "\n".join(lines)


def _system_out(case: CaseReport) -> str:
    blocks = []
    for s in case.failing_samples:
        finish = f" finish={s.finish_reason}" if s.finish_reason else ""
        blocks.append(f"----- sample {s.index} [{s.verdict}]{finish} -----")
        blocks.append(transcript_text(s))
    return "\n".join(blocks)


def junit_xml(report: RunReport) -> str:
    """The run as a JUnit XML document (UTF-8 text)."""
    run = report.run
    root = ET.Element("testsuites", name=f"redline run {run.id}")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    seconds = 0.0
    held = {(q.case.suite, q.case.case_id): q for q in report.quarantined}
    for suite in sorted({c.case.suite for c in report.cases}):
        cases = [c for c in report.cases if c.case.suite == suite]
        element = ET.SubElement(root, "testsuite", name=suite, timestamp=run.started_at)
        _run_properties(element, run)
        counts = {"tests": len(cases), "failures": 0, "errors": 0, "skipped": 0}
        for case in cases:
            outcome = _testcase(element, suite, case, held.get((suite, case.case.case_id)))
            if outcome is not None:
                counts[outcome] += 1
        for key, count in counts.items():
            element.set(key, str(count))
            totals[key] += count
        suite_seconds = sum(_seconds(c) for c in cases)
        element.set("time", f"{suite_seconds:.3f}")
        seconds += suite_seconds
    for key, total in totals.items():
        root.set(key, str(total))
    root.set("time", f"{seconds:.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _run_properties(element: ET.Element, run: RunRecord) -> None:
    props = ET.SubElement(element, "properties")
    for name, value in (
        ("run_id", run.id),
        ("model_id", run.model_id),
        ("git_commit", run.git_commit or ""),
        ("git_dirty", str(run.git_dirty).lower()),
        ("result", str(run.result or run.status)),
    ):
        ET.SubElement(props, "property", name=name, value=xml_safe(value))


def _seconds(case: CaseReport) -> float:
    """The case's time: its samples' latencies added up (they may have run side by side)."""
    return sum((s.latency_ms or 0.0) for s in case.samples) / 1000.0


def _testcase(
    element: ET.Element, suite: str, case: CaseReport, quarantine: QuarantinedCase | None
) -> str | None:
    """Add the case's <testcase>; "failures", "errors" or "skipped" when it counts as one.

    A fail is a content failure; an inconclusive case (or one short of passes because of
    transport errors) is an infrastructure error; a quarantined case is skipped.
    """
    c = case.case
    tc = ET.SubElement(
        element,
        "testcase",
        classname=xml_safe(f"{suite}.{c.tier}"),
        name=xml_safe(c.case_id),
        time=f"{_seconds(case):.3f}",
    )
    counted: str | None = None
    transport = c.verdicts.get(Verdict.TRANSPORT, 0)
    if quarantine is not None and c.result is not CaseOutcome.PASS:
        counted = "skipped"
        ET.SubElement(tc, "skipped", message=xml_safe(quarantine.label))
    elif c.result is CaseOutcome.FAIL:
        counted = "failures"
        node = ET.SubElement(tc, "failure", message=xml_safe(_message(case)), type="content")
        node.text = xml_safe(_details(case))
    elif c.result is CaseOutcome.INCONCLUSIVE or (transport and c.passes < c.required):
        counted = "errors"
        node = ET.SubElement(
            tc,
            "error",
            message=xml_safe("inconclusive: " + _message(case)),
            type="infrastructure",
        )
        node.text = xml_safe(_details(case))
    if case.failing_samples and c.result is not CaseOutcome.PASS:
        ET.SubElement(tc, "system-out").text = xml_safe(_system_out(case))
    return counted
