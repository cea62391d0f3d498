"""One self-contained HTML report: inline CSS and SVG, no script, no external URL.

Every piece of text from a run (outputs, reasons, case ids) is escaped; control
characters are shown as visible escapes first, so nothing a model wrote can act on
the page.
"""

from __future__ import annotations

import html

from redline.deciding.baseline import golden_diff
from redline.presentation import (
    OUTCOME_ORDER,
    RESULT_STYLES,
    VERDICT_COLOURS,
    WEB_COLOURS,
    stopped_early_note,
)
from redline.report import (
    CaseReport,
    RunReport,
    drift_sentence,
    failed_assertions,
    previous_run_sentence,
)
from redline.running.budget import budget_note
from redline.running.usage import usage_summary
from redline.textsafe import escape_output
from redline.transcript import sample_answer, transcript_text
from redline.vocabulary.records import CaseOutcome, RunResult, SampleRecord
from redline.vocabulary.verdicts import VERDICT_ORDER, Verdict

_OUTCOME_ORDER = OUTCOME_ORDER

_PALETTE = " ".join(
    [f"--{verdict}:{WEB_COLOURS[colour]};" for verdict, colour in VERDICT_COLOURS.items()]
    + [f"--inconclusive:{WEB_COLOURS[RESULT_STYLES[RunResult.INCONCLUSIVE]]};"]
)

_CSS = (
    ":root { "
    + _PALETTE
    + """ --fg:#1d1d1f; --muted:#666; --line:#ddd; }
body { font: 14px/1.45 system-ui, sans-serif; color: var(--fg); margin: 1.5rem auto;
  max-width: 72rem; padding: 0 1rem; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
code, pre { font-family: ui-monospace, monospace; font-size: 12.5px; }
pre { background: #f6f6f6; border: 1px solid var(--line); padding: .5rem; overflow-x: auto;
  white-space: pre-wrap; word-break: break-word; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .25rem .5rem; border-bottom: 1px solid var(--line); }
dl { display: grid; grid-template-columns: max-content auto; gap: .15rem 1rem; }
dt { color: var(--muted); } dd { margin: 0; }
.badge { display: inline-block; padding: 0 .45rem; border-radius: .6rem; color: #fff;
  font-size: 12px; }
.v-ok { background: var(--ok); } .v-wrong { background: var(--wrong); }
.v-malformed { background: var(--malformed); } .v-refused { background: var(--refused); }
.v-truncated { background: var(--truncated); } .v-transport { background: var(--transport); }
.r-pass, .r-green { background: var(--ok); } .r-fail, .r-red { background: var(--wrong); }
.r-inconclusive, .r-running, .r-interrupted, .r-marginal { background: var(--inconclusive); }
.r-quarantined { background: var(--muted); }
.no-output { color: var(--muted); font-style: italic; }
.bar { display: flex; height: .9rem; width: 100%; border-radius: .2rem; overflow: hidden;
  background: #eee; }
.bar span { display: block; height: 100%; }
.passbar { width: 6rem; display: inline-flex; vertical-align: middle; margin-right: .4rem; }
.banner { border-left: 4px solid var(--inconclusive); background: #fff4e5; padding: .5rem .75rem; }
.mark { color: var(--inconclusive); font-size: 12px; }
.diff .add { color: var(--ok); } .diff .del { color: var(--wrong); }
.diff .hunk { color: var(--muted); }
.spark rect { fill: #7a8a99; } .spark rect.none { fill: #ddd; }
details { margin: .4rem 0; } summary { cursor: pointer; }
.sample { border-top: 1px dashed var(--line); padding-top: .4rem; margin-top: .4rem; }
"""
)


def _e(text: object) -> str:
    return html.escape(escape_output(str(text)), quote=True)


def _badge(kind: str, label: str) -> str:
    return f'<span class="badge {kind}-{_e(label)}">{_e(label)}</span>'


def _bar(parts: list[tuple[str, int]], total: int, css: str = "bar") -> str:
    if total <= 0:
        return f'<span class="{css}"></span>'
    spans = "".join(
        f'<span class="v-{name}" style="width:{100 * n / total:.2f}%" title="{n} {name}"></span>'
        for name, n in parts
        if n
    )
    return f'<span class="{css}">{spans}</span>'


