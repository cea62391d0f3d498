"""`redline report [RUN_ID] --junit FILE --html FILE --markdown`: reports for CI and people.

Reporting never fails the build: the exit code is 0 once the files are written (the
run's own exit code is what gates a merge).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from redline.cli.show import require_store
from redline.config import load_config
from redline.errors import UsageError
from redline.report import build_run_report
from redline.report.html import html_report
from redline.report.junit import junit_xml
from redline.report.markdown import markdown_summary
from redline.running.store import RunStore
from redline.vocabulary.records import RunKind


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "report",
        description="Write a stored run as JUnit XML (a content failure is a <failure>, an "
        "infrastructure problem an <error>), one self-contained HTML file, and/or a markdown "
        "summary on stdout. Always exit 0 once written: the run's own exit code gates CI.",
    )
    parser.add_argument(
        "run_id",
        metavar="RUN_ID",
        nargs="?",
        default=None,
        help="the run (default: the latest scheduled run)",
    )
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML here")
    parser.add_argument(
        "--html", type=Path, metavar="FILE", help="write one self-contained HTML file"
    )
    parser.add_argument(
        "--markdown",
        action="store_true",
        help="print a markdown summary (e.g. >> $GITHUB_STEP_SUMMARY)",
    )
    parser.add_argument(
        "--baselines",
        type=Path,
        default=None,
        metavar="DIR",
        help="baselines folder for golden diffs (default baselines/)",
    )
    parser.set_defaults(handler=_report)


def _report(args: argparse.Namespace) -> int:
    if args.junit is None and args.html is None and not args.markdown:
        raise UsageError("choose at least one of --junit FILE, --html FILE, --markdown")
    config = load_config()
    baselines = args.baselines if args.baselines is not None else config.root / "baselines"
    with RunStore.open(require_store(config.store_path)) as store:
        run_id = args.run_id
        if run_id is None:
            latest = store.latest_run(kind=RunKind.RUN)
            if latest is None:
                raise UsageError("the store holds no run yet; run `redline run` first")
            run_id = latest.id
        report = build_run_report(store, run_id, baselines)
    for path, text in ((args.junit, junit_xml), (args.html, html_report)):
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text(report), encoding="utf-8")
            print(f"wrote {path}", file=sys.stderr)
    if args.markdown:
        sys.stdout.write(markdown_summary(report))
    return 0
