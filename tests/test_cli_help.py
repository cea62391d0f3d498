"""Every command and option explains itself in `--help`."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

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
    for name, parser in _commands(build_parser(every_command=True)):
        if not parser.description:
            missing.append(f"{name}: no description")
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
                continue
            if not action.help or action.help == argparse.SUPPRESS:
                label = "/".join(action.option_strings) or action.metavar or action.dest
                missing.append(f"{name} {label}: no help")
    assert missing == []


def test_every_command_has_a_one_line_summary_in_its_parents_help() -> None:
    """`redline --help` (and `redline baseline --help`) list each command with a summary."""
    parsers = [
        ("redline", build_parser(every_command=True)),
        *_commands(build_parser(every_command=True)),
    ]
    missing = [
        f"{name} {choice.dest}"
        for name, parser in parsers
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for choice in action._choices_actions
        if not choice.help
    ]
    assert missing == []
