"""`redline label RUN_ID --rubric R`: label a run's outputs blind, for calibrating a judge.

The labelling app shows each stored output with the rubric and never the judge's
answer; labels go to `labels/<rubric>.yaml` as they are made. Textual is imported
only when the command runs.
"""

from __future__ import annotations

import argparse
import getpass
from pathlib import Path

from redline.apps import app
from redline.cli import ExitCode
from redline.cli.terminal import require_terminal
from redline.config import load_config
from redline.errors import StoreMissing, UsageError, relpath
from redline.judge.labels import (
    Label,
    LabelItem,
    labels_path,
    read_labels,
    rubric_card,
    write_labels,
)
from redline.judge.rubric import load_rubric
from redline.running.judging import label_items
from redline.running.options import RunOptions
from redline.running.store import RunStore, now_iso
from redline.suite.cases import Case, load_suites


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "label",
        description="Show each output of RUN_ID from the cases that use the rubric, with the "
        "rubric and never the judge's score; record pass/fail (and an optional 1-5) into "
        "labels/<rubric>.yaml. Already labelled outputs are skipped.",
    )
    parser.add_argument("run_id", metavar="RUN_ID", help="run id or unique prefix")
    parser.add_argument("--rubric", type=Path, required=True, metavar="R", help="rubric file")
    parser.add_argument("--who", help="who labels (default: the login name)")
    parser.add_argument("--store", type=Path, help="store file (default: from the config)")
    parser.set_defaults(handler=_label)


def _login_name() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        raise UsageError("cannot tell who is labelling: give --who NAME") from None


def _label(args: argparse.Namespace) -> int:
    config = load_config()
    if not args.rubric.is_file():
        raise UsageError(f"rubric file {args.rubric} does not exist")
    rubric = load_rubric(args.rubric)
    store_path: Path = args.store or config.store_path
    if not store_path.is_file():
        raise StoreMissing(store_path)
    who = args.who or _login_name()
    path = labels_path(config.root, rubric)
    labels = read_labels(path)
    with RunStore.open(store_path) as store:
        run = store.run(args.run_id)
        suite_dirs = RunOptions.from_stored(run.args).suite_paths(config)
        suites = load_suites(suite_dirs, config)
        cases: dict[tuple[str, str], Case] = {(c.suite, c.id): c for s in suites for c in s.cases}
        items = label_items(store.samples(run.id), cases, rubric, labels)
    if not items:
        print(
            f"nothing to label: run {run.id} has no unlabelled output of a case that uses "
            f"rubric {rubric.name} and passed its other assertions"
        )
        return ExitCode.GREEN
    used = rubric.variables()

    def record(item: LabelItem, passed: bool, score: int | None) -> None:
        labels.append(
            Label(
                sample=item.ref,
                output=item.output,
                passed=passed,
                who=who,
                when=now_iso(),
                score=score,
                vars={k: v for k, v in item.vars.items() if k in used},
            )
        )
        write_labels(path, rubric, labels)

    require_terminal(
        "label",
        f"there are {len(items)} output(s) to label; open a terminal and run this command again.",
    )
    made: int = app("label")(items, rubric_card(rubric), record)
    print(
        f"{made} label(s) added; {len(labels)} in {relpath(path)}. "
        f"Next: redline calibrate --rubric {relpath(rubric.path)}"
    )
    return ExitCode.GREEN