def sparkline_svg(rates: tuple[float | None, ...], width: int = 80, height: int = 16) -> str:
    """An inline SVG bar per run; grey stub where a run had no rate."""
    if not rates:
        return ""
    step = width / len(rates)
    bars = []
    for i, r in enumerate(rates):
        x = i * step
        if r is None:
            bars.append(
                f'<rect class="none" x="{x:.1f}" y="{height - 2}" width="{step * 0.8:.1f}" '
                'height="2"></rect>'
            )
            continue
        h = max(1.0, r * height)
        bars.append(
            f'<rect x="{x:.1f}" y="{height - h:.1f}" width="{step * 0.8:.1f}" height="{h:.1f}">'
            f"<title>{r:.0%}</title></rect>"
        )
    label = "pass rate history: " + " ".join("–" if r is None else f"{r:.0%}" for r in rates)
    return (
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{_e(label)}">{"".join(bars)}</svg>'
    )


def _diff_html(diff: str) -> str:
    lines = []
    for line in diff.split("\n"):
        css = ""
        if line.startswith("@@"):
            css = "hunk"
        elif line.startswith("+") and not line.startswith("+++"):
            css = "add"
        elif line.startswith("-") and not line.startswith("---"):
            css = "del"
        lines.append(f'<span class="{css}">{_e(line)}</span>' if css else _e(line))
    return '<pre class="diff">' + "\n".join(lines) + "</pre>"


def _header(report: RunReport) -> str:
    run = report.run
    result = str(run.result or run.status)
    commit = (run.git_commit or "unknown") + (" (dirty)" if run.git_dirty else "")
    rows = [
        ("model", f"{run.model_id} (alias {run.model_alias})"),
        ("suites", ", ".join(run.suites)),
        ("kind", str(run.kind) + (f" of {run.parent_id}" if run.parent_id else "")),
        ("git commit", commit),
        ("started", run.started_at),
        ("finished", run.finished_at or "not finished"),
        ("redline", run.redline_version),
    ]
    dl = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in rows)
    manifest = "".join(
        # `@`-keys (model, version, word counting) hold what they name as written, not a hash.
        f"<tr><td><code>{_e(p)}</code></td>"
        f"<td><code>{_e(h if p.startswith('@') else h[:16])}</code></td></tr>"
        for p, h in sorted(run.manifest.items())
    )
    return (
        f"<h1>redline run <code>{_e(run.id)}</code> {_badge('r', result)}</h1>"
        f"<dl>{dl}</dl>"
        f"<details><summary>manifest ({len(run.manifest)} inputs hashed)</summary>"
        f"<table><tr><th>input</th><th>sha256</th></tr>{manifest}</table></details>"
    )


def _verdicts(report: RunReport) -> str:
    parts = [(str(v), report.verdicts.get(v, 0)) for v in VERDICT_ORDER]
    total = sum(n for _, n in parts)
    cells = "".join(f"<td>{_badge('v', name)} {n}</td>" for name, n in parts)
    banner = ""
    if report.withheld:
        banner = (
            '<p class="banner">Content comparison withheld (not enough evidence): '
            f"{_e(report.withheld)}</p>"
        )
    outcomes = report.case_counts()
    stopped = budget_note(report.run.args)
    if stopped is not None:
        banner += f'<p class="banner">{_e(stopped.capitalize())}.</p>'
    previous = "<p>No earlier scheduled run in the store to compare with.</p>"
    if report.previous is not None:
        before = report.previous.a.run
        origin = report.previous_origin
        # As text, not a link: the page references nothing outside itself.
        link = "" if origin is None else f", {_e(origin.label)} <code>{_e(origin.url)}</code>"
        previous = (
            f"<p>Against the previous run <code>{_e(before.id)}</code> "
            f"({_e(before.started_at[:16].replace('T', ' '))} UTC{link}): "
            f"{_e(previous_run_sentence(report.previous))}</p>"
        )
        drifted = drift_sentence(report)
        if drifted is not None:
            previous += f"<p>{_e(drifted)}</p>"
    return (
        f"<h2>Verdicts ({total} samples; cases: {_e(outcomes)})</h2>"
        f"{_bar(parts, total)}<table><tr>{cells}</tr></table>{banner}"
        f"<p>{_e(usage_summary(report.usage).capitalize())}.</p>{previous}"
    )


