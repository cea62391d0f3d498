"""`redline calibrate --rubric R`: measure a judge against people's labels (Cohen's kappa).

`redline calibrate --semantic` instead prints the embeddings backend's mentions calibration
on the shipped pairs: per (concept language, reply language) pair its threshold, accuracy
and accuracy per kind of pair; then accuracy per reply language and per kind.

Runs the rubric's judge on every labelled output, prints agreement (observed,
chance, kappa, confusion matrix, n) and writes `<rubric>.calibration.json` with
the hashes that make it go stale. Exit 0 when the judge is now trusted, 1 when
it stays advisory, 3 when judge calls failed (nothing written).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.text import Text

from redline.cli import ExitCode
from redline.cli.output import make_console, make_table
from redline.config import DEFAULT_CONCURRENCY, Config, ModelRef, load_config
from redline.errors import UsageError, relpath
from redline.judge.agreement import FAIL, LABELS, PASS
from redline.judge.answer import JudgeStatus
from redline.judge.calibration import (
    MIN_LABELS,
    Calibration,
    CalibrationResult,
    calibrate,
    calibration_path,
    judge_trust,
    write_calibration,
)
from redline.judge.call import judge_provider
from redline.judge.labels import Label, labels_path, read_labels
from redline.judge.rubric import Rubric, load_rubric
from redline.semantic.calibration import compute_calibration, shipped_set
from redline.semantic.embeddings import BackendUnavailable, load_embeddings
from redline.semantic.settings import semantic_settings


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "calibrate",
        description="Run the rubric's judge on every labelled output, compute Cohen's kappa "
        "against the labels and write <rubric>.calibration.json beside the rubric. "
        "Exit 0 trusted, 1 advisory (below min_kappa, too few or one-sided labels), "
        "3 judge calls failed.",
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--rubric", type=Path, metavar="R", help="rubric file")
    which.add_argument(
        "--semantic",
        action="store_true",
        help="print the embeddings backend's mentions calibration (per language pair and kind)",
    )
    parser.add_argument("--labels", type=Path, help="labels file (default: labels/<rubric>.yaml)")
    parser.add_argument(
        "--concurrency",
        type=int,
        metavar="N",
        help=f"parallel judge calls (default: the config's concurrency, {DEFAULT_CONCURRENCY})",
    )
    parser.set_defaults(handler=_calibrate)


def _calibrate(args: argparse.Namespace) -> int:
    config = load_config()
    if args.semantic:
        return _semantic(config)
    if not args.rubric.is_file():
        raise UsageError(f"rubric file {args.rubric} does not exist")
    rubric = load_rubric(args.rubric)
    model = config.model(rubric.model)
    path: Path = args.labels or labels_path(config.root, rubric)
    labels = read_labels(path)
    if not labels:
        raise UsageError(
            f"no labels in {relpath(path)}: label outputs first with "
            f"`redline label RUN_ID --rubric {relpath(rubric.path)}`"
        )
    result = _measure(rubric, labels, model, config, args.concurrency or config.concurrency)
    calibration = result.calibration
    console = make_console()
    if calibration.errors:
        failed = [j.problem for j in result.judgements if j.status is JudgeStatus.ERROR]
        console.print(
            Text(
                f"{calibration.errors} of {calibration.n} judge call(s) failed; nothing written "
                f"(first: {failed[0] if failed else 'unknown'})",
                style="yellow",
            )
        )
        return ExitCode.INCONCLUSIVE
    target = calibration_path(rubric.path)
    write_calibration(target, calibration)
    trust = judge_trust(rubric, model)
    _print_calibration(console, rubric, model, calibration, labels=path, written=target)
    console.print(
        Text(f"judge {trust.describe()}", style="bold green" if trust.trusted else "bold yellow")
    )
    return ExitCode.GREEN if trust.trusted else ExitCode.RED


def _measure(
    rubric: Rubric, labels: Sequence[Label], model: ModelRef, config: Config, concurrency: int
) -> CalibrationResult:
    """The judge's answers on every labelled output, its provider closed afterwards."""
    provider = judge_provider(model, config)

    async def measure() -> CalibrationResult:
        try:
            return await calibrate(rubric, labels, provider, model, concurrency=concurrency)
        finally:
            await provider.aclose()

    return asyncio.run(measure())


def _print_calibration(
    console: Console,
    rubric: Rubric,
    model: ModelRef,
    calibration: Calibration,
    *,
    labels: Path,
    written: Path,
) -> None:
    """The labels-vs-judge table and the agreement figures behind the judge's trust."""
    agreement = calibration.agreement
    table = make_table(
        ("label \\ judge", *LABELS),
        title=f"labels (rows) vs judge {model.id} (columns), n {agreement.n}",
        right=LABELS,
    )
    for label in LABELS:
        table.add_row(label, *(str(agreement.count(label, judged)) for judged in LABELS))
    console.print(table)
    lines = [
        f"rubric {rubric.name} ({relpath(rubric.path)}), labels {relpath(labels)}",
        f"n {agreement.n} ({agreement.label_count(PASS)} pass, {agreement.label_count(FAIL)} "
        f"fail; at least {MIN_LABELS} needed)",
    ]
    if agreement.kappa is None:
        lines.append(agreement.undefined_reason or "kappa undefined")
    else:
        assert agreement.observed is not None and agreement.chance is not None
        lines.append(
            f"observed agreement {agreement.observed:.3f}, chance agreement "
            f"{agreement.chance:.3f}, Cohen's kappa {agreement.kappa:.3f} "
            f"(min_kappa {rubric.min_kappa:.2f})"
        )
    if calibration.malformed:
        lines.append(f"{calibration.malformed} malformed judge answer(s), counted as 'fail'")
    lines.append(f"written {relpath(written)}")
    for line in lines:
        console.print(Text(line))


def _semantic(config: Config) -> int:
    """Recompute the mentions calibration of the configured embeddings and print it."""
    settings = semantic_settings(config)
    try:
        embeddings = load_embeddings(settings)
        calibration = compute_calibration(embeddings, shipped_set())
    except BackendUnavailable as exc:
        raise UsageError(f"the embeddings cannot judge mentions here: {exc}") from None
    console = make_console()
    for line in calibration.report():
        console.print(Text(line))
    return ExitCode.GREEN
