"""The judge inside a run: which judges are trusted, and judging samples as they finish.

A runner started with `--judge` opens one `JudgeSession` for the run (providers
per judge model, trust per rubric) and passes every evaluated sample through
`judge_pending`. Samples whose other assertions did not all pass are never
sent to a judge (docs/rules.md: Layer 1 before Layer 2, fail fast). A judge result can change a
sample's verdict
only when the session blocks (`--judge-blocks`) and that judge is trusted;
otherwise it is recorded as advisory and the verdict stays what Layer 1 said.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from redline.assertions import SampleEvaluation
from redline.assertions.judge import judge_assertions
from redline.config import Config, ModelRef
from redline.errors import relpath
from redline.judge.answer import Judgement, JudgeStatus
from redline.judge.calibration import Trust, judge_trust
from redline.judge.call import judge_output, judge_provider
from redline.judge.labels import Label, LabelItem, output_sha256, sample_ref
from redline.judge.rubric import Rubric
from redline.providers.base import Provider
from redline.vocabulary.completion import Completion
from redline.vocabulary.records import SampleRecord
from redline.vocabulary.verdicts import AssertionResult, AssertionStatus, Verdict, decide_verdict

if TYPE_CHECKING:
    from redline.suite.cases import Case, Suite

_REASONING_LIMIT = 600


@dataclass
class JudgeSession:
    """Judges of one run: providers by judge model alias, trust by rubric file."""

    config: Config
    blocks: bool
    providers: dict[str, Provider]
    models: dict[str, ModelRef]
    trust: dict[Path, Trust]
    rubrics: dict[Path, Rubric]
    _gates: dict[str, asyncio.Semaphore] = field(default_factory=dict)
    _owned: bool = True

    @classmethod
    def open(
        cls,
        suites: Sequence[Suite],
        config: Config,
        *,
        blocks: bool = False,
        env: Mapping[str, str] | None = None,
        providers: Mapping[str, Provider] | None = None,
    ) -> JudgeSession:
        """Trust and providers for every rubric the suites use; ConfigError before any call.

        `providers` (alias → provider) replaces building them from the config.
        """
        rubrics: dict[Path, Rubric] = {}
        for suite in suites:
            for case in suite.cases:
                for judge in judge_assertions(case.assertions):
                    rubrics.setdefault(judge.rubric.path, judge.rubric)
        models = {r.model: config.model(r.model) for r in rubrics.values()}
        built: dict[str, Provider] = dict(providers or {})
        owned = providers is None
        for alias, model in models.items():
            if alias not in built:
                built[alias] = judge_provider(model, config, os.environ if env is None else env)
        trust = {path: judge_trust(r, models[r.model]) for path, r in rubrics.items()}
        return cls(config, blocks, built, models, trust, rubrics, _owned=owned)

    async def aclose(self) -> None:
        if self._owned:
            for provider in self.providers.values():
                await provider.aclose()

    def blocking(self, rubric: Rubric) -> bool:
        """Whether this rubric's results may change verdicts in this run."""
        trust = self.trust.get(rubric.path)
        return self.blocks and trust is not None and trust.trusted

    def header(self) -> list[str]:
        """One line per judge for the run header: trusted or advisory, and why."""
        lines = []
        for path, rubric in sorted(self.rubrics.items()):
            trust = self.trust[path]
            effect = "blocks" if self.blocking(rubric) else "comments only"
            lines.append(
                f"judge {rubric.name} ({relpath(path)}, model {self.models[rubric.model].id}): "
                f"{trust.describe()}; {effect}"
            )
        return lines

    def record(self) -> dict[str, dict[str, object]]:
        """The judges' status, for the run record's args."""
        return {
            relpath(path): {
                "rubric": rubric.name,
                "model": self.models[rubric.model].id,
                "trusted": self.trust[path].trusted,
                "reason": self.trust[path].reason,
                "blocks": self.blocking(rubric),
            }
            for path, rubric in sorted(self.rubrics.items())
        }

    def _gate(self, alias: str) -> asyncio.Semaphore | None:
        limit = self.providers[alias].max_parallel
        if limit is None:
            return None
        if alias not in self._gates:
            self._gates[alias] = asyncio.Semaphore(limit)
        return self._gates[alias]

    async def judge(
        self, rubric: Rubric, output: str, variables: Mapping[str, str], seed: int | None
    ) -> Judgement:
        alias = rubric.model
        gate = self._gate(alias)
        async with gate if gate is not None else contextlib.nullcontext():
            return await judge_output(
                self.providers[alias], rubric, self.models[alias], output, variables, seed
            )


