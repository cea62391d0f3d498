"""Two effective versions of one case compared: which edit lowers the bar, and how.

An old assertion is kept when some new assertion is at least as strict (an identical
one, a `contains` of longer text, the same budget lower...). Otherwise it is reported
against the new assertion it most likely became, or as removed. Every new assertion
that keeps nothing of the old ones is an addition.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redline.casemodel import Compare, case_settings
from redline.casemodel.effective import (
    EffectiveAssertion,
    EffectiveCase,
    KeyPath,
    Setting,
    SuiteBar,
    default_required,
)
from redline.casemodel.schema import schema_diff
from redline.casemodel.values import (
    Change,
    combine,
    differs,
    forbidden_text_change,
    number_change,
    pattern_change,
    required_text_change,
    show,
    source_change,
)
from redline.vocabulary.sequential import pass_rate_bar, passes_needed
from redline.vocabulary.tiers import Tier


@dataclass(frozen=True)
class BarChange:
    """One change of what a case enforces."""

    change: Change
    #: What changed: "required", "assert[2] max-chars", "assert[6] mentions threshold".
    label: str
    #: How: "0.5 (default) → 0.3", "removed", "added".
    detail: str
    #: Where it is written (key path), in the new file unless `in_old_file`.
    at: KeyPath = ()
    in_old_file: bool = False
    #: Schema files a schema change was read from (old, new), for naming them.
    files: tuple[str, str] = ("", "")

    def __str__(self) -> str:
        return f"{self.label} {self.detail}"


@dataclass(frozen=True)
class CaseDiff:
    changes: tuple[BarChange, ...]
    #: Edits that change no bar but are worth saying (input, golden answer, id).
    notes: tuple[BarChange, ...]


def diff_cases(old: EffectiveCase, new: EffectiveCase) -> CaseDiff:
    changes: list[BarChange] = []
    notes: list[BarChange] = []
    changes += _tier(old, new)
    changes += _rate(old, new)
    a, b = old.expect_refusal, new.expect_refusal
    if a.value != b.value:
        kind = Change.LOOSER if a.value else Change.TIGHTER
        changes.append(BarChange(kind, "expect_refusal", _arrow(a, b), b.at))
    changes += _quarantine(old.quarantine, new.quarantine)
    changes += _settings(old, new)
    changes += _assertions(old.assertions, new.assertions)
    if old.id != new.id:
        notes.append(BarChange(Change.SAME, "id", f"{show(old.id)} → {show(new.id)}", ("id",)))
    if dict(old.vars) != dict(new.vars):
        names = sorted(
            k for k in set(old.vars) | set(new.vars) if old.vars.get(k) != new.vars.get(k)
        )
        notes.append(
            BarChange(
                Change.SAME, "vars", f"{', '.join(names)} changed (the case's input)", ("vars",)
            )
        )
    og, ng = old.golden, new.golden
    if (og.value if og else None) != (ng.value if ng else None):
        notes.append(
            BarChange(Change.SAME, "golden", "golden answer changed (a case change)", ("golden",))
        )
    return CaseDiff(tuple(changes), tuple(notes))


def diff_suite_bars(old: SuiteBar, new: SuiteBar) -> list[BarChange]:
    """What a suite's samples and tier change for a case that sets neither itself."""
    return _tier(_bare(old), _bare(new)) + _rate(_bare(old), _bare(new))


def _bare(suite: SuiteBar) -> EffectiveCase:
    tier, samples = Tier(suite.tier.value), int(suite.samples.value)
    required = Setting(default_required(tier, samples))  # the suite's bar is the rule itself
    written = Setting(False, True)
    sampling = suite.samples.value if isinstance(suite.samples.value, dict) else None
    if sampling is not None:
        bar = pass_rate_bar(tier, sampling["bar"])
        sampling = {**sampling, "bar": bar}
        samples_setting = Setting(sampling["max"], suite.samples.default, at=suite.samples.at)
        required = Setting(passes_needed(bar, sampling["max"]))
    else:
        samples_setting = suite.samples
    return EffectiveCase(
        "", "", suite.tier, samples_setting, required, written, sampling, (), {}, None, ()
    )


