"""The point a red case is compared against, derived from the red run itself.

Not from the current checkout: the user may have switched branches since the run, and
`origin` may be missing or behind the local default branch. The reference is the last run
that passed the case on a commit the red run's commit descends from; failing that, where
the red run's commit left the default branch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from redline.errors import GitCommandError, GitError
from redline.gitio import Repo, commit_subject, file_at, resolve_commit
from redline.running.store import RunStore
from redline.vocabulary.records import CaseOutcome, RunKind, RunRecord, RunStatus


@dataclass(frozen=True)
class Reference:
    """A commit to compare against, with where it sits and why it was chosen."""

    revision: str
    branch: str | None
    date: str
    reason: str
    #: The passing run, when the reference is one (its manifest and model are known).
    run: RunRecord | None = None
    chosen_by_user: bool = False

    @property
    def short(self) -> str:
        return self.revision[:12]

    def describe(self) -> str:
        where = f" on {self.branch}" if self.branch else ""
        return f"{self.short}{where} ({self.date[:16].replace('T', ' ')}): {self.reason}"


def find_reference(
    repo: Repo,
    store: RunStore,
    red: RunRecord,
    suite: str,
    case_id: str,
    override: str | None = None,
    inputs: Sequence[str] = (),
    *,
    uncommitted: bool = False,
) -> Reference:
    """The reference point for one case of a red run; `override` is a revision the user gave.

    `inputs` are the repository paths of what the case sees (its suite folder first, then
    the config file), for runs made on the default branch itself. `uncommitted`: the red
    run ran on edits not in its commit, so that commit is the state before them.
    """
    red_commit = red_run_commit(repo, red)
    if override:
        sha = resolve_commit(repo, override)
        return _reference(repo, sha, f"given as the reference ({override})", user=True)
    passing = last_passing_run(repo, store, red, suite, case_id, red_commit)
    if passing is not None:
        run, passes, samples = passing
        when = run.started_at[:16].replace("T", " ")
        assert run.git_commit is not None
        return _reference(
            repo,
            run.git_commit,
            f"the last run that passed this case (run {run.id}, {passes}/{samples}, {when} UTC) "
            "on a commit the red run's commit descends from",
            run=run,
        )
    return _from_default_branch(repo, red_commit, inputs, uncommitted=uncommitted)


def _from_default_branch(
    repo: Repo, red_commit: str, inputs: Sequence[str], *, uncommitted: bool
) -> Reference:
    """With no earlier passing run: where the red run's commit left the default branch,
    or (on the branch itself, or with none) the state before the case's inputs last changed.
    """
    branch, why = default_branch(repo)
    if branch is None:
        return _before_last_change(
            repo, red_commit, inputs, "no earlier passing run of this case and no default branch"
        )
    base = repo.run("merge-base", branch, red_commit, check=False).decode().strip()
    if not base:
        return _before_last_change(
            repo,
            red_commit,
            inputs,
            f"no earlier passing run of this case, and no history shared with {branch}",
        )
    if base == red_commit and uncommitted:
        return _reference(
            repo,
            red_commit,
            f"no earlier passing run of this case; the red run ran on uncommitted edits on "
            f"{branch}{why}: its commit is the state before them",
            branch=branch,
        )
    if base == red_commit:
        return _before_last_change(
            repo,
            red_commit,
            inputs,
            f"no earlier passing run of this case, and the red run's commit is on {branch}{why}",
            branch=branch,
        )
    reason = f"no earlier passing run of this case: where the red run's commit left {branch}{why}"
    return _reference(repo, base, reason, branch=branch)


def _before_last_change(
    repo: Repo,
    red_commit: str,
    inputs: Sequence[str],
    lead: str,
    branch: str | None = None,
) -> Reference:
    """The commit just before the last change to the suite's inputs (suite folder, config).

    The natural "before" of a run made on the default branch itself: the state the last
    edit to what the case sees started from. When that edit created the suite, there is
    nothing earlier, and the red run's own commit is its reference.
    """
    paths = [p for p in inputs if p]
    try:
        last = repo.text("log", "-n", "1", "--format=%H", red_commit, "--", *paths).strip()
    except GitCommandError:
        last = ""
    found = repo.text("rev-list", "--parents", "-n", "1", last).split() if last else []
    if len(found) < 2:
        return _reference(repo, red_commit, f"{lead}: the red run's own commit", branch=branch)
    parent = found[1]
    subject = commit_subject(repo, last)
    suite_file = inputs[0].rstrip("/") + "/suite.yaml" if inputs and inputs[0] else "suite.yaml"
    if not _has_file(repo, parent, suite_file):
        return _reference(
            repo,
            red_commit,
            f"{lead}; the suite first appeared in {last[:12]} ({subject}): the red run's own "
            "commit, nothing earlier to compare with",
            branch=branch,
        )
    return _reference(
        repo,
        parent,
        f"{lead}: the commit before the last change to the suite or its config "
        f"({last[:12]} {subject})",
        branch=branch,
    )


def _has_file(repo: Repo, rev: str, path: str) -> bool:
    return file_at(repo, rev, path) is not None


def red_run_commit(repo: Repo, red: RunRecord) -> str:
    """The commit the red run saw, checked to be in this repository."""
    if red.git_commit is None:
        raise GitError(
            f"run {red.id} recorded no git commit (it ran outside a git repository or before "
            "the first commit), so there is no history to compare it with; commit the suite "
            "and run it again"
        )
    try:
        return resolve_commit(repo, red.git_commit)
    except GitError:
        raise GitError(
            f"run {red.id} ran on commit {red.git_commit[:12]}, which this repository does not "
            "have; fetch it (`git fetch origin`) or triage from the clone that ran it"
        ) from None


def last_passing_run(
    repo: Repo, store: RunStore, red: RunRecord, suite: str, case_id: str, red_commit: str
) -> tuple[RunRecord, int, int] | None:
    """(run, passes, samples) of the latest finished run before `red` that passed the case
    on a clean commit that is an ancestor of (or equal to) the red run's commit."""
    found: tuple[RunRecord, int, int] | None = None
    for run, record in store.case_history(case_id, suite):
        if (
            run.id == red.id
            or run.kind is not RunKind.RUN
            or run.status is not RunStatus.FINISHED
            or record.result is not CaseOutcome.PASS
            or run.git_commit is None
            or run.git_dirty
            or run.started_at >= red.started_at
        ):
            continue
        if _is_ancestor(repo, run.git_commit, red_commit):
            found = (run, record.passes, record.content_samples)
    return found


