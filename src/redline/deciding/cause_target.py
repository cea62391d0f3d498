"""The cause analysis for a suite whose target is the team's own code.

The reference arm must run the reference revision's prompt through the reference
revision's code: each side of the comparison is a temporary git worktree checked out at
its revision, and the suite (with its target's root) is loaded from there. A deployed
`http` endpoint serves only today's code, so its reference arm is skipped with the reason.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from redline.gitio import Repo, add_worktree, remove_worktree
from redline.suite.cases import Suite
from redline.targets.spec import TargetSpec


class Worktrees:
    """Temporary checkouts of revisions under `folder`, removed by `close()`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._made: list[tuple[Path, Path]] = []

    def checkout(self, repo: Repo, rev: str, side: str) -> Path:
        dest = self.folder / f"{side}-tree"
        add_worktree(repo, rev, dest)
        self._made.append((repo.top, dest))
        return dest

    def close(self) -> None:
        for top, dest in reversed(self._made):
            remove_worktree(top, dest)
        self._made.clear()


def is_target_suite(spec: object) -> bool:
    """Whether a suite.yaml's data names a target (read before the suite is loaded)."""
    return isinstance(spec, dict) and spec.get("target") is not None


def target_changes(red: Suite, ref: Suite) -> list[str]:
    """What differs in the target between the reference and the red run: its prompt files
    (by path under the target's root), the rest of its code, or the target itself."""
    new, old = red.target, ref.target
    if new is None or old is None:
        return [] if new is old else ["the target (a model before, your code now, or back)"]
    found = []
    if (new.kind, new.ref) != (old.kind, old.ref):
        found.append(f"the target: {old.label} → {new.label}")
    before, after = _contents(old, old.prompt_files()), _contents(new, new.prompt_files())
    for name in sorted(set(before) | set(after)):
        if before.get(name) != after.get(name):
            found.append(f"target prompt file {name}")
    if _contents(old, old.code_files()) != _contents(new, new.code_files()):
        found.append("the target's code (besides its prompt files)")
    return found


def _contents(spec: TargetSpec, files: tuple[Path, ...]) -> dict[str, str]:
    return {
        p.relative_to(spec.root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in files
    }


def reference_arm_skipped(spec: TargetSpec) -> str | None:
    """Why the reference prompt cannot be run through the reference code, or None."""
    if spec.travels_in_time:
        return None
    return (
        f"the target {spec.label} is a running endpoint: it serves today's code and cannot "
        "run the reference revision's prompt, so the reference arm was skipped (point a "
        "python or command target at the same code to compare revisions)"
    )


def model_arm_skipped(spec: TargetSpec) -> str | None:
    """Why the target cannot be told the reference model, or None."""
    if spec.model_choice() is not None:
        return None
    return (
        f"the target {spec.label} declares no way of choosing its model (set `model_env:` "
        "to the environment variable it reads), so the reference model arm was skipped"
    )