def _case_row(case: CaseReport, result: str) -> str:
    c = case.case
    parts = [(str(v), c.verdicts.get(v, 0)) for v in VERDICT_ORDER]
    breakdown = " ".join(f"{n} {name}" for name, n in parts if n)
    marks = ' <span class="mark">case changed since baseline</span>' * case.changed_since_baseline
    if case.marginal is not None:
        m = case.marginal
        marks += (
            f' <span class="mark">marginal for {m.runs} runs ({m.pooled_passes}/'
            f"{m.pooled_samples}): raise samples or retire</span>"
        )
    anchor = _e(f"{c.suite}/{c.case_id}")
    return (
        f'<tr><td><a href="#{anchor}">{_e(c.case_id)}</a>{marks}</td><td>{_e(c.suite)}</td>'
        f"<td>{_e(c.tier)}</td>"
        f"<td>{_bar(parts, c.samples, 'bar passbar')}{c.passes}/{c.samples}</td>"
        f"<td>{c.required}</td><td>{_e(breakdown)}</td><td>{_badge('r', result)}</td>"
        f"<td>{sparkline_svg(case.history)}</td></tr>"
    )


def _case_detail(case: CaseReport, result: str) -> str:
    c = case.case
    is_open = " open" if c.result is not CaseOutcome.PASS else ""
    samples = []
    for s in case.samples:
        reasons = "".join(
            f"<li><code>{_e(a.type)}</code>: {_e(a.reason)}</li>" for a in failed_assertions(s)
        )
        if s.error:
            reasons += f"<li>error: {_e(s.error)}</li>"
        stopped = stopped_early_note(s)
        if stopped is not None:
            reasons += f"<li>{_e(stopped)}</li>"
        diff = ""
        if case.golden is not None and s.verdict is not Verdict.OK:
            diff = (
                "<details><summary>diff to golden output</summary>"
                + _diff_html(
                    golden_diff(case.golden, sample_answer(s), output_label=f"sample {s.index}")
                )
                + "</details>"
            )
        samples.append(
            f'<div class="sample">sample {s.index} {_badge("v", str(s.verdict))} '
            f"finish: {_e(s.finish_reason or 'none')}"
            f"{f'<ul>{reasons}</ul>' if reasons else ''}{_output(s)}{diff}</div>"
        )
    golden = (
        f"<details><summary>golden output</summary><pre>{_e(case.golden)}</pre></details>"
        if case.golden is not None
        else "<p>No golden output in the baseline.</p>"
    )
    return (
        f'<details id="{_e(f"{c.suite}/{c.case_id}")}"{is_open}><summary>'
        f"{_badge('r', result)} <code>{_e(c.suite)}/{_e(c.case_id)}</code> "
        f"{c.passes}/{c.samples} (required {c.required})</summary>"
        f"{golden}{''.join(samples)}</details>"
    )


def _output(sample: SampleRecord) -> str:
    """The raw output; a sample that produced none (a transport failure) says so instead of
    showing an empty box."""
    text = transcript_text(sample)
    if text:
        return f"<pre>{_e(text)}</pre>"
    why = f"{sample.verdict}: {sample.error}" if sample.error else str(sample.verdict)
    return f'<p class="no-output">no output ({_e(why)})</p>'


def html_report(report: RunReport) -> str:
    """The run as one HTML document with no external reference of any kind."""
    cases = sorted(
        report.cases,
        key=lambda c: (_OUTCOME_ORDER[c.case.result], c.case.suite, c.case.case_id),
    )
    rows = "".join(_case_row(c, report.shown_result(c.case)) for c in cases)
    details = "".join(_case_detail(c, report.shown_result(c.case)) for c in cases)
    title = f"redline run {report.run.id}: {report.run.result or report.run.status}"
    held = "".join(
        f"<li><code>{_e(q.case.suite)}/{_e(q.case.case_id)}</code>: {_e(q.label)}</li>"
        for q in report.quarantined
    )
    quarantine = f"<h2>Quarantined (reported, not counted)</h2><ul>{held}</ul>" if held else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
        f"{_header(report)}{_verdicts(report)}"
        "<h2>Cases</h2><table><tr><th>case</th><th>suite</th><th>tier</th><th>passes</th>"
        "<th>required</th><th>verdicts</th><th>result</th><th>history</th></tr>"
        f"{rows}</table>{quarantine}<h2>Samples</h2>{details}</body></html>\n"
    )
