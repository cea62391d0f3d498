from pathlib import Path

import pytest

from redline.config import load_config
from redline.errors import ConfigError


def write(tmp_path: Path, text: str, name: str = "pyproject.toml") -> Path:
    (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_models_are_pinned_by_alias(tmp_path: Path) -> None:
    write(tmp_path, '[tool.redline.models]\ndefault = "openai:gpt-4.1-2025-04-14"\n')
    cfg = load_config(tmp_path)
    assert cfg.model("default").id == "openai:gpt-4.1-2025-04-14"
    assert cfg.provider("openai").api_key_env == "OPENAI_API_KEY"


@pytest.mark.parametrize(
    "value",
    [
        "openai:gpt-4o-latest",
        "anthropic:claude-3-5-sonnet-LATEST",
        "${MODEL}",
        "env:MODEL",
        "openai:${MODEL_ID}",
    ],
)
def test_floating_or_env_model_ids_are_refused(tmp_path: Path, value: str) -> None:
    write(tmp_path, f'[tool.redline.models]\ndefault = "{value}"\n')
    with pytest.raises(ConfigError, match="default"):
        load_config(tmp_path)


def test_redline_toml_wins_over_pyproject(tmp_path: Path) -> None:
    write(tmp_path, '[tool.redline.models]\ndefault = "openai:a-2024-01-01"\n')
    write(tmp_path, '[models]\ndefault = "openai:b-2024-01-01"\n', "redline.toml")
    cfg = load_config(tmp_path)
    assert cfg.model("default").name == "b-2024-01-01"
    assert cfg.source.name == "redline.toml"


def test_api_key_in_file_is_refused(tmp_path: Path) -> None:
    write(tmp_path, '[tool.redline.providers.openai]\napi_key = "sk-123"\n')
    with pytest.raises(ConfigError, match="never write a key"):
        load_config(tmp_path)


def test_unknown_alias_names_known_ones(tmp_path: Path) -> None:
    write(tmp_path, '[tool.redline.models]\nlocal = "local:smollm2-135m-instruct-q4_1"\n')
    with pytest.raises(ConfigError, match="known aliases: local"):
        load_config(tmp_path).model("prod")


def test_problems_name_the_table_as_written_in_the_file_at_hand(tmp_path: Path) -> None:
    write(tmp_path, '[models]\ndefault = "openai:gpt-4o-latest"\n', "redline.toml")
    with pytest.raises(ConfigError) as refused:
        load_config(tmp_path)
    assert "redline.toml:2:1: [models] default" in str(refused.value)
    assert "tool.redline" not in str(refused.value)
    write(tmp_path, '[models]\nlocal = "local:smollm2-135m-instruct-q4_1"\n', "redline.toml")
    with pytest.raises(ConfigError, match=r"add it under \[models\]$"):
        load_config(tmp_path).model("prod")
    (tmp_path / "redline.toml").unlink()
    write(tmp_path, '[tool.redline.models]\ndefault = "openai:gpt-4o-latest"\n')
    with pytest.raises(ConfigError, match=r"pyproject.toml:2:1: \[tool.redline.models\] default"):
        load_config(tmp_path)


def test_a_key_pasted_as_api_key_env_is_refused_without_echoing_it(tmp_path: Path) -> None:
    secret = "sk-proj-Zq8vX1-pasted-by-mistake"
    write(tmp_path, f'[tool.redline.providers.openai]\napi_key_env = "{secret}"\n')
    with pytest.raises(ConfigError, match="NAME of an environment variable") as refused:
        load_config(tmp_path)
    assert secret not in str(refused.value)
    write(tmp_path, '[tool.redline.providers.openai]\napi_key_env = "OPENAI_API_KEY_2"\n')
    assert load_config(tmp_path).provider("openai").api_key_env == "OPENAI_API_KEY_2"


def test_every_problem_of_the_config_is_listed_at_its_line(tmp_path: Path) -> None:
    write(
        tmp_path,
        "[tool.redline]\n"
        "concurrency = true\n"
        "scoer_drop = 0.2\n"
        "[tool.redline.models]\n"
        'default = "openai:gpt-4.1-2025-04-14"\n'
        'cheap = "${MODEL}"\n'
        "[tool.redline.providers.openai]\n"
        'timeout_s = "slow"\n',
    )
    with pytest.raises(ConfigError) as refused:
        load_config(tmp_path)
    lines = str(refused.value).splitlines()
    assert [line.split(": ", 1)[0] for line in lines] == [
        "pyproject.toml:2:1",
        "pyproject.toml:3:1",
        "pyproject.toml:6:1",
        "pyproject.toml:8:1",
    ]
    assert "`concurrency` must be a whole number, not a boolean" in lines[0]
    assert "did you mean 'score_drop'?" in lines[1]
    assert "environment variable" in lines[2]
    assert "(hint: e.g. timeout_s = " in lines[3]


def test_a_config_that_is_not_toml_names_the_line(tmp_path: Path) -> None:
    write(tmp_path, '[tool.redline]\nconcurrency = 2\nstore = "x\n')
    with pytest.raises(ConfigError, match=r"^pyproject.toml:3:\d+: not valid TOML"):
        load_config(tmp_path)
