"""Build throwaway suites on disk for tests (real files, real loader)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from redline.suite.cases import Case, load_suite
from redline.vocabulary.completion import Completion, FinishReason

SUITE_YAML = """\
name: demo
prompt:
  system: system.txt
  user: "{{document}}"
model: local
samples: 3
tier: contract
"""

CASE_HEAD = """\
provenance: {ticket: T-1, reported: 2026-02-03, note: test}
vars:
  document: hello
"""


def write_suite(
    root: Path,
    cases: dict[str, str],
    suite_yaml: str = SUITE_YAML,
    files: dict[str, str | bytes] | None = None,
    system: str = "Extract it.",
) -> Path:
    """A suite folder under `root` with dedented case texts; returns the folder."""
    folder = root / "demo"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "suite.yaml").write_text(textwrap.dedent(suite_yaml), encoding="utf-8")
    (folder / "system.txt").write_text(system, encoding="utf-8")
    for name, text in cases.items():
        (folder / name).write_text(textwrap.dedent(text), encoding="utf-8")
    for name, content in (files or {}).items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return folder


def case_with(
    root: Path,
    asserts: str,
    *,
    head: str = CASE_HEAD,
    files: dict[str, str | bytes] | None = None,
) -> Case:
    """Load a one-case suite whose `assert:` block is `asserts` (a YAML list)."""
    text = head + "assert:\n" + textwrap.indent(textwrap.dedent(asserts), "  ")
    suite = load_suite(write_suite(root, {"c.yaml": text}, files=files))
    return suite.cases[0]


def done(
    text: str,
    *,
    output_tokens: int | None = None,
    latency_ms: float | None = None,
    cost: float | None = None,
    finish_reason: FinishReason = FinishReason.STOP,
) -> Completion:
    """A completion as a provider would return it."""
    return Completion(
        text=text,
        finish_reason=finish_reason,
        model="local:test",
        output_tokens=output_tokens,
        latency_ms=latency_ms,
        cost=cost,
    )


def slop_rubric(
    model: str = "fake", prompt: str = "MODE:echo {{output}}", *, checks: bool = True
) -> str:
    """The rubric the judge tests share, as YAML text: filler scored 1–5, a pass at most 2.

    `model` is the judge's alias and `prompt` its template (the loopback server reads a
    `MODE:` in it); `checks` adds the yes/no check `is_concise` to every answer.
    """
    lines = [
        "name: slop",
        "description: Filler, generic transitions and marketing language.",
        "anchors:",
        "  1: Straight to the point.",
        "  3: One or two generic transitions.",
        "  5: Full of filler.",
        "pass:",
        "  max_score: 2",
    ]
    if checks:
        lines += ["checks:", "  is_concise: Is it concise?"]
    lines += [f"model: {model}", "min_kappa: 0.6", f"prompt: {json.dumps(prompt)}"]
    return "\n".join(lines) + "\n"
