"""The README is the front door: its examples must be what redline actually accepts."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

from redline.cli import build_parser

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.DOTALL)


def test_every_yaml_example_parses() -> None:
    examples = blocks("yaml")
    assert len(examples) >= 3
    for example in examples:
        yaml.safe_load(example)


def test_the_configuration_example_parses() -> None:
    [config] = blocks("toml")
    table = tomllib.loads(config)["tool"]["redline"]
    assert table["models"]["local"] == "local:smollm2-135m-instruct-q4_1"


def test_every_command_the_readme_names_exists() -> None:
    commands = set(re.findall(r"(?:`|uv run )redline ([a-z]+)", README))
    assert {"run", "triage", "guard", "baseline", "rerun"} <= commands
    for command in sorted(commands):
        with pytest.raises(SystemExit) as exit_info:
            build_parser().parse_args([command, "--help"])
        assert exit_info.value.code == 0, command
