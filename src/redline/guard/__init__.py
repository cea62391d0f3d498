"""The guard: never a loosened threshold in the same commit as a prompt change.

A commit that changes the prompt and also lowers the bar the prompt must clear carries
its own permission to pass, and nobody can review that. The guard compares what each
case enforces on both sides of a commit (its effective bar, from `redline.casemodel`:
defaults applied, suite settings resolved, vars filled, files read at that revision),
names every loosening as `old → new`, names every prompt change, and refuses the
combination.
"""

from __future__ import annotations

from pathlib import Path

from redline.casemodel import RETIRED_DIR, SUITE_FILE
from redline.casemodel.diff import diff_cases
from redline.casemodel.effective import SuiteBar, case_id, effective_case, suite_bar
from redline.documents.yamlsource import file_bytes
from redline.gitio import (
    INDEX,
    commits_in_range,
    head_commit,
    open_repo,
    range_ends,
    require_commits,
    resolve_commit,
)
from redline.guard._commits import check_one_commit, commit_label, compare_revisions, project_prefix
from redline.guard._documents import bar_finding, compare_suite, name_of, parse_yaml
from redline.guard._findings import Finding, GuardReport, Kind, RangeReport, attribute
from redline.guard._hook import install_hook

__all__ = [
    "Finding",
    "GuardReport",
    "Kind",
    "RangeReport",
    "check_commit",
    "check_range",
    "check_range_as_one",
    "check_staged",
    "index_has_prompt_change",
    "install_hook",
    "loosenings_between",
]


def check_staged(root: Path, *, allow_rewrite: bool = False) -> GuardReport:
    """The index against HEAD (against nothing before the first commit)."""
    with open_repo(root) as repo:
        head = head_commit(repo)
        label = f"index (against HEAD {head[:12]})" if head else "index (no commits yet)"
        findings = compare_revisions(repo, head, INDEX, project_prefix(repo, root))
        return GuardReport(label, tuple(findings), allow_rewrite)


def check_commit(root: Path, rev: str, *, allow_rewrite: bool = False) -> GuardReport:
    """One commit against its first parent."""
    with open_repo(root) as repo:
        require_commits(repo)
        sha = resolve_commit(repo, rev)
        return check_one_commit(repo, sha, project_prefix(repo, root), allow_rewrite)


def check_range(root: Path, spec: str, *, allow_rewrite: bool = False) -> list[GuardReport]:
    """Each commit of `A..B` on its own: separate commits are separately reviewable."""
    with open_repo(root) as repo:
        require_commits(repo)
        prefix = project_prefix(repo, root)
        plain, merges = commits_in_range(repo, spec)
        reports = [check_one_commit(repo, sha, prefix, allow_rewrite) for sha in plain]
        for sha in merges:
            note = Finding(
                Kind.NOTE, "merge commit skipped", "each commit it brings in is checked on its own"
            )
            reports.append(GuardReport(commit_label(repo, sha), (note,), allow_rewrite))
        return reports


def check_range_as_one(root: Path, spec: str, *, allow_rewrite: bool = False) -> RangeReport:
    """`A..B` commit by commit and as one change from the merge base of A and B to B: a
    pull request is merged as one, so a prompt change in one commit and a loosening in
    another are as unreviewable as in one commit. Each finding of the whole names the
    commits that made it."""
    commits = check_range(root, spec, allow_rewrite=allow_rewrite)
    if not commits:
        return RangeReport((), None)
    with open_repo(root) as repo:
        base, head = range_ends(repo, spec)
        findings = compare_revisions(repo, base, head, project_prefix(repo, root))
        label = (
            f"{base[:12] if base else 'the empty tree'}..{head[:12]} as one change "
            f"({len(commits)} commits, as a squash merge lands them)"
        )
    whole = GuardReport(label, tuple(findings), allow_rewrite)
    return RangeReport(tuple(commits), whole, tuple(attribute(findings, commits)))


def index_has_prompt_change(root: Path) -> list[str]:
    """Prompt changes (prompt files, pinned models, judge rubrics) staged in the index.

    The TUI refuses to stage a loosening while this list is not empty.
    """
    return [str(f) for f in check_staged(root).prompt_changes]


def loosenings_between(
    old_text: str | None,
    new_text: str | None,
    *,
    path: str | Path = "case.yaml",
    suite: bool = False,
    allow_rewrite: bool = False,
) -> list[Finding]:
    """Loosenings from one version of a case (or suite.yaml, `suite=True`) to another.

    A case is compared alone (the suite's defaults apply to both sides alike). When `path`
    names a file on disk, the files its `file://` values name are read beside it; otherwise
    they are compared by name. A side that does not parse gives a BROKEN finding; None
    means the file is absent.
    """
    shown = str(path)
    old = parse_yaml(old_text.encode() if old_text is not None else None, shown, "old")
    new = parse_yaml(new_text.encode() if new_text is not None else None, shown, "new")
    findings: list[Finding] = [p.problem for p in (old, new) if p.problem is not None]
    if old.problem is None and new.problem is None:
        if suite:
            findings += compare_suite(name_of(old.data, shown), shown, old.data, new.data)
        elif old.data is not None and new.data is None:
            findings.append(Finding(Kind.LOOSENING, f"case {case_id(old.data, shown)}", "deleted"))
        elif old.data is not None and new.data is not None:
            folder = Path(path).parent
            read = file_bytes if Path(path).is_absolute() and folder.is_dir() else None
            bar = _suite_beside(Path(path)) if read is not None else None
            before = effective_case(old.data, Path(path).as_posix(), bar, read)
            after = effective_case(new.data, Path(path).as_posix(), bar, read)
            subject = f"case {after.id}"
            broken = [
                Finding(Kind.BROKEN, subject, f"{side} side does not load: {issue.message}", shown)
                for side, case in (("old", before), ("new", after))
                for issue in case.issues
            ]
            findings += broken or [
                bar_finding(subject, c, shown, None) for c in diff_cases(before, after).changes
            ]
    kinds = {Kind.LOOSENING, Kind.BROKEN} | (set() if allow_rewrite else {Kind.REWRITE})
    return [f for f in findings if f.kind in kinds]


def _suite_beside(case_file: Path) -> SuiteBar | None:
    """The bar of the suite a case file on disk belongs to (its folder's suite.yaml)."""
    folder = case_file.parent
    if folder.name == RETIRED_DIR:
        folder = folder.parent
    parsed = parse_yaml(file_bytes(str(folder / SUITE_FILE)), SUITE_FILE, "new")
    if parsed.data is None:
        return None
    return suite_bar(parsed.data, folder.as_posix(), file_bytes)
