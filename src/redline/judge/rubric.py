"""A rubric: what a judge scores 1–5, its anchors, the pass rule and the bar for trusting it.

Rubric files are YAML beside the suite that uses them. Every problem is reported
with file:line:column, all at once, before any model is called. The pass bar
(`max_score` or `min_score`) and the calibration bar (`min_kappa`) are written in
the file on purpose: there is no built-in default that hides the choice.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from redline.casemodel import Compare
from redline.documents.reading import NodeReader
from redline.documents.yamlsource import (
    FILE_REF,
    Node,
    did_you_mean,
    load_file,
    read_verbatim,
    type_name,
)
from redline.errors import Problem, ProblemsError, relpath
from redline.text.templates import placeholders

RUBRIC_KEYS = frozenset(
    {"name", "description", "anchors", "pass", "checks", "model", "min_kappa", "prompt"}
    | {"max_tokens", "temperature"}
)
PASS_KEYS = frozenset({"max_score", "min_score"})
#: A rubric's bars, and which way each one lowers: a higher `max_score` passes more scores,
#: a lower `min_score` passes more, a lower `min_kappa` trusts a judge that agrees less.
BAR_KEYS: Mapping[str, Compare] = {
    "max_score": Compare.CEILING,
    "min_score": Compare.FLOOR,
    "min_kappa": Compare.FLOOR,
}
#: The placeholder the judge prompt must contain: the output being judged.
OUTPUT_PLACEHOLDER = "output"
#: Field names of every judge answer; a rubric's own checks may not reuse them.
ANSWER_FIELDS = frozenset({"score", "reasoning"})
DEFAULT_MAX_TOKENS = 400
DEFAULT_TEMPERATURE = 0.0

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_CHECK = re.compile(r"^[a-z][a-z0-9_]*$")
_SCORE = "a whole number from 1 to 5"
#: Anchors are written `1: ...`; every key is still checked where it is read.
_NUMBER_KEY = re.compile(r"^key \d+ is not a string$")


@dataclass(frozen=True)
class Rubric:
    """One parsed rubric file; `prompt` is the judge's user-message template."""

    path: Path
    name: str
    description: str
    anchors: Mapping[int, str]
    max_score: int | None
    min_score: int | None
    checks: Mapping[str, str]
    model: str
    min_kappa: float
    prompt: str
    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float = DEFAULT_TEMPERATURE
    #: Files the rubric reads besides itself (a `file://` prompt).
    files: tuple[Path, ...] = field(default=())

    def passes(self, score: int) -> bool:
        """The rubric's pass rule applied to one score."""
        if self.max_score is not None:
            return score <= self.max_score
        assert self.min_score is not None
        return score >= self.min_score

    @property
    def pass_rule(self) -> str:
        """`score ≤ 2` or `score ≥ 4`, for reasons and reports."""
        if self.max_score is not None:
            return f"score ≤ {self.max_score}"
        return f"score ≥ {self.min_score}"

    @property
    def bound(self) -> int:
        """The score the pass rule compares against."""
        value = self.max_score if self.max_score is not None else self.min_score
        assert value is not None
        return value

    def variables(self) -> list[str]:
        """Case vars the prompt template uses (besides the output)."""
        return [name for name in placeholders(self.prompt) if name != OUTPUT_PLACEHOLDER]

    def file_sha256(self) -> str:
        """SHA-256 of the rubric file's bytes (a `file://` prompt is hashed as the prompt)."""
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


def load_rubric(path: Path) -> Rubric:
    """Parse and validate a rubric file; ProblemsError listing every problem in it."""
    problems: list[Problem] = []
    rubric = _RubricReader(path, problems).read()
    if problems or rubric is None:
        raise ProblemsError(problems)
    return rubric


_CACHE: dict[tuple[str, int, int], Rubric | ProblemsError] = {}


