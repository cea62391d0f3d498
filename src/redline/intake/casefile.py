"""Case files written from logged exchanges and table rows, checked by the suite loader
before anything is written (a refused row or exchange writes nothing)."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from redline.config import Config
from redline.errors import Problem, ProblemsError, UsageError
from redline.intake.traces import Exchange
from redline.suite.cases import check_suite_edit

_SLUG = re.compile(r"[^A-Za-z0-9]+")


def starter_assertions(answer: str, *, bad: bool) -> list[dict[str, Any]]:
    """Layer-1 checks to edit: a length budget from the logged answer, JSON when it was
    JSON, and for a known-bad answer, that it does not come back."""
    checks: list[dict[str, Any]] = [
        {"type": "max-chars", "value": max(200, 2 * len(answer)), "note": "twice the logged answer"}
    ]
    try:
        json.loads(answer)
        checks.append({"type": "is-json", "note": "the logged answer was JSON"})
    except ValueError:
        pass
    if bad and answer.strip():
        first = answer.strip().splitlines()[0][:120]
        checks.append({"type": "not-contains", "value": first, "note": "the known-bad answer"})
    return checks


def exchange_case(exchange: Exchange, case_id: str, *, bad: bool) -> dict[str, Any]:
    provenance: dict[str, Any] = {"source": exchange.source}
    if exchange.trace_id:
        provenance["ticket"] = exchange.trace_id
    if exchange.timestamp:
        provenance["reported"] = exchange.timestamp[:10]
    where = f" line {exchange.line}" if exchange.line else ""
    note = f"from a logged {exchange.format} exchange{where}"
    if exchange.timestamp:
        note += f" at {exchange.timestamp}"
    if exchange.model:
        note += f" (model {exchange.model})"
    provenance["note"] = note + (": the logged answer is known bad" if bad else "")
    case: dict[str, Any] = {"id": case_id, "provenance": provenance}
    if exchange.vars:
        case["vars"] = dict(exchange.vars)
    case["messages"] = [m for m in exchange.messages]
    if not bad:
        case["golden"] = exchange.answer
    case["assert"] = starter_assertions(exchange.answer, bad=bad)
    return case


def case_id_for(exchange: Exchange, taken: set[str], fallback: str) -> str:
    base = _SLUG.sub("-", exchange.trace_id or fallback).strip("-").lower()[:60] or "case"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    taken.add(name)
    return name


def dump(case: Mapping[str, Any]) -> str:
    """The case as YAML, text kept verbatim (multi-line text as a literal block)."""

    class _Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        style = "|" if "\n" in value and not value.endswith((" ", "\t")) else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _Dumper.add_representer(str, text)
    return yaml.dump(dict(case), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


@dataclass(frozen=True)
class Written:
    paths: list[Path]
    #: (row number, why) for each refused row.
    refused: list[tuple[int, str]]


def write_cases(
    folder: Path, cases: Sequence[tuple[int, dict[str, Any]]], config: Config | None
) -> Written:
    """Write each (row, case) the suite loader accepts; list the others with their row."""
    texts: dict[Path, tuple[int, str]] = {}
    refused: list[tuple[int, str]] = []
    for row, case in cases:
        path = folder / f"{case['id']}.yaml"
        if path.exists() or path in texts:
            refused.append((row, f"a case file {path.name} already exists"))
            continue
        texts[path] = (row, dump(case))
    problems: list[Problem] = []
    try:
        check_suite_edit(folder, {p: t for p, (_r, t) in texts.items()}, config)
    except ProblemsError as exc:
        problems = exc.problems
    bad: dict[Path, list[str]] = {}
    for problem in problems:
        for path in texts:
            if Path(problem.path).name == path.name:
                bad.setdefault(path, []).append(f"{problem.message}")
    others = [p for p in problems if not any(Path(p.path).name == q.name for q in texts)]
    if others:
        raise ProblemsError(others)
    written = []
    for path, (row, text) in texts.items():
        if path in bad:
            refused.append((row, "; ".join(bad[path])))
            continue
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return Written(written, sorted(refused))


def read_table(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV (with a header) or JSONL file, as text."""
    try:
        if path.suffix.lower() == ".csv":
            with path.open(newline="", encoding="utf-8") as fh:
                return [dict(r) for r in csv.DictReader(fh)]
        rows = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise UsageError(f"{path}:{number}: not JSON ({exc.args[0]})") from None
            if not isinstance(row, dict):
                raise UsageError(f"{path}:{number}: a row must be a JSON object")
            rows.append({str(k): "" if v is None else str(v) for k, v in row.items()})
        return rows
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot be read: {exc}") from None


def parse_map(entries: Sequence[str]) -> dict[str, str]:
    """`--map target=column` entries: target is id, golden, vars.NAME or provenance.KEY."""
    mapping: dict[str, str] = {}
    for entry in entries:
        target, sep, column = entry.partition("=")
        if not _is_target(target) and _is_target(column):
            target, column = column, target  # written COLUMN=TARGET
        if not sep or not column or not _is_target(target):
            raise UsageError(
                f"--map {entry!r}: write TARGET=COLUMN, TARGET one of id, golden, vars.NAME, "
                "provenance.KEY (e.g. --map vars.question=q --map golden=answer)"
            )
        mapping[target] = column
    return mapping


def _is_target(name: str) -> bool:
    return name in ("id", "golden") or bool(re.match(r"^(vars|provenance)\.\w+$", name))


def row_cases(
    rows: list[dict[str, str]], mapping: Mapping[str, str], source: str
) -> tuple[list[tuple[int, dict[str, Any]]], list[tuple[int, str]]]:
    """One case per row (row 1 is the first data row); rows missing a mapped column are
    refused. Without a mapping every column but id and golden is a var."""
    if not mapping and rows:
        mapping = {("vars." + c if c not in ("id", "golden") else c): c for c in rows[0]}
    cases: list[tuple[int, dict[str, Any]]] = []
    refused: list[tuple[int, str]] = []
    taken: set[str] = set()
    for number, row in enumerate(rows, 1):
        absent = [c for c in mapping.values() if c not in row or row[c] is None]
        if absent:
            refused.append((number, f"no column {', '.join(absent)}"))
            continue
        raw_id = row[mapping["id"]] if "id" in mapping else f"row-{number}"
        case_id = _SLUG.sub("-", raw_id).strip("-").lower()
        if not case_id:
            refused.append((number, "the id is empty"))
            continue
        if case_id in taken:
            refused.append((number, f"id {case_id!r} is used by an earlier row"))
            continue
        taken.add(case_id)
        provenance = {"source": f"{source} row {number}"}
        provenance |= {
            k.split(".", 1)[1]: row[c] for k, c in mapping.items() if k.startswith("provenance.")
        }
        case: dict[str, Any] = {"id": case_id, "provenance": provenance}
        variables = {
            k.split(".", 1)[1]: row[c] for k, c in mapping.items() if k.startswith("vars.")
        }
        if variables:
            case["vars"] = variables
        golden = row[mapping["golden"]] if "golden" in mapping else ""
        if golden:
            case["golden"] = golden
        case["assert"] = starter_assertions(golden, bad=False)
        cases.append((number, case))
    return cases, refused
