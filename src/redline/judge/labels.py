"""People's labels for a rubric, made before seeing the judge: `labels/<rubric>.yaml`.

The file is committed. Each label keeps who made it and when, which stored
sample it came from, the output text with its SHA-256 (so calibration needs no
local run store), and the case vars the judge prompt uses.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from redline.documents.reading import NodeReader
from redline.documents.yamlsource import Node, load_file, type_name
from redline.errors import Problem, ProblemsError, relpath
from redline.judge.rubric import Rubric

if TYPE_CHECKING:
    pass

LABELS_DIR = "labels"
LABEL_KEYS = frozenset(
    {"sample", "output_sha256", "label", "score", "who", "when", "vars", "output"}
)

_HEADER = (
    "# Labels for rubric {name} ({rubric}), made blind: the judge's answer was not shown.\n"
    "# Written by `redline label`; read by `redline calibrate`. Commit this file.\n"
)


def output_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Label:
    """One person's verdict on one output."""

    sample: str
    output: str
    passed: bool
    who: str
    when: str
    score: int | None = None
    vars: Mapping[str, str] = field(default_factory=dict)

    @property
    def output_sha256(self) -> str:
        return output_sha256(self.output)

    def to_yaml(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "sample": self.sample,
            "output_sha256": self.output_sha256,
            "label": "pass" if self.passed else "fail",
        }
        if self.score is not None:
            data["score"] = self.score
        data.update({"who": self.who, "when": self.when})
        if self.vars:
            data["vars"] = dict(self.vars)
        data["output"] = self.output
        return data


def sample_ref(run_id: str, suite: str, case_id: str, index: int) -> str:
    """How a label names the stored sample it came from."""
    return f"{run_id}:{suite}/{case_id}#{index}"


def labels_path(root: Path, rubric: Rubric) -> Path:
    return root / LABELS_DIR / f"{rubric.name}.yaml"


def read_labels(path: Path) -> list[Label]:
    """Every label in a labels file; ProblemsError with file:line for each bad entry."""
    if not path.is_file():
        return []
    shown = relpath(path)
    root, problems = load_file(path, shown)
    if root is None:
        if problems:
            raise ProblemsError(problems)
        return []
    entries = root.get("labels") if root.is_map else None
    if entries is None or not entries.is_seq:
        raise ProblemsError(
            [*problems, root.mark.problem("a labels file needs `labels:` as a list")]
        )
    labels: list[Label] = []
    for entry in entries.children():
        label = _read_label(entry, problems)
        if label is not None:
            labels.append(label)
    if problems:
        raise ProblemsError(problems)
    return labels


def _read_label(entry: Node, problems: list[Problem]) -> Label | None:
    read = NodeReader(problems)
    if not entry.is_map:
        read.add(entry.mark, f"a label must be a mapping, not {type_name(entry)}")
        return None
    before = len(problems)
    read.unknown_keys(entry, LABEL_KEYS, "a label")

    def text(key: str) -> str:
        node = entry.get(key)
        if node is None or not node.is_scalar or not isinstance(node.value, str):
            read.add((node or entry).where, f"label needs `{key}:` as text")
            return ""
        return node.value

    sample, output, who = text("sample"), text("output"), text("who")
    when_node = entry.get("when")
    when = "" if when_node is None else str(when_node.value)
    if when_node is None:
        read.add(entry.mark, "label needs `when:`")
    label_node = entry.get("label")
    verdict = text("label")
    if verdict and read.choice(label_node, "label", ("pass", "fail"), None, "") is None:
        verdict = ""
    score = read.whole(
        entry.get("score"), "score", minimum=1, maximum=5, expected="a whole number from 1 to 5"
    )
    stated = entry.get("output_sha256")
    if stated is not None and output and stated.value != output_sha256(output):
        problems.append(
            stated.mark.problem(
                "output_sha256 does not match the output text: the output was edited",
                "labels are evidence; relabel the sample instead of editing its text",
            )
        )
    vars_node = entry.get("vars")
    variables = {}
    if vars_node is not None:
        plain = vars_node.plain()
        if not isinstance(plain, dict):
            problems.append(vars_node.mark.problem("vars must be a mapping"))
        else:
            variables = {str(k): str(v) for k, v in plain.items()}
    if len(problems) > before:
        return None
    return Label(sample, output, verdict == "pass", who, when, score, variables)


def write_labels(path: Path, rubric: Rubric, labels: Sequence[Label]) -> None:
    """Rewrite the file atomically with every label (called after each new label)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = yaml.dump(
        {"rubric": rubric.name, "labels": [label.to_yaml() for label in labels]},
        Dumper=_LiteralDumper,
        sort_keys=False,
        allow_unicode=True,
        width=100,
    )
    partial = path.with_name(path.name + ".partial")
    header = _HEADER.format(name=rubric.name, rubric=relpath(rubric.path))
    partial.write_text(header + body, encoding="utf-8")
    os.replace(partial, path)


class _LiteralDumper(yaml.SafeDumper):
    """Multi-line outputs as `|` blocks, so the labels file reads like the outputs did."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    literal = "\n" in value and not value.endswith((" ", "\t")) and "\r" not in value
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if literal else None)


_LiteralDumper.add_representer(str, _str)


@dataclass(frozen=True)
class LabelItem:
    """One stored output to label: the output and its case vars, nothing a judge said."""

    ref: str
    suite: str
    case_id: str
    index: int
    output: str
    vars: Mapping[str, str] = field(default_factory=dict)


def rubric_card(rubric: Rubric) -> str:
    """The rubric as a person reads it while labelling (plain text)."""
    lines = [f"{rubric.name}: {rubric.description}", "", "Scores:"]
    for score in range(1, 6):
        anchor = rubric.anchors.get(score, f"between {score - 1} and {score + 1}")
        lines.append(f"  {score}  {anchor}")
    lines += ["", f"Pass: {rubric.pass_rule}"]
    if rubric.checks:
        lines += ["", "Also consider:"]
        lines += [f"  - {question}" for question in rubric.checks.values()]
    return "\n".join(lines)
