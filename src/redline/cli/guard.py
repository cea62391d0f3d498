"""`redline guard`: refuse a prompt change and a loosened threshold in one commit, or in
one pull request."""

from __future__ import annotations

import argparse
from pathlib import Path

from redline.errors import UsageError
from redline.guard import (
    GuardReport,
    Kind,
    RangeReport,
    check_commit,
    check_range_as_one,
    check_staged,
    install_hook,
)

_TAGS = {
    Kind.PROMPT: "prompt",
    Kind.LOOSENING: "LOOSENED",
    Kind.REWRITE: "REVIEW",
    Kind.BROKEN: "BROKEN",
    Kind.TIGHTENING: "fine",
    Kind.NOTE: "note",
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "guard",
        description=(
            "Compares suite and case files (parsed, not as text) across a commit and names "
            "every loosened threshold and every prompt change. Exit 1 when one commit holds "
            "both, when a range (a pull request, merged as one) holds both across its "
            "commits, or when a file cannot be compared."
        ),
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--staged", action="store_true", help="the index against HEAD")
    which.add_argument("--commit", metavar="REV", help="one commit against its parent")
    which.add_argument(
        "--range",
        metavar="A..B",
        dest="range_",
        help="each commit of A..B on its own, and the range as one change (from the merge "
        "base of A and B: what a pull request merges)",
    )
    parser.add_argument(
        "--allow-rewrite",
        action="store_true",
        help="do not count a changed regex/python/equals assertion as a loosening",
    )
    parser.add_argument(
        "--quiet", "-q", action="store_true", help="print only commits that are refused"
    )
    parser.set_defaults(handler=_run)
    actions = parser.add_subparsers(dest="guard_action", metavar="ACTION")
    install = actions.add_parser(
        "install",
        help="write a git pre-commit hook that runs `redline guard --staged`",
        description="Write .git/hooks/pre-commit so every commit runs `redline guard "
        "--staged`; an existing hook is refused unless --force, which keeps it and runs "
        "it first.",
    )
    install.add_argument(
        "--force",
        action="store_true",
        help="keep an existing pre-commit hook as pre-commit.local and run it first",
    )
    install.set_defaults(handler=_install)


def _run(args: argparse.Namespace) -> int:
    root = Path.cwd()
    whole: RangeReport | None = None
    if args.staged:
        reports = [check_staged(root, allow_rewrite=args.allow_rewrite)]
    elif args.commit:
        reports = [check_commit(root, args.commit, allow_rewrite=args.allow_rewrite)]
    elif args.range_:
        whole = check_range_as_one(root, args.range_, allow_rewrite=args.allow_rewrite)
        reports = list(whole.commits)
        if not reports:
            print(f"no commits in {args.range_}")
    else:
        raise UsageError("say what to check: --staged, --commit REV or --range A..B")
    blocked = [r for r in reports if r.blocked]
    for report in reports:
        if report.blocked or not args.quiet:
            print(_render(report))
    shown = _whole_worth_showing(whole)
    if (
        whole is not None
        and whole.whole is not None
        and shown
        and (whole.whole.blocked or not args.quiet)
    ):
        print(_render(whole.whole, whole))
    if blocked or (whole is not None and whole.blocked):
        reasons = []
        if any(r.prompt_changes and r.loosenings for r in blocked):
            reasons.append(
                "a prompt change and a loosened threshold cannot be reviewed together: the "
                "loosening would let the new prompt pass the bar it lowered. Commit the "
                "loosening on its own, with its reason in the commit message."
            )
        if whole is not None and whole.split:
            reasons.append(
                "the range changes the prompt and loosens a threshold in different commits; "
                "merged as one (a squash merge lands them in one commit) the loosening "
                "would let the new prompt pass the bar it lowered. Merge the loosening in a "
                "pull request of its own, with its reason."
            )
        if any(r.broken for r in blocked):
            reasons.append(
                "a file the guard compares does not load, so what it enforces cannot be "
                "judged. Fix it (`redline validate` lists every problem with its line), then "
                "commit again."
            )
        refused = f"{len(blocked)} of {len(reports)} {'commit' if len(reports) == 1 else 'commits'}"
        if whole is not None and whole.split:
            refused = "the range as one change"
        elif whole is not None and whole.whole is not None and whole.whole.blocked and shown:
            refused += " and the range as one change"
        print(f"redline guard: refused {refused}: " + " ".join(reasons))
        return 1
    return 0


def _whole_worth_showing(whole: RangeReport | None) -> bool:
    """The range as one change says something the commits did not: more than one commit."""
    if whole is None or whole.whole is None:
        return False
    return not (len(whole.commits) == 1 and whole.commits[0].findings == whole.whole.findings)


def _render(report: GuardReport, made: RangeReport | None = None) -> str:
    """One report; for a range as one change, each finding names the commits that made it."""
    lines = [report.label + (": REFUSED" if report.blocked else ": ok")]
    if not report.findings:
        lines.append("  no suite, case, prompt or model changes")
    order = list(_TAGS)
    for finding in sorted(report.findings, key=lambda f: order.index(f.kind)):
        tag = _TAGS[finding.kind]
        if finding.kind is Kind.REWRITE and report.allow_rewrite:
            tag = "rewrite"
        where = (
            f"  ({finding.where})" if finding.where and finding.where not in str(finding) else ""
        )
        origin = ""
        if made is not None:
            commits = made.commits_of(finding)
            origin = "  [in " + "; ".join(commits) + "]" if commits else "  [over several commits]"
        lines.append(f"  {tag:<9}{finding}{where}{origin}")
    return "\n".join(lines)


def _install(args: argparse.Namespace) -> int:
    hook = install_hook(Path.cwd(), force=args.force)
    print(f"installed {hook}: every commit now runs `redline guard --staged`")
    chained = hook.with_name("pre-commit.local")
    if chained.exists():
        print(f"  your previous hook runs first, from {chained}")
    return 0