def _quarantine(old: Setting | None, new: Setting | None) -> list[BarChange]:
    """A quarantined case cannot fail a run: adding one, or a later `until`, loosens."""
    a = old.value if old is not None else None
    b = new.value if new is not None else None
    if a == b:
        return []
    if b is None:
        until = a["until"] if a is not None else "?"
        return [BarChange(Change.TIGHTER, "quarantine", f"lifted (was until {until})", ())]
    at = new.at if new is not None else ()
    if a is None:
        detail = f"added until {b['until']}: the case cannot fail a run until then"
        return [BarChange(Change.LOOSER, "quarantine", detail, at)]
    if b["until"] == a["until"]:
        return [BarChange(Change.SAME, "quarantine", "reason or ticket reworded", at)]
    kind = Change.LOOSER if b["until"] > a["until"] else Change.TIGHTER
    return [BarChange(kind, "quarantine", f"until {a['until']} → {b['until']}", at)]


def _arrow(a: Setting, b: Setting) -> str:
    return f"{a.shown()} → {b.shown()}"


def _tier(old: EffectiveCase, new: EffectiveCase) -> list[BarChange]:
    a, b = old.tier, new.tier
    if a.value == b.value:
        return []
    kind = Change.LOOSER if (a.value, b.value) == (Tier.CONTRACT, Tier.QUALITY) else Change.TIGHTER
    detail = f"{show(a.value)} → {show(b.value)}" + _from_suite(a, b)
    return [BarChange(kind, "tier", detail, b.at)]


def _from_suite(a: Setting, b: Setting) -> str:
    if a.default and b.default:
        return " (both from the suite)"
    if a.default:
        return " (was the suite's)"
    if b.default:
        return " (now the suite's)"
    return ""


def _sequential(old: EffectiveCase, new: EffectiveCase) -> list[BarChange]:
    """Sequential sampling on either side: a lower bar, a wider marginal band, fewer samples
    at most or at least loosens (a case stops earlier, or ends marginal instead of red)."""
    a, b = _plan(old), _plan(new)
    if a == b:
        return []
    looser = b["bar"] < a["bar"] - 1e-9 or b["margin"] > a["margin"] + 1e-9
    looser = looser or b["max"] < a["max"] or b["min"] < a["min"]
    detail = f"{_describe_plan(a)} → {_describe_plan(b)}{_from_suite(old.samples, new.samples)}"
    kind = Change.LOOSER if looser else Change.TIGHTER
    return [BarChange(kind, "samples", detail, new.samples.at)]


def _plan(case: EffectiveCase) -> dict[str, float]:
    if case.sampling is not None:
        return {k: float(case.sampling[k]) for k in ("min", "max", "margin", "bar")}
    samples = int(case.samples.value)
    return {"min": samples, "max": samples, "margin": 0.0, "bar": case.rate}


def _describe_plan(plan: dict[str, float]) -> str:
    if plan["margin"] == 0 and plan["min"] == plan["max"]:
        return f"{plan['max']:g} (bar {plan['bar']:.0%})"
    return f"{plan['min']:g}–{plan['max']:g} (bar {plan['bar']:.0%} ± {plan['margin']:g})"


def _rate(old: EffectiveCase, new: EffectiveCase) -> list[BarChange]:
    """Fewer passes required, a lower rate, or fewer samples at no higher a rate loosens."""
    if old.sampling is not None or new.sampling is not None:
        return _sequential(old, new)
    s0, s1 = int(old.samples.value), int(new.samples.value)
    r0, r1 = int(old.required.value), int(new.required.value)
    if (s0, r0) == (s1, r1):
        return []
    at = new.required.at if not new.required.default else new.samples.at
    default = " (default)" if old.required.default else ""
    if s0 == s1:
        detail = f"{r0}{default} → {r1} (of {s1} samples)"
        kind = Change.LOOSER if r1 < r0 else Change.TIGHTER
        return [BarChange(kind, "required", detail, at)]
    f0, f1 = r0 / s0, r1 / s1
    detail = f"{s0} → {s1}{_from_suite(old.samples, new.samples)}, required {r0}/{s0}{default}"
    detail += f" → {r1}/{s1} ({f0:.0%} → {f1:.0%})"
    if f1 < f0 - 1e-9:
        return [BarChange(Change.LOOSER, "samples", detail, at)]
    if s1 < s0 and f1 <= f0 + 1e-9:
        return [
            BarChange(Change.LOOSER, "samples", detail + ": fewer samples, no higher a bar", at)
        ]
    return [BarChange(Change.TIGHTER, "samples", detail, at)]