async def judge_pending(
    session: JudgeSession,
    case: Case,
    completion: Completion,
    evaluation: SampleEvaluation,
    seed: int | None = None,
) -> SampleEvaluation:
    """Fill in the judge results of one evaluated sample and decide its verdict again.

    Judges run one after another, only while the sample still stands: a sample
    whose verdict is not `ok` (Layer 1 or a cheaper Layer 2 check failed, it was
    truncated, refused, or never arrived) is not sent to any judge.
    """
    judges = {j.index: j for j in judge_assertions(case.assertions)}
    if not judges:
        return evaluation
    results = list(evaluation.results)
    advisory: set[int] = set()
    transport: str | None = None
    for position, result in enumerate(results):
        judge = judges.get(result.index)
        if judge is None or result.type != "judge":
            continue
        standing = _verdict(case, completion, evaluation, results, advisory, transport)
        if standing is not Verdict.OK:
            if result.status is AssertionStatus.SKIPPED and "earlier layer" not in result.reason:
                results[position] = dataclasses.replace(
                    result, reason=f"judge not run: the sample is already {standing}"
                )
            continue
        judgement = await session.judge(judge.rubric, completion.text, case.vars, seed)
        blocking = session.blocking(judge.rubric)
        results[position] = judgement_result(result, judge.rubric, judgement, session, blocking)
        if not blocking:
            advisory.add(result.index)
        elif judgement.status is JudgeStatus.ERROR:
            transport = judgement.problem
    verdict = _verdict(case, completion, evaluation, results, advisory, transport)
    return SampleEvaluation(verdict, tuple(results), evaluation.refusal_detected)


def _verdict(
    case: Case,
    completion: Completion,
    evaluation: SampleEvaluation,
    results: Sequence[AssertionResult],
    advisory: set[int],
    judge_transport: str | None,
) -> Verdict:
    """The sample's verdict counting only results allowed to decide it."""
    deciding = [r for r in results if r.index not in advisory | evaluation.undecided]
    return decide_verdict(
        finish_reason=completion.finish_reason,
        transport_error=completion.error or judge_transport,
        results=deciding,
        refusal_detected=evaluation.refusal_detected,
        expect_refusal=case.expect_refusal,
        settled=evaluation.settled,
    )


#: Reasons of results that could not decide the verdict start with this.
ADVISORY_PREFIX = "advisory"


def judgement_result(
    base: AssertionResult,
    rubric: Rubric,
    judgement: Judgement,
    session: JudgeSession,
    blocking: bool,
) -> AssertionResult:
    """The stored assertion result for one judgement.

    `malformed` is a structural failure (never a pass); a failed judge call is
    `unavailable`. Results of a judge that may not block start with "advisory"
    and are left out when the verdict is decided.
    """
    trust = session.trust.get(rubric.path)
    if judgement.status is JudgeStatus.ERROR:
        status, structural = AssertionStatus.UNAVAILABLE, False
        text = judgement.problem
    elif judgement.status is JudgeStatus.MALFORMED:
        status, structural = AssertionStatus.FAILED, True
        text = f"judge {rubric.name} answer malformed: {judgement.problem}; raw judge text: " + (
            repr(judgement.raw)
        )
    else:
        status = AssertionStatus.PASSED if judgement.passed else AssertionStatus.FAILED
        structural = False
        checks = ", ".join(f"{k}={'yes' if v else 'no'}" for k, v in judgement.checks.items())
        reasoning = judgement.reasoning
        if len(reasoning) > _REASONING_LIMIT:
            reasoning = reasoning[: _REASONING_LIMIT - 1] + "…"
        text = (
            f"judge {rubric.name} score {judgement.score} (pass: {rubric.pass_rule})"
            f"{'; ' + checks if checks else ''}; reasoning: {reasoning}"
        )
    if not blocking:
        why = (
            trust.reason if trust is not None and not trust.trusted else "--judge-blocks not given"
        )
        text = f"{ADVISORY_PREFIX} ({why}): {text}"
    return dataclasses.replace(
        base,
        status=status,
        reason=text,
        score=None if judgement.score is None else float(judgement.score),
        threshold=float(rubric.bound),
        structural=structural,
    )


def label_items(
    samples: Sequence[SampleRecord],
    cases: Mapping[tuple[str, str], Case],
    rubric: Rubric,
    done: Sequence[Label] = (),
) -> list[LabelItem]:
    """Outputs of the cases that use `rubric`, that a judge would see, not labelled yet.

    A judge sees only samples that passed everything else, so only those are worth
    a label: samples with a transport error, or a failed assertion other than a
    judge, are left out. Judge results are dropped here, before anything is shown.
    """
    using = {
        key
        for key, case in cases.items()
        if any(j.rubric.path == rubric.path for j in judge_assertions(case.assertions))
    }
    labelled = {label.output_sha256 for label in done}
    items: list[LabelItem] = []
    for sample in samples:
        key = (sample.suite, sample.case_id)
        if key not in using or sample.error is not None or not sample.output.strip():
            continue
        if any(a.failed and a.type != "judge" for a in sample.assertions):
            continue
        if output_sha256(sample.output) in labelled:
            continue
        labelled.add(output_sha256(sample.output))
        items.append(
            LabelItem(
                ref=sample_ref(sample.run_id, sample.suite, sample.case_id, sample.index),
                suite=sample.suite,
                case_id=sample.case_id,
                index=sample.index,
                output=sample.output,
                vars=dict(cases[key].vars),
            )
        )
    return items
