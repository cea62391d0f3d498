"""The command table: every subcommand listed, each loaded only when it is chosen."""

from __future__ import annotations

import subprocess
import sys

import pytest

from redline.cli import COMMANDS, build_parser


def test_help_lists_every_command_with_its_summary(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["--help"])

    out = " ".join(capsys.readouterr().out.split())
    assert stop.value.code == 0
    for name, command in COMMANDS.items():
        assert f"{name} {command.summary}" in out


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_listed_command_loads_its_own_parser_and_handler(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args([name, "--help"])

    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: redline {name} ")


def test_help_and_version_import_no_subcommand_module() -> None:
    code = (
        "import sys\n"
        "from redline.cli import build_parser\n"
        "try:\n"
        "    build_parser().parse_args(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('redline.cli.'))\n"
        "heavy = sorted(m for m in ('numpy', 'yaml', 'httpx', 'git') if m in sys.modules)\n"
        "print(loaded, heavy, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )

    assert done.stderr.strip() == "[] []"


def test_choosing_a_command_loads_only_its_module() -> None:
    code = (
        "import sys\n"
        "from redline.cli import build_parser\n"
        "args = build_parser().parse_args(['runs', '--limit', '3'])\n"
        "print(args.limit, callable(args.handler), 'redline.cli.run' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )

    assert done.stdout.split() == ["3", "True", "False"]