def _comparable(a: EffectiveAssertion, b: EffectiveAssertion) -> bool:
    return (a.model.family or a.type) == (b.model.family or b.type)


def _label(index: int, old: EffectiveAssertion, new: EffectiveAssertion, key: str = "") -> str:
    kind = new.type if old.type == new.type else f"{old.type} → {new.type}"
    return f"assert[{index}] {kind}" + (f" {key}" if key and key != "value" else "")


def assertion_changes(
    index: int, old: EffectiveAssertion, new: EffectiveAssertion
) -> list[BarChange]:
    """Each parameter's change from `old` to `new` (of one family), as findings at `index`."""
    found: list[BarChange] = []
    at: KeyPath = ("assert", index)
    params = {p.alias_of or p.key: p for p in new.model.params if not p.alias_of}
    pattern_done = False
    for key, param in params.items():
        a, b = old.params.get(key), new.params.get(key)
        where = b.at if b is not None else at
        label = _label(index, old, new, key)
        compare = param.compare
        if compare is Compare.REQUIRED_TEXT:
            found += _required_text(label, old, new, (a, b), where)
        elif not differs(_value(a), _value(b)):
            continue
        elif compare is Compare.PATTERN:
            if not pattern_done:
                found += _pattern(index, old, new)
            pattern_done = True
        elif compare is Compare.SCHEMA:
            found += _schema(label, a, b, where)
        else:
            found.append(_ordered(compare, label, a, b, where))
    return found


def _settings(old: EffectiveCase, new: EffectiveCase) -> list[BarChange]:
    """The declared case settings, each compared as its declaration says."""
    found: list[BarChange] = []
    for param in case_settings():
        a, b = old.settings.get(param.key), new.settings.get(param.key)
        if not differs(_value(a), _value(b)):
            continue
        at: KeyPath = (param.key,)
        if param.compare is Compare.SCHEMA:
            found += _schema(param.key, a, b, at)
        else:
            found.append(_ordered(param.compare, param.key, a, b, at))
    return found


def _value(setting: Setting | None) -> Any:
    return setting.value if setting is not None else None


def _required_text(
    label: str,
    old: EffectiveAssertion,
    new: EffectiveAssertion,
    settings: tuple[Setting | None, Setting | None],
    at: KeyPath,
) -> list[BarChange]:
    """Text the output must contain: shorter or case-blind text asks less."""
    a, b = settings
    if a is None or b is None:
        return []
    change = required_text_change(
        str(a.value), old.model.ignore_case, str(b.value), new.model.ignore_case
    )
    if change is Change.SAME:
        return []
    unrelated = change is Change.LOOSER and str(b.value) not in str(a.value)
    return [BarChange(change, label, _arrow_of(a, b) + (" (changed)" if unrelated else ""), at)]


def _pattern(index: int, old: EffectiveAssertion, new: EffectiveAssertion) -> list[BarChange]:
    """A regular expression and its flags, compared as one."""
    flags_a = str(old.params["flags"].value) if "flags" in old.params else ""
    flags_b = str(new.params["flags"].value) if "flags" in new.params else ""
    a, b = old.params["value"], new.params["value"]
    change = pattern_change(str(a.value), flags_a, str(b.value), flags_b)
    if change is Change.SAME:
        return []
    text = f"{show(a.value)}" + (f" /{flags_a}" if flags_a else "")
    text += f" → {show(b.value)}" + (f" /{flags_b}" if flags_b else "")
    if change is Change.REVIEW:
        text += " (changed, review)"
    return [BarChange(change, _label(index, old, new), text, b.at)]


