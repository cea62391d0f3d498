"""A short markdown summary for `$GITHUB_STEP_SUMMARY` or a PR comment.

Only counts and reasons, never raw outputs; text from the run is escaped so that a
case id or a reason cannot break the table or inject HTML into the rendered comment.
"""

from __future__ import annotations

import re

from redline.deciding.history import sparkline
from redline.report import RunReport, drift_sentence, failed_assertions, previous_run_sentence
from redline.running.budget import budget_note
from redline.running.usage import usage_summary
from redline.textsafe import preview
from redline.vocabulary.records import CaseOutcome
from redline.vocabulary.verdicts import VERDICT_ORDER

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~>])")

#: Failing cases listed in full; the rest are counted.
MAX_LISTED = 50


def md_escape(text: str, width: int = 120) -> str:
    """One escaped table-safe line of `text`."""
    line = preview(text, width)
    line = line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", line)


def md_code(text: str, width: int = 120) -> str:
    """`text` as one inline code span: shown literally (markdown and backslash escapes are
    not interpreted inside a code span, so nothing is escaped but the backtick itself)."""
    line = preview(text, width).replace("`", "'")
    return f"`{line}`"


def markdown_summary(report: RunReport) -> str:
    """A run's summary for a CI job page or a pull request: totals, then what did not pass."""
    run = report.run
    result = str(run.result or run.status)
    commit = (run.git_commit or "unknown")[:12] + (" (dirty)" if run.git_dirty else "")
    lines = [
        f"## redline run {md_code(run.id)}: **{result}**",
        "",
        f"Model {md_code(run.model_id)} · suites {md_escape(', '.join(run.suites))} · "
        f"commit {md_code(commit)} · {len(run.manifest)} inputs hashed",
        "",
        "| " + " | ".join(str(v) for v in VERDICT_ORDER) + " |",
        "|" + "---:|" * len(VERDICT_ORDER),
        "| " + " | ".join(str(report.verdicts.get(v, 0)) for v in VERDICT_ORDER) + " |",
        "",
        f"Cases: {report.case_counts()}.",
        "",
        md_escape(usage_summary(report.usage).capitalize(), 300) + ".",
    ]
    stopped = budget_note(report.run.args)
    if stopped is not None:
        lines += ["", f"> {md_escape(stopped.capitalize(), 300)}."]
    if report.withheld:
        reason = md_escape(report.withheld, 300)
        lines += ["", f"> Content comparison withheld (not enough evidence): {reason}"]
    lines += _not_passing_lines(report)
    lines += _quarantined_lines(report)
    lines += _marginal_lines(report)
    lines += _previous_lines(report)
    return "\n".join(lines) + "\n"


def _not_passing_lines(report: RunReport) -> list[str]:
    """The cases that did not pass (fails first), quarantined ones left out."""
    held = {(q.case.suite, q.case.case_id) for q in report.quarantined}
    problems = [
        c
        for c in report.cases
        if c.case.result is not CaseOutcome.PASS and (c.case.suite, c.case.case_id) not in held
    ]
    if not problems:
        return []
    problems.sort(
        key=lambda c: (c.case.result is not CaseOutcome.FAIL, c.case.suite, c.case.case_id)
    )
    lines = [
        "",
        "| case | tier | passes | required | result | failing | history |",
        "|---|---|---:|---:|---|---|---|",
    ]
    for case in problems[:MAX_LISTED]:
        c = case.case
        failing = case.failing_text()
        if not failing and case.failing_samples:
            failing = ", ".join(
                sorted({str(s.verdict) for s in case.failing_samples if not failed_assertions(s)})
            )
        mark = " (case changed)" if case.changed_since_baseline else ""
        lines.append(
            f"| {md_escape(c.suite)}/{md_escape(c.case_id)}{mark} | {md_escape(c.tier)} | "
            f"{c.passes}/{c.samples} | {c.required} | {c.result} | {md_escape(failing)} | "
            f"{sparkline(case.history)} |"
        )
    if len(problems) > MAX_LISTED:
        lines.append(f"\n…and {len(problems) - MAX_LISTED} more not passing.")
    return lines


def _quarantined_lines(report: RunReport) -> list[str]:
    if not report.quarantined:
        return []
    return [
        "",
        "Quarantined (reported, not counted):",
        "",
        *(
            f"- {md_escape(q.case.suite)}/{md_escape(q.case.case_id)}: {md_escape(q.label, 300)}"
            for q in report.quarantined
        ),
    ]


def _marginal_lines(report: RunReport) -> list[str]:
    """Cases at the edge for several nights: raise their samples or retire them."""
    marginal = report.marginal
    if not marginal:
        return []
    lines = [
        "",
        f"### Marginal cases ({len(marginal)}): raise their samples or retire them",
        "",
        "| case | nights at the edge | pooled passes | bar | samples needed |",
        "|---|---:|---:|---:|---:|",
    ]
    for case, m in marginal[:MAX_LISTED]:
        needed = "none separates" if m.samples_needed is None else str(m.samples_needed)
        lines.append(
            f"| {md_escape(case.suite)}/{md_escape(case.case_id)} | {m.runs} | "
            f"{m.pooled_passes}/{m.pooled_samples} ({m.rate:.0%}) | {m.threshold:.0%} | "
            f"{needed} |"
        )
    if len(marginal) > MAX_LISTED:
        lines.append(f"\n…and {len(marginal) - MAX_LISTED} more marginal.")
    return lines


def _previous_lines(report: RunReport) -> list[str]:
    """This run against the scheduled run before it: what changed since last night."""
    comparison = report.previous
    if comparison is None:
        return ["", "No earlier scheduled run in the store to compare with."]
    before = comparison.a.run
    origin = report.previous_origin
    link = ""
    if origin is not None and origin.url.startswith(("https://", "http://")):
        url = re.sub(r"[\s<>]", "", origin.url)
        link = f", [{md_escape(origin.label)}](<{url}>)"
    lines = [
        "",
        f"### Against the previous run {md_code(before.id)} "
        f"({md_escape(before.started_at[:16].replace('T', ' '))} UTC{link})",
        "",
    ]
    lines.append(md_escape(previous_run_sentence(comparison), 600))
    drifted = drift_sentence(report)
    if drifted is not None:
        lines += ["", md_escape(drifted, 1200)]
    drops = [] if comparison.withheld else comparison.significant_drops
    for d in drops[:MAX_LISTED]:
        lines.append(
            f"- {md_escape(d.suite)}/{md_escape(d.case_id)}: {d.a.passes}/{d.a.samples} → "
            f"{d.b.passes}/{d.b.samples} (p = {d.p_value:.3f})"
        )
    return lines
