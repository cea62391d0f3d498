"""A comparison of two runs as columns, JSON and a Markdown table for a pull request.

The columns are defined once here and used by the CLI table, the Markdown export and the
app's compare screen, so "sortable by any column" sorts on the same values everywhere.
Columns marked `content` compare pass rates; they are left out while the content
comparison is withheld for want of evidence. Latency, tokens, cost and truncations always show.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from redline.deciding.compare import CaseDelta, Comparison, ManifestChange, RunSide, Split, split_of
from redline.report.markdown import md_code, md_escape
from redline.running.exchange import run_json
from redline.running.usage import Usage, usd
from redline.vocabulary.records import CaseRecord
from redline.vocabulary.verdicts import VERDICT_ORDER, Verdict

SortValue = float | str | None


def _num(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _tokens(value: float | None) -> str:
    """Tokens per call: one decimal below 100, where a change of a few tokens shows."""
    return _num(value, 1 if value is not None and abs(value) < 100 else 0)


def _arrow(a: float | None, b: float | None, fmt: Callable[[float | None], str]) -> str:
    return f"{fmt(a)} → {fmt(b)}"


def _change(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def _passes(case: CaseRecord, rate: float | None) -> str:
    return f"{case.passes}/{case.content_samples} {_rate(rate)}"


def p_text(value: float) -> str:
    return f"{value:.4f}" if value >= 1e-4 else f"{value:.1e}"


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    text: Callable[[CaseDelta], str]
    #: What sorting by this column orders on (None sorts last); for an "A → B" column
    #: the change from A to B.
    value: Callable[[CaseDelta], SortValue]
    content: bool = False
    numeric: bool = True
    #: Latency, tokens or cost (the CLI prints these in a table of their own).
    usage: bool = False


def _usage_column(
    key: str, header: str, get: Callable[[Usage], float | None], fmt: Callable[[float | None], str]
) -> Column:
    return Column(
        key,
        header,
        lambda d: _arrow(get(d.usage_a), get(d.usage_b), fmt),
        lambda d: _change(get(d.usage_a), get(d.usage_b)),
        usage=True,
    )


def _verdict_change(verdict: Verdict) -> Column:
    return Column(
        str(verdict),
        f"{verdict} Δ",
        lambda d: f"{d.verdict_delta[verdict]:+d}",
        lambda d: float(d.verdict_delta[verdict]),
    )


COLUMNS: tuple[Column, ...] = (
    Column(
        "case",
        "case",
        lambda d: f"{d.suite}/{d.case_id}",
        lambda d: f"{d.suite}/{d.case_id}",
        numeric=False,
    ),
    Column("a", "A", lambda d: _passes(d.a, d.rate_a), lambda d: d.rate_a, content=True),
    Column("b", "B", lambda d: _passes(d.b, d.rate_b), lambda d: d.rate_b, content=True),
    Column(
        "delta",
        "Δ",
        lambda d: "–" if d.delta is None else f"{d.delta:+.0%}",
        lambda d: d.delta,
        content=True,
    ),
    Column("p", "p (one-sided)", lambda d: d.p_text, lambda d: d.p_value, content=True),
    _usage_column("latency", "mean latency ms", lambda u: u.mean_latency_ms, _num),
    _usage_column("p95", "p95 latency ms", lambda u: u.p95_latency_ms, _num),
    _usage_column("tokens_in", "input tokens/call", lambda u: u.mean_input_tokens, _tokens),
    _usage_column("tokens_out", "output tokens/call", lambda u: u.mean_output_tokens, _tokens),
    _usage_column(
        "cached_in", "cached input tokens/call", lambda u: u.mean_cached_input_tokens, _tokens
    ),
    _usage_column("cost", "cost per 1k calls", lambda u: u.cost_per_1k, usd),
    _verdict_change(Verdict.TRUNCATED),
    _verdict_change(Verdict.REFUSED),
)


def columns(comparison: Comparison, usage: bool | None = None) -> list[Column]:
    """The columns to show: without the pass-rate ones while content is withheld.
    `usage` True/False keeps the case column and only the usage / only the other columns."""
    cached = _uses_prompt_cache(comparison)
    return [
        c
        for c in COLUMNS
        if not (c.content and comparison.withheld)
        and (usage is None or c.key == "case" or c.usage == usage)
        and (cached or c.key != "cached_in")
    ]


def _uses_prompt_cache(comparison: Comparison) -> bool:
    """Whether either run read or wrote the provider's prompt cache (else its column is
    empty and left out)."""
    t = comparison.total
    return any(u.cached_input_tokens or u.cache_write_tokens for u in (t.usage_a, t.usage_b))


def column(key: str) -> Column:
    for c in COLUMNS:
        if c.key == key:
            return c
    raise KeyError(f"no comparison column {key!r} (columns: {', '.join(c.key for c in COLUMNS)})")


def sort_rows(rows: list[CaseDelta], key: str, descending: bool = False) -> list[CaseDelta]:
    """`rows` ordered by column `key`; rows without a value go last in either direction."""
    col = column(key)
    present = [r for r in rows if col.value(r) is not None]
    missing = [r for r in rows if col.value(r) is None]
    present.sort(key=lambda r: col.value(r), reverse=descending)  # type: ignore[arg-type,return-value]
    return present + missing


@dataclass(frozen=True)
class TotalLine:
    label: str
    a: str
    b: str
    change: str


def total_lines(c: Comparison) -> list[TotalLine]:
    """The run totals over the compared cases, one line per measure."""
    t = c.total
    ua, ub = t.usage_a, t.usage_b
    lines: list[TotalLine] = []
    if not c.withheld:
        lines.append(
            TotalLine(
                "pass rate",
                f"{t.passes_a}/{t.content_a} {_rate(t.rate_a)}",
                f"{t.passes_b}/{t.content_b} {_rate(t.rate_b)}",
                ("–" if t.delta is None else f"{t.delta:+.0%}")
                + (" (same draws)" if c.same_draws else f" (p = {p_text(t.p_value)}, pooled)"),
            )
        )

    def line(
        label: str, a: float | None, b: float | None, fmt: Callable[[float | None], str]
    ) -> None:
        change = _change(a, b)
        pct = f" ({change / a:+.0%})" if change is not None and a else ""
        lines.append(
            TotalLine(label, fmt(a), fmt(b), ("–" if change is None else fmt(change)) + pct)
        )

    line("mean latency ms", ua.mean_latency_ms, ub.mean_latency_ms, _num)
    line("p95 latency ms", ua.p95_latency_ms, ub.p95_latency_ms, _num)
    line("input tokens/call", ua.mean_input_tokens, ub.mean_input_tokens, _tokens)
    line("output tokens/call", ua.mean_output_tokens, ub.mean_output_tokens, _tokens)
    line("input tokens (total)", ua.input_tokens, ub.input_tokens, _num)
    line("output tokens (total)", ua.output_tokens, ub.output_tokens, _num)
    if _uses_prompt_cache(c):
        line("cached input tokens (total)", ua.cached_input_tokens, ub.cached_input_tokens, _num)
        line("cache-write tokens (total)", ua.cache_write_tokens, ub.cache_write_tokens, _num)
    line("cost (total)", ua.cost, ub.cost, usd)
    line("cost per 1k calls", ua.cost_per_1k, ub.cost_per_1k, usd)
    for v in (Verdict.TRUNCATED, Verdict.REFUSED):
        a, b = t.verdicts_a.get(v, 0), t.verdicts_b.get(v, 0)
        lines.append(TotalLine(f"{v}", str(a), str(b), f"{b - a:+d}"))
    return lines


SPLIT_NOTES = {
    Split.BOTH_PASS: "",
    Split.ONLY_A_FAILS: "B fixed these",
    Split.ONLY_B_FAILS: "B broke these",
    Split.BOTH_FAIL: "likely case problems, not migration effects: check the case first",
    Split.UNDECIDED: "inconclusive or marginal on one side: not enough evidence to say",
}


# -- JSON -------------------------------------------------------------------------------


def _usage_json(u: Usage) -> dict[str, Any]:
    return {
        "samples": u.samples,
        "answered": u.answered,
        "mean_latency_ms": u.mean_latency_ms,
        "p95_latency_ms": u.p95_latency_ms,
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "mean_input_tokens": u.mean_input_tokens,
        "mean_output_tokens": u.mean_output_tokens,
        "cached_input_tokens": u.cached_input_tokens,
        "cache_write_tokens": u.cache_write_tokens,
        "cost_usd": u.cost,
        "cost_per_1k_calls_usd": u.cost_per_1k,
    }


def _side_json(side: RunSide) -> dict[str, Any]:
    return {
        "run": run_json(side.run),
        "cases_evaluated": side.cases_evaluated,
        "verdicts": {str(v): side.verdicts.get(v, 0) for v in VERDICT_ORDER},
        "withheld": side.withheld,
    }


def _case_side(case: CaseRecord, rate: float | None, usage: Usage) -> dict[str, Any]:
    return {
        "result": str(case.result),
        "passes": case.passes,
        "content_samples": case.content_samples,
        "rate": rate,
        "samples": case.samples,
        "required": case.required,
        "verdicts": {str(v): case.verdicts.get(v, 0) for v in VERDICT_ORDER},
        "usage": _usage_json(usage),
    }


def comparison_json(c: Comparison) -> dict[str, Any]:
    """The comparison for scripts: every fact of the tables, nothing cut. Every compared
    case is listed with its usage; its pass-rate fields are null while content is withheld."""
    withheld = bool(c.withheld)
    t = c.total
    return {
        "a": _side_json(c.a),
        "b": _side_json(c.b),
        "narrowed_to": c.narrowed_to,
        "withheld": c.withheld,
        "same_draws": c.same_draws,
        "manifest_changes": [
            {"path": m.path, "kind": m.kind, "a": m.a, "b": m.b} for m in c.manifest_changes
        ],
        "verdict_delta": {str(v): n for v, n in c.verdict_delta.items()},
        "total": {
            "pass_rate_a": None if withheld else t.rate_a,
            "pass_rate_b": None if withheld else t.rate_b,
            "p_value": None if withheld or c.same_draws else t.p_value,
            "a": _usage_json(t.usage_a),
            "b": _usage_json(t.usage_b),
            "verdict_delta": {str(v): n for v, n in t.verdict_delta.items()},
        },
        "cases": [
            {
                "suite": d.suite,
                "case_id": d.case_id,
                "split": None if withheld else str(split_of(d)),
                "delta": None if withheld else d.delta,
                "p_value": None if withheld or not d.independent else d.p_value,
                "significant": False if withheld else d.significant,
                "significant_drop": False if withheld else d.significant_drop,
                "verdict_delta": {str(v): n for v, n in d.verdict_delta.items()},
                "a": _case_side(d.a, d.rate_a, d.usage_a),
                "b": _case_side(d.b, d.rate_b, d.usage_b),
            }
            for d in c.rows
        ],
        "split": {str(s): [f"{d.suite}/{d.case_id}" for d in c.split(s)] for s in Split},
        "likely_case_problems": [f"{d.suite}/{d.case_id}" for d in c.likely_case_problems],
        "significant_drops": [f"{d.suite}/{d.case_id}" for d in c.significant_drops],
        "case_changed": [
            {
                "suite": a.suite,
                "case_id": a.case_id,
                "a": {"passes": a.passes, "samples": a.samples},
                "b": {"passes": b.passes, "samples": b.samples},
            }
            for a, b in c.changed
        ],
        "only_in_a": [f"{x.suite}/{x.case_id}" for x in c.only_a],
        "only_in_b": [f"{x.suite}/{x.case_id}" for x in c.only_b],
    }


# -- Markdown ---------------------------------------------------------------------------

#: Per-case rows in the Markdown table; the rest are counted (a PR body has a size limit).
MAX_MARKDOWN_ROWS = 100


def comparison_markdown(c: Comparison) -> str:
    """A pull-request description: models, totals, the four-way split and every case."""
    lines = _md_heading(c) + _md_totals(c)
    if not c.withheld:
        lines += _md_split(c)
    lines += _md_cases(c) + _md_cases_apart(c) + _md_conclusion(c)
    return "\n".join(lines) + "\n"


def _md_heading(c: Comparison) -> list[str]:
    a, b = c.a.run, c.b.run
    changes = _input_changes(c)
    return [
        f"## Model comparison: {md_code(a.model_id)} → {md_code(b.model_id)}",
        "",
        f"A = run {md_code(a.id)} · B = run {md_code(b.id)} · "
        f"{len(c.rows)} case(s) compared · "
        + ("identical inputs" if not changes else f"{len(changes)} input(s) differ"),
        "",
    ]


def _md_totals(c: Comparison) -> list[str]:
    """Why pass rates are withheld (if they are), then the totals table."""
    lines = [
        f"> Pass rates not compared (too little content evidence): {md_escape(reason, 300)}"
        for reason in c.withheld
    ]
    if c.withheld:
        lines.append("")
    lines += ["| | A | B | change |", "|---|---:|---:|---:|"]
    for t in total_lines(c):
        lines.append(f"| {t.label} | {md_escape(t.a)} | {md_escape(t.b)} | {md_escape(t.change)} |")
    return lines


def _md_split(c: Comparison) -> list[str]:
    """The four-way split, naming the cases of each failing part."""
    lines = ["", "| split | cases | |", "|---|---:|---|"]
    for s in Split:
        lines.append(f"| {s} | {len(c.split(s))} | {md_escape(SPLIT_NOTES[s])} |")
    for s in (Split.ONLY_B_FAILS, Split.ONLY_A_FAILS, Split.BOTH_FAIL):
        found = c.split(s)
        if found:
            names = ", ".join(md_code(f"{d.suite}/{d.case_id}") for d in found[:MAX_MARKDOWN_ROWS])
            more = (
                f" and {len(found) - MAX_MARKDOWN_ROWS} more"
                if len(found) > MAX_MARKDOWN_ROWS
                else ""
            )
            lines += ["", f"**{s}** ({md_escape(SPLIT_NOTES[s])}): {names}{more}"]
    return lines


def _md_cases(c: Comparison) -> list[str]:
    """The per-case table, at most MAX_MARKDOWN_ROWS rows; significant drops in bold."""
    shown = columns(c)
    lines = [
        "",
        "| " + " | ".join(md_escape(col.header) for col in shown) + " |",
        "|" + "|".join("---:" if col.numeric else "---" for col in shown) + "|",
    ]
    for d in c.rows[:MAX_MARKDOWN_ROWS]:
        mark = "**" if d.significant_drop and not c.withheld else ""
        lines.append(
            "| " + " | ".join(f"{mark}{md_escape(col.text(d))}{mark}" for col in shown) + " |"
        )
    if len(c.rows) > MAX_MARKDOWN_ROWS:
        lines.append(
            f"\n… and {len(c.rows) - MAX_MARKDOWN_ROWS} more case(s): see `redline compare`."
        )
    return lines


def _md_cases_apart(c: Comparison) -> list[str]:
    """Cases not compared: changed case files, and cases only one run has."""
    lines: list[str] = []
    if c.changed:
        names = ", ".join(md_code(f"{x.suite}/{x.case_id}") for x, _ in c.changed)
        lines += ["", f"Case changed (file differs, not compared): {names}"]
    for label, only in (("Only in A", c.only_a), ("Only in B", c.only_b)):
        if only:
            lines += ["", f"{label}: " + ", ".join(md_code(f"{x.suite}/{x.case_id}") for x in only)]
    return lines


def _md_conclusion(c: Comparison) -> list[str]:
    if c.same_draws:
        return ["", "Both runs froze their seeds on the same model: no p-value is reported."]
    if c.withheld:
        return []
    drops = c.significant_drops
    return [
        "",
        f"**{len(drops)} case(s) dropped beyond sampling noise** (one-sided Fisher p < 0.05)."
        if drops
        else "No case dropped beyond sampling noise (one-sided Fisher p < 0.05).",
    ]


def _input_changes(c: Comparison) -> list[ManifestChange]:
    """Manifest differences other than the model id itself (expected in a migration)."""
    return [m for m in c.manifest_changes if not m.path.startswith("@model")]
