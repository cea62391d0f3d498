"""Case files are parsed by libyaml when it is installed, with the pure-Python loader's marks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from redline.documents import yamlsource
from redline.documents.yamlsource import Node, load_text

ROOT = Path(__file__).resolve().parents[1]
REPO_YAML = sorted((ROOT / "cases").rglob("*.yaml"))


def _shape(node: Node | None) -> Any:
    """Every value with where it was written, recursively."""
    if node is None:
        return None
    here = (node.kind, node.mark, node.key_mark)
    if node.is_map:
        return (here, [(k, _shape(v)) for k, v in node.items()])
    if node.is_seq:
        return (here, [_shape(child) for child in node.children()])
    return (here, node.value)


def _pure_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlsource, "_CLoader", None)


def test_libyaml_is_what_parses_valid_files() -> None:
    assert yaml.__with_libyaml__
    assert yamlsource._CLoader is not None
    assert issubclass(yamlsource._CLoader, yaml.CSafeLoader)


#: Every implicit type PyYAML's safe loader resolves, and the near misses that stay text.
SCALARS = [
    *("yes", "no", "on", "off", "y", "n", "True", "TRUE", "Yes", "NO", "false"),
    *("017", "0o17", "0x1f", "-0x1f", "0b101", "1_000", "1:30", "190:20:30", "12:30:00"),
    *(".inf", "-.Inf", "1e3", "1.0e+3", "1.5e3", "6.8523015e+5", "685.230_15e+03", ".5", "3."),
    *("+12", "-0", "00", "09", "1,000", "0.", "0o", "~", "null", "Null", "NULL", ""),
    *("2026-01-02", "2026-01-02T10:00:00Z", "2026-01-02 10:00:00", "2001-12-14t21:59:43.10-05:00"),
    *("'1'", '"yes"', "!!str 12", "!!int '12'", "!!binary aGVsbG8=", "plain text", "=x", "<<x"),
]


@pytest.mark.parametrize("scalar", SCALARS)
def test_scalars_mean_what_pyyaml_says_they_mean(scalar: str) -> None:
    text = f"a: {scalar}\nb: [{scalar}]\n"
    expected = yaml.load(text, Loader=yaml.SafeLoader)
    node, problems = load_text(text, "case.yaml")

    assert problems == []
    assert node is not None
    got = node.plain()
    assert got == expected
    assert [type(v) for v in (got["a"], *got["b"])] == [
        type(v) for v in (expected["a"], *expected["b"])
    ]


def test_merge_keys_and_aliases_are_read_as_pyyaml_reads_them() -> None:
    text = "base: &b {x: 1, y: [1, 2]}\ncase:\n  <<: *b\n  y: 3\n  z: *b\n"
    node, problems = load_text(text, "case.yaml")

    assert problems == []
    assert node is not None
    assert node.plain() == yaml.load(text, Loader=yaml.SafeLoader)


@pytest.mark.parametrize("path", REPO_YAML, ids=lambda p: str(p.relative_to(ROOT)))
def test_both_loaders_give_the_same_values_and_positions(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = path.read_text(encoding="utf-8")
    fast = load_text(text, "case.yaml")
    _pure_python(monkeypatch)
    slow = load_text(text, "case.yaml")

    assert (_shape(fast[0]), fast[1]) == (_shape(slow[0]), slow[1])


SAMPLES = [
    "id: a\nvars:\n  doc: 你好世界 é\n  list: [a, {b: 1}]\nassert:\n  - type: contains\n"
    "    value: x\n",
    "\ufeffid: a\nid: b\n",
    "id: a\n1: x\n",
    "",
]
BROKEN = [
    ("a: [1, 2\nb: 3\n", 2, 2),
    ("id: x\n  vars: 2\n", 2, 7),
    ('k: "bad \\q escape"\n', 1, 10),
    ("\tid: 1\n", 1, 1),
    ("n: 你好\nbad: 你好: x\n", 2, 8),
]


@pytest.mark.parametrize("text", SAMPLES)
def test_problems_in_valid_yaml_are_the_same_with_both_loaders(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = load_text(text, "case.yaml")
    _pure_python(monkeypatch)
    slow = load_text(text, "case.yaml")

    assert (_shape(fast[0]), fast[1]) == (_shape(slow[0]), slow[1])


@pytest.mark.parametrize(("text", "line", "column"), BROKEN)
def test_invalid_yaml_is_reported_at_the_same_place_and_in_the_same_words(
    text: str, line: int, column: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    node, problems = load_text(text, "case.yaml")
    _pure_python(monkeypatch)
    _, slow = load_text(text, "case.yaml")

    assert node is None
    assert problems == slow
    assert [(p.line, p.column) for p in problems] == [(line, column)]
    assert problems[0].message.startswith("not valid YAML: ")


def test_an_alias_inside_the_value_it_names_is_a_problem_not_a_crash() -> None:
    node, problems = load_text("id: a\nvars: &v\n  self: *v\n", "case.yaml")

    assert node is None
    assert [(p.path, p.line, p.column) for p in problems] == [("case.yaml", 3, 3)]
    assert "refers to a value that contains it" in problems[0].message


def test_aliases_that_expand_past_the_limit_are_one_problem() -> None:
    """A file of nested aliases ("billion laughs") is refused, not expanded into memory."""
    lines = ['l0: &l0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for n in range(1, 7):
        lines.append(f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 10)}]")
    node, problems = load_text("\n".join(lines) + "\n", "bomb.yaml")

    assert node is None
    assert len(problems) == 1
    assert f"more than {yamlsource.MAX_VALUES:,} values" in problems[0].message