def _ordered(
    compare: Compare, label: str, a: Setting | None, b: Setting | None, at: KeyPath
) -> BarChange:
    """A parameter whose values have an order (a bound, a forbidden text, a source...)."""
    va, vb = _value(a), _value(b)
    if compare in (Compare.CEILING, Compare.FLOOR):
        change = number_change(va, vb, higher_is_looser=compare is Compare.CEILING)
    elif compare is Compare.FORBIDDEN_TEXT:
        change = forbidden_text_change(str(va), str(vb))
    elif compare is Compare.SOURCE:
        change = source_change(str(va), str(vb))
    elif compare is Compare.EXPECT:
        change = Change.LOOSER if va else Change.TIGHTER
    else:
        change = Change.REVIEW
    detail = _arrow_of(a, b)
    if change is Change.REVIEW:
        detail += " (changed, review)"
    elif change is Change.LOOSER and compare is Compare.FORBIDDEN_TEXT and str(va) not in str(vb):
        detail += " (changed)"
    return BarChange(change, label, detail, at)


def _arrow_of(a: Setting | None, b: Setting | None) -> str:
    return f"{a.shown() if a else '(none)'} → {b.shown() if b else '(none)'}"


def _schema(label: str, a: Setting | None, b: Setting | None, at: KeyPath) -> list[BarChange]:
    files = (a.source if a else "", b.source if b else "")
    if b is None:
        return [BarChange(Change.LOOSER, label, f"{_name(a)} removed", at, files=files)]
    if a is None:
        return [BarChange(Change.TIGHTER, label, f"{_name(b)} added", at, files=files)]
    if not isinstance(a.value, dict) or not isinstance(b.value, dict):
        change = Change.SAME if a.value == b.value else Change.REVIEW
        if change is Change.SAME:
            return []
        return [
            BarChange(change, label, f"{_name(a)} → {_name(b)} (changed, review)", at, files=files)
        ]
    return [
        BarChange(kind, label, detail, at, files=files)
        for kind, detail in schema_diff(a.value, b.value, "$")
    ]


def _name(setting: Setting | None) -> str:
    if setting is None:
        return "(none)"
    return show(setting.source or setting.value)


def _assertions(
    old: tuple[EffectiveAssertion, ...], new: tuple[EffectiveAssertion, ...]
) -> list[BarChange]:
    found: list[BarChange] = []
    explained: set[int] = set()
    verdicts: dict[tuple[int, int], list[BarChange]] = {}
    for i, a in enumerate(old):
        for j, b in enumerate(new):
            if _comparable(a, b):
                verdicts[i, j] = assertion_changes(b.index, a, b)
    pending: list[int] = []
    for i in range(len(old)):
        same = [j for j in range(len(new)) if (i, j) in verdicts and not verdicts[i, j]]
        if same:
            explained.add(_nearest(i, same, explained))
        else:
            pending.append(i)
    for i in pending:
        a = old[i]
        candidates = [j for j in range(len(new)) if (i, j) in verdicts]
        stricter = [
            j
            for j in candidates
            if combine([c.change for c in verdicts[i, j]]) in (Change.TIGHTER, Change.SAME)
        ]
        if stricter:
            j = _nearest(i, stricter, explained)
            explained.add(j)
            found += verdicts[i, j]
            continue
        if candidates:
            j = _nearest(i, candidates, explained)
            explained.add(j)
            found += verdicts[i, j]
            continue
        found.append(
            BarChange(
                Change.LOOSER,
                f"assert[{a.index}] {a.type}",
                f"{_describe(a)} removed".strip(),
                ("assert", a.index),
                in_old_file=True,
            )
        )
    for j, b in enumerate(new):
        if j not in explained:
            found.append(
                BarChange(
                    Change.TIGHTER,
                    f"assert[{b.index}] {b.type}",
                    f"{_describe(b)} added".strip(),
                    ("assert", b.index),
                )
            )
    return found


def _nearest(i: int, options: list[int], taken: set[int]) -> int:
    free = [j for j in options if j not in taken] or options
    return min(free, key=lambda j: (abs(j - i), j))


def _describe(a: EffectiveAssertion) -> str:
    for key in ("value", "schema", "rubric"):
        setting = a.params.get(key)
        if setting is not None and not setting.default:
            return _name(setting) if isinstance(setting.value, dict) else show(setting.value)
    return ""


__all__ = ["BarChange", "CaseDiff", "assertion_changes", "diff_cases", "diff_suite_bars"]