def cached_rubric(path: Path) -> Rubric:
    """`load_rubric`, once per file version per process (many cases share one rubric)."""
    resolved = path.resolve()
    stat = resolved.stat()
    key = (str(resolved), stat.st_mtime_ns, stat.st_size)
    found = _CACHE.get(key)
    if found is None:
        try:
            found = load_rubric(resolved)
        except ProblemsError as exc:
            found = exc
        _CACHE[key] = found
    if isinstance(found, ProblemsError):
        raise ProblemsError(found.problems)
    return found


class _RubricReader(NodeReader):
    def __init__(self, path: Path, problems: list[Problem]) -> None:
        super().__init__(problems)
        self.path = path.resolve()
        self.shown = relpath(path)
        self.files: list[Path] = []

    def at(self, node: Node, message: str, hint: str = "") -> None:
        """A problem at `node` as a whole (its key when it has one)."""
        self.add(node.where, message, hint)

    def read(self) -> Rubric | None:
        root, more = load_file(self.path, self.shown)
        self.problems.extend(p for p in more if not _NUMBER_KEY.match(p.message))
        if root is None:
            if not more:
                self.problems.append(Problem(self.shown, 1, 1, "empty rubric file"))
            return None
        if not root.is_map:
            self.at(root, f"a rubric must be a mapping, not {type_name(root)}")
            return None
        before = len(self.problems)
        self.unknown_keys(root, RUBRIC_KEYS, "a rubric")
        name = self.text_of(root, "name")
        if name is not None and not _NAME.match(name):
            self.at(
                _child(root, "name"),
                f"name {name!r} must be lower-case letters, digits, '-' or '_'",
                "it names the labels file labels/<name>.yaml",
            )
            name = None
        description = self.text_of(root, "description")
        anchors = self.anchors(root)
        max_score, min_score = self.pass_rule(root)
        checks = self.checks(root)
        model = self.text_of(root, "model", hint="the judge model alias from [tool.redline.models]")
        min_kappa = self.bar(
            root, "min_kappa", "min_kappa: 0.6  # your bar; Landis–Koch is convention"
        )
        prompt = self.prompt(root)
        max_tokens = self.whole(root.get("max_tokens"), "max_tokens", DEFAULT_MAX_TOKENS, minimum=1)
        temperature = self.number(
            root.get("temperature"), "temperature", DEFAULT_TEMPERATURE, minimum=0.0, maximum=2.0
        )
        if len(self.problems) > before:
            return None
        assert name is not None and description is not None and anchors is not None
        assert checks is not None and model is not None and min_kappa is not None
        assert prompt is not None and max_tokens is not None and temperature is not None
        return Rubric(
            path=self.path,
            name=name,
            description=description,
            anchors=anchors,
            max_score=max_score,
            min_score=min_score,
            checks=checks,
            model=model,
            min_kappa=min_kappa,
            prompt=prompt,
            max_tokens=max_tokens,
            temperature=temperature,
            files=tuple(self.files),
        )

    def text_of(self, root: Node, key: str, hint: str = "") -> str | None:
        """A required non-empty string, stripped."""
        node = root.get(key)
        if node is None:
            self.at(root, f"missing `{key}:`", hint or f"add `{key}: ...`")
            return None
        value = self.text(node, key)
        return value.strip() if value is not None else None

    def bar(self, root: Node, key: str, example: str) -> float | None:
        """A calibration bar from 0 to 1: no default, the bar is the author's choice."""
        node = root.get(key)
        if node is None:
            self.at(root, f"missing `{key}:` (no default: the bar is your choice)", example)
            return None
        return self.number(node, key, minimum=0.0, maximum=1.0, example="0.6")

    def anchors(self, root: Node) -> dict[int, str] | None:
        node = root.get("anchors")
        hint = "anchors:\n  1: ...\n  3: ...\n  5: ...  (2 and 4 optional)"
        if node is None:
            self.at(root, "missing `anchors:` (what scores 1, 3 and 5 mean)", hint)
            return None
        if not node.is_map:
            self.at(node, f"`anchors` must be a mapping of score → text, not {type_name(node)}")
            return None
        anchors: dict[int, str] = {}
        ok = True
        for key, child in node.items():
            score = int(key) if key.strip().isdigit() else None
            if score is None or not 1 <= score <= 5:
                self.at(child, f"anchor {key!r} is not a score from 1 to 5", hint)
                ok = False
            elif not child.is_scalar or not isinstance(child.value, str) or not child.value.strip():
                self.at(child, f"anchor {score} must be a non-empty text")
                ok = False
            else:
                anchors[score] = " ".join(child.value.split())
        missing = [s for s in (1, 3, 5) if s not in anchors]
        if ok and missing:
            listed = ", ".join(str(s) for s in missing)
            self.at(node, f"anchors for scores 1, 3 and 5 are required; missing {listed}", hint)
            ok = False
        return dict(sorted(anchors.items())) if ok else None

    def pass_rule(self, root: Node) -> tuple[int | None, int | None]:
        node = root.get("pass")
        hint = "pass: {max_score: 2}  (slop-like) or pass: {min_score: 4}  (quality-like)"
        if node is None:
            self.at(root, "missing `pass:` (which scores pass)", hint)
            return None, None
        if not node.is_map:
            self.at(node, f"`pass` must be a mapping, not {type_name(node)}", hint)
            return None, None
        for key, child in node.items():
            if key not in PASS_KEYS:
                self.at(child, f"unknown pass rule {key!r}{did_you_mean(key, PASS_KEYS)}", hint)
        given = [k for k in ("max_score", "min_score") if node.get(k) is not None]
        if len(given) != 1:
            self.at(node, "`pass` needs exactly one of max_score or min_score", hint)
            return None, None
        rule = node.get(given[0])
        assert rule is not None
        child = rule
        value = self.whole(child, given[0], minimum=1, maximum=5, expected=_SCORE)
        if value is None:
            return None, None
        if (given[0] == "max_score" and value == 5) or (given[0] == "min_score" and value == 1):
            self.at(
                child, f"`{given[0]}: {value}` passes every score: the judge would measure nothing"
            )
            return None, None
        return (value, None) if given[0] == "max_score" else (None, value)

    def checks(self, root: Node) -> dict[str, str] | None:
        node = root.get("checks")
        if node is None:
            return {}
        if not node.is_map:
            self.at(node, f"`checks` must be a mapping of name → question, not {type_name(node)}")
            return None
        checks: dict[str, str] = {}
        ok = True
        for key, child in node.items():
            if not _CHECK.match(key) or key in ANSWER_FIELDS:
                self.at(
                    child,
                    f"check name {key!r} must be snake_case and not score/reasoning",
                    "e.g. is_concise: the text has no padding",
                )
                ok = False
            elif not child.is_scalar or not isinstance(child.value, str) or not child.value.strip():
                self.at(child, f"check {key!r} needs a yes/no question as text")
                ok = False
            else:
                checks[key] = " ".join(child.value.split())
        return checks if ok else None

    def prompt(self, root: Node) -> str | None:
        node = root.get("prompt")
        hint = 'prompt: |\n  Text to judge:\n  """\n  {{output}}\n  """'
        if node is None:
            self.at(root, "missing `prompt:` (the judge's message template)", hint)
            return None
        if not node.is_scalar or not isinstance(node.value, str) or not node.value.strip():
            self.at(node, f"`prompt` must be a non-empty string, not {type_name(node)}", hint)
            return None
        text: str = node.value
        if text.startswith(FILE_REF):
            path = self.path.parent / text[len(FILE_REF) :]
            if not path.is_file():
                self.at(node, f"file {relpath(path)} does not exist", "relative to the rubric")
                return None
            self.files.append(path.resolve())
            text = read_verbatim(path)
        if OUTPUT_PLACEHOLDER not in placeholders(text):
            self.at(node, "the prompt never shows the output: it needs {{output}}", hint)
            return None
        return text


def _child(root: Node, key: str) -> Node:
    node = root.get(key)
    return node if node is not None else root
