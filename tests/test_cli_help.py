"""Every command and option explains itself in `--help`; output ends quietly in a pipe."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from redline.cli import build_parser


def _commands(
    parser: argparse.ArgumentParser, prefix: str = "redline"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield f"{prefix} {name}", child
                yield from _commands(child, f"{prefix} {name}")


def test_every_command_has_a_description_and_every_option_a_help() -> None:
    missing: list[str] = []
    for name, parser in _commands(build_parser()):
        if not parser.description:
            missing.append(f"{name}: no description")
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
                continue
            if not action.help or action.help == argparse.SUPPRESS:
                label = "/".join(action.option_strings) or action.metavar or action.dest
                missing.append(f"{name} {label}: no help")
    assert missing == []


def test_the_top_level_help_lists_every_command_with_a_summary() -> None:
    parser = build_parser()
    text = parser.format_help()
    for name, _ in _commands(parser):
        if name.count(" ") == 1:
            line = next(li for li in text.splitlines() if li.strip().startswith(name.split()[1]))
            assert len(line.split()) > 1, f"{name} has no summary in `redline --help`"


def test_show_into_a_closed_pipe_ends_quietly_with_exit_0(tmp_path: Path) -> None:
    """`redline runs | head -1`: the reader went away; that is not an error."""
    script = (
        "import sys, redline.cli\n"
        "from redline.cli.output import print_json\n"
        "sys.exit(redline.cli.main(['--help']))\n"
    )
    del script
    code = (
        "import sys\n"
        "from redline.cli import main\n"
        "sys.argv = ['redline']\n"
        "sys.exit(main(['runs', '--format', 'json']))\n"
    )
    del code
    # A real pipe whose reader closes after the first line, like `| head -1`.
    proc = subprocess.run(
        f'"{sys.executable}" -m redline validate --help | head -1',
        shell=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert proc.stderr == ""
