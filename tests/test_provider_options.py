"""Provider options are checked when the config loads, from their declarations.

The valid and invalid values of every declared option are generated from its kind and
bounds, so an option added to `redline.provider_options` is covered here unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from casefiles import CASE_HEAD, SUITE_YAML, write_suite
from redline.cli import build_parser, main
from redline.config import DEFAULT_CONCURRENCY, load_config
from redline.errors import ConfigError
from redline.provider_options import (
    IN_FLIGHT_PER_SLOT,
    PROVIDER_KINDS,
    Option,
    OptionKind,
    default_slots,
    toml_value,
)
from servers import LoopbackLLMServer

#: Where each config file writes a provider table: its header, in pyproject.toml nested.
FILES = {"redline.toml": "", "pyproject.toml": "tool.redline."}
DECLARED = [(kind.name, option) for kind in PROVIDER_KINDS.values() for option in kind.options]
PASTED = "sk-proj-pasted key"


def _valid(option: Option) -> list[Any]:
    low = option.minimum if option.minimum is not None else 0
    above = low + 0.5 if option.above_minimum else low
    return {
        OptionKind.URL: ["http://127.0.0.1:8000/v1", "https://example.com"],
        OptionKind.TEXT: ["2024-01-01"],
        OptionKind.KEY_VARIABLE: ["MY_PROVIDER_KEY", ""],
        OptionKind.NUMBER: [above, 12],
        OptionKind.WHOLE: [int(low), int(low) + 7],
        OptionKind.BOOLEAN: [True, False],
    }[option.kind] + ([option.default] if option.default is not None else [])


def _invalid(option: Option) -> list[Any]:
    wrong_kind: dict[OptionKind, list[Any]] = {
        OptionKind.URL: [5, "", "localhost:8000/v1", "ftp://example.com", ["http://a"]],
        OptionKind.TEXT: [5, "", True],
        OptionKind.KEY_VARIABLE: [5, PASTED],
        OptionKind.NUMBER: ["slow", True, [1]],
        OptionKind.WHOLE: ["four", 1.5, True],
        OptionKind.BOOLEAN: ["yes", 1],
    }
    values = wrong_kind[option.kind]
    if option.minimum is not None:
        values.append(option.minimum if option.above_minimum else option.minimum - 1)
    if option.maximum is not None:
        values.append(option.maximum + 1)
    return values


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


def _write(root: Path, file: str, kind: str, lines: str) -> Path:
    """A config whose line 4 is the first line after the provider table's header."""
    prefix = FILES[file]
    path = root / file
    path.write_text(
        f'[{prefix}models]\nm = "{kind}:some-model"\n[{prefix}providers.{kind}]\n{lines}',
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(("kind", "option"), DECLARED, ids=[f"{k}.{o.key}" for k, o in DECLARED])
def test_every_declared_option_takes_its_valid_values(
    tmp_path: Path, kind: str, option: Option
) -> None:
    for value in _valid(option):
        _write(tmp_path, "redline.toml", kind, f"{option.key} = {_toml(value)}\n")
        assert load_config(tmp_path).provider(kind).options[option.key] == value


@pytest.mark.parametrize("file", FILES)
@pytest.mark.parametrize(("kind", "option"), DECLARED, ids=[f"{k}.{o.key}" for k, o in DECLARED])
def test_every_declared_option_refuses_its_invalid_values_at_their_line(
    tmp_path: Path, file: str, kind: str, option: Option
) -> None:
    for value in _invalid(option):
        _write(tmp_path, file, kind, f"{option.key} = {_toml(value)}\n")
        with pytest.raises(ConfigError) as refused:
            load_config(tmp_path)
        lines = str(refused.value).splitlines()
        assert any(line.startswith(f"{file}:4:1: ") for line in lines), (value, lines)
        mine = next(line for line in lines if line.startswith(f"{file}:4:1: "))
        assert f"{option.key} must be " in mine
        assert f"(hint: e.g. {option.key} = " in mine
        assert PASTED not in mine


def test_an_unset_option_is_its_declared_default(tmp_path: Path) -> None:
    _write(tmp_path, "redline.toml", "local", "")
    config = load_config(tmp_path)
    for kind in PROVIDER_KINDS.values():
        assert dict(config.provider(kind.name).options) == kind.defaults()


def test_an_unknown_option_is_named_with_the_closest_declared_one(tmp_path: Path) -> None:
    _write(tmp_path, "pyproject.toml", "local", "parralel = 2\n")
    with pytest.raises(ConfigError) as refused:
        load_config(tmp_path)
    assert str(refused.value).startswith(
        "pyproject.toml:4:1: [tool.redline.providers.local] unknown option 'parralel' "
        "for a provider of type 'local' (did you mean 'parallel'?)"
    )


@pytest.mark.parametrize("file", FILES)
def test_validate_reports_a_number_for_base_url_and_n_ctx_0_at_their_lines(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    file: str,
) -> None:
    prefix = FILES[file]
    (tmp_path / file).write_text(
        f"[{prefix}models]\n"
        'hosted = "openai:gpt-4.1-2025-04-14"\n'
        'local = "local:smollm2-135m-instruct-q4_1"\n'
        f"[{prefix}providers.openai]\n"
        "base_url = 5\n"
        f"[{prefix}providers.local]\n"
        "threads = 1\n"
        "n_ctx = 0\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)

    assert main(["validate"]) == 2

    err = capsys.readouterr().err
    assert f"{file}:5:1: [{prefix}providers.openai] base_url must be text: an http(s) URL" in err
    assert "not a number (5)" in err
    assert (
        f"{file}:8:1: [{prefix}providers.local] n_ctx must be a positive integer (at least 1)"
        in err
    )
    assert "got 0" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        # the provider the run uses: a traceback and exit 1 before options were declared
        (('base_url = "http', 'base_url = 5 # "http'), "base_url must be text"),
        # another provider's table: the run used to go ahead and fail only when it was built
        (("[providers.loopback]", "[providers.local]\nn_ctx = 0\n[providers.loopback]"), "n_ctx"),
    ],
)
def test_run_refuses_a_bad_option_before_any_request(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    llm_server: LoopbackLLMServer,
    edit: tuple[str, str],
    said: str,
) -> None:
    monkeypatch.setenv("REDLINE_LOOPBACK_KEY", "sk-test")
    toml = llm_server.redline_toml().replace(*edit, 1)
    (tmp_path / "redline.toml").write_text(toml, encoding="utf-8")
    write_suite(
        tmp_path / "cases",
        {"a.yaml": CASE_HEAD + "assert: [{type: contains, value: hello}]\n"},
        SUITE_YAML.replace("model: local", "model: fake"),
    )
    monkeypatch.chdir(tmp_path)

    assert main(["run"]) == 2

    err = capsys.readouterr().err
    assert "redline: error: redline.toml:" in err and said in err
    assert "Traceback" not in err
    assert llm_server.requests == []


def test_concurrency_help_says_what_a_run_draws_at_once() -> None:
    parser = build_parser(every_command=True)
    run = next(
        p
        for action in parser._actions
        if hasattr(action, "choices") and isinstance(action.choices, dict)
        for name, p in action.choices.items()
        if name == "run"
    )
    help_text = " ".join(a.help or "" for a in run._actions if "--concurrency" in a.option_strings)
    assert f"concurrency, {DEFAULT_CONCURRENCY})" in help_text
    assert f"{IN_FLIGHT_PER_SLOT * default_slots()} with this machine's default" in help_text
    assert "runs one" not in help_text


def test_validate_help_lists_every_declared_option_with_its_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["validate", "--help"])
    lines = capsys.readouterr().out.splitlines()
    for kind, option in DECLARED:
        under = lines[lines.index(f'  type = "{kind}"') + 1 :]
        line = next(line for line in under if line.split()[0] == option.key)
        assert option.meaning in line and option.expected in line
        unset = option.default is None
        assert ("unset by default" if unset else f"default {toml_value(option.default)}") in line