def default_branch(repo: Repo) -> tuple[str | None, str]:
    """(branch, note): origin's default branch, unless origin is missing or behind the local one."""
    ref = repo.run("symbolic-ref", "--quiet", "refs/remotes/origin/HEAD", check=False)
    remote = ref.decode().strip().removeprefix("refs/remotes/") or None
    if remote is None:
        remote = next((n for n in ("origin/main", "origin/master") if _exists(repo, n)), None)
    local_name = remote.removeprefix("origin/") if remote else None
    local = next(
        (n for n in (local_name, "main", "master") if n is not None and _exists(repo, n)), None
    )
    if remote is None:
        return local, " (no remote default branch: the local one)"
    if local is None:
        return remote, ""
    remote_sha = resolve_commit(repo, remote)
    local_sha = resolve_commit(repo, local)
    if remote_sha != local_sha and _is_ancestor(repo, remote_sha, local_sha):
        return local, f" (the local {local}, which is ahead of {remote})"
    return remote, ""


def _reference(
    repo: Repo,
    sha: str,
    reason: str,
    *,
    run: RunRecord | None = None,
    branch: str | None = None,
    user: bool = False,
) -> Reference:
    full = resolve_commit(repo, sha)
    return Reference(
        revision=full,
        branch=branch or _branch_holding(repo, full),
        date=repo.text("log", "-1", "--format=%cI", full).strip(),
        reason=reason,
        run=run,
        chosen_by_user=user,
    )


def _branch_holding(repo: Repo, sha: str) -> str | None:
    """A branch that contains the commit: the default branch when it does, else the first."""
    try:
        out = repo.text(
            "for-each-ref",
            "--contains",
            sha,
            "--format=%(refname:short)",
            "refs/heads",
            "refs/remotes",
        )
    except GitCommandError:
        return None
    names = [n for n in out.split() if n and not n.endswith("/HEAD") and n != "origin"]
    preferred, _ = default_branch(repo)
    for name in (preferred, "main", "master", "origin/main", "origin/master"):
        if name in names:
            return name
    return names[0] if names else None


def _exists(repo: Repo, name: str) -> bool:
    try:
        resolve_commit(repo, name)
    except GitError:
        return False
    return True


def _is_ancestor(repo: Repo, older: str, newer: str) -> bool:
    try:
        repo.run("merge-base", "--is-ancestor", older, newer)
    except GitError:
        return False
    return True


__all__ = ["Reference", "default_branch", "find_reference", "red_run_commit"]
