"""The `judge` assertion type: a rubric scored 1–5 by a pinned judge model (Layer 2).

`- type: judge` with `rubric: rubrics/slop.yaml` (relative to the case file).
Evaluation here is synchronous and calls no model, so it always answers
`skipped`; a run started with `--judge` fills the result in afterwards through
`redline.judge.judge_pending`, only for samples that passed everything else.
A judge result is therefore never `passed` without a judge having said so.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from redline.assertions.base import COST_JUDGE, LAYER_2, Assertion, Check, Sample, Spec, register
from redline.errors import ProblemsError, relpath
from redline.judge.rubric import Rubric, cached_rubric
from redline.vocabulary.verdicts import AssertionStatus

NOT_ENABLED = "judge not run: judged only in runs started with `redline run --judge`"


@register("judge")
class Judge(Assertion):
    """The output scores within the rubric's pass rule, by the rubric's judge model."""

    layer = LAYER_2
    cost = COST_JUDGE

    def __init__(self, spec: Spec, rubric: Rubric) -> None:
        super().__init__(spec)
        self.rubric = rubric
        self.threshold = float(rubric.bound)

    @classmethod
    def parse(cls, spec: Spec) -> Judge | None:
        path = spec.source("rubric")
        if path is None:
            return None
        try:
            rubric = cached_rubric(path)
        except ProblemsError as exc:
            spec.problems.extend(exc.problems)
            spec.problem(
                f"rubric {relpath(path)} has problems (listed with its lines)", "", "rubric"
            )
            return None
        spec.files.append(path)
        spec.files.extend(rubric.files)
        missing = [name for name in rubric.variables() if name not in spec.case_vars]
        for name in missing:
            spec.problem(
                f"rubric {rubric.name!r} uses {{{{{name}}}}} but the case has no var {name!r}",
                "add it under vars: or remove it from the rubric prompt",
                "rubric",
            )
        if spec.config is not None and rubric.model not in spec.config.models:
            known = ", ".join(sorted(spec.config.models)) or "none"
            spec.problem(
                f"rubric {rubric.name!r} names judge model {rubric.model!r}, which is not "
                f"pinned (known aliases: {known})",
                f"add it under [tool.redline.models] in {spec.config.source.name}",
                "rubric",
            )
        if missing or spec.problems:
            return None
        return cls(spec, rubric)

    @property
    def rubric_path(self) -> Path:
        return self.rubric.path

    def describe(self) -> str:
        return f"judge {self.rubric.name} ({self.rubric.pass_rule})"

    def check(self, sample: Sample) -> Check:
        return Check(AssertionStatus.SKIPPED, NOT_ENABLED)


def judge_assertions(assertions: Iterable[Assertion]) -> Iterator[Judge]:
    """The `judge` assertions among a case's assertions."""
    for assertion in assertions:
        if isinstance(assertion, Judge):
            yield assertion
