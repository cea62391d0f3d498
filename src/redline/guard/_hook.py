"""The git pre-commit hook that runs `redline guard --staged`."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from redline.errors import UsageError
from redline.gitio import hooks_dir, open_repo
from redline.guard._commits import project_prefix

HOOK_MARKER = "# redline-guard-hook"
CHAINED_HOOK = "pre-commit.local"


def install_hook(root: Path, *, force: bool = False, python: str | None = None) -> Path:
    """Write a pre-commit hook running `redline guard --staged`; return its path.

    An existing foreign hook is kept: refused without `force`, with `force` renamed to
    pre-commit.local and run first by the new hook.
    """
    with open_repo(root) as repo:
        hooks = hooks_dir(repo)
        prefix = project_prefix(repo, root)
    hook = hooks / "pre-commit"
    chained = hooks / CHAINED_HOOK
    if hook.exists() and HOOK_MARKER not in hook.read_text(errors="replace"):
        if not force:
            raise UsageError(
                f"{hook} already exists; `redline guard install --force` keeps it as "
                f"{CHAINED_HOOK} and runs it before the guard"
            )
        if chained.exists():
            raise UsageError(
                f"{chained} already exists too; merge the two hooks by hand, then run "
                "`redline guard install --force` again"
            )
        hook.rename(chained)
    hooks.mkdir(parents=True, exist_ok=True)
    hook.write_text(_hook_script(python or sys.executable, prefix), encoding="utf-8")
    hook.chmod(0o755)
    return hook


def _hook_script(python: str, prefix: str) -> str:
    py = shlex.quote(python)
    project = shlex.quote(prefix) if prefix else "."
    return f"""#!/bin/sh
{HOOK_MARKER} (written by `redline guard install`)
# Refuses a commit that holds a prompt change and a loosened threshold together.
# Bypass once, knowingly: git commit --no-verify
hooks=$(dirname "$0")
if [ -x "$hooks/{CHAINED_HOOK}" ]; then
    "$hooks/{CHAINED_HOOK}" "$@" || exit $?
fi
cd "$(git rev-parse --show-toplevel)" && cd {project} || exit 1
found='import importlib.util as u, sys; sys.exit(u.find_spec("redline") is None)'
if [ -x {py} ] && {py} -c "$found" 2>/dev/null; then
    exec {py} -m redline.guard --staged
fi
if command -v redline >/dev/null 2>&1; then
    exec redline guard --staged
fi
echo "redline guard: neither {python} (with redline) nor 'redline' on PATH;" >&2
echo "  reinstall the hook with 'redline guard install --force' from your environment" >&2
exit 1
"""
