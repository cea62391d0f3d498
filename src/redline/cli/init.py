"""`redline init [--force] [--install-spec SPEC]`: a starter suite and the CI workflow here."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.text import Text

from redline.ci.install_spec import given_install_spec, running_install_spec
from redline.ci.scaffold import GITIGNORE_FILE, describe, scaffold, starter_files
from redline.cli.output import make_console
from redline.errors import UsageError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "init",
        description="Write a starter suite (cases/support-reply), redline.toml with the "
        "pinned models, .github/workflows/prompt-evals.yml (contract and guard jobs on pull "
        "requests, a sharded nightly quality run) and the .gitignore entries for the local "
        "store. The workflow installs redline from the source this redline was installed "
        "from, pinned to its version or commit; --install-spec overrides it. Existing files "
        "are never overwritten without --force (.gitignore is appended to, never replaced).",
    )
    parser.add_argument("--dir", type=Path, default=Path("."), help="repository root (default .)")
    parser.add_argument("--force", action="store_true", help="overwrite files that exist")
    parser.add_argument(
        "--install-spec",
        metavar="SPEC",
        help="what the workflow's jobs install, as `uv tool install` takes it, e.g. "
        "'redline[local] @ git+https://example.org/you/redline@<commit>' or "
        "'redline[local]==0.1.0' "
        "(default: where this redline came from)",
    )
    parser.set_defaults(handler=_init)


def _init(args: argparse.Namespace) -> int:
    if args.install_spec is not None:
        spec = args.install_spec.strip()
        if not spec:
            raise UsageError("--install-spec is empty: give a requirement, e.g. redline==0.1.0")
        install = given_install_spec(spec)
    else:
        install = running_install_spec()
    written = scaffold(args.dir, force=args.force, files=starter_files(install))
    console = make_console()
    for path in written:
        note = " (entries added)" if path.name == GITIGNORE_FILE else ""
        print(f"wrote {path}{note}")
    console.print(Text(f"CI installs redline from {describe(install)}: {install.spec}"))
    if install.local:
        console.print(
            Text(
                "warning: CI cannot install that: it names a path on this machine, which a "
                "CI runner does not have. Rerun with --force --install-spec SPEC naming a git "
                "URL the runners can reach at a commit (push your clone first), or a released "
                "version",
                style="yellow",
            )
        )
    elif not install.pinned:
        console.print(
            Text(
                "warning: that is not pinned to a version or commit, so CI may install "
                "another redline than this one; rerun with --force --install-spec SPEC naming "
                "a git URL at a commit or a released version",
                style="yellow",
            )
        )
    console.print(
        Text(
            "next: `redline validate`, then `redline run` (the embedded model, no key), "
            "then pin your own model in redline.toml; commit everything written here"
        )
    )
    return 0
