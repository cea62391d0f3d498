"""TOML positions: every table and key is placed where it is written, in every form TOML
allows, so a config problem names the right line and column."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.config import load_config
from redline.documents.tomlsource import item, positions, toml_text
from redline.errors import ConfigError

DOCUMENT = '''\
# a comment with key = "value" and [table] in it
top = 1
dotted.inner . deep = "x"            # dotted keys, spaces around the dots
"quoted.key" = 2
'single' = 3
text = """
fake = 1
[fake]
"""
literal = \'\'\'
[[also.fake]]
\'\'\'
array = [
  1,   # a comment inside
  { name = "a", nested = { k = 1 } },
  [2, 3],
]
inline = { a = 1, "b.c" = { d = 2 } }

[plain]
key = "v"

[implicit.child]
x = 1

[[many]]
n = 1
[many.sub]
s = 1

[[many]]
n = 2
[[many.deeper]]
m = 1

  [ spaced . "header" ]
y = 2
'''


def test_every_table_and_key_form_is_placed_where_it_is_written() -> None:
    where = positions(DOCUMENT)
    expected = {
        ("top",): (2, 1),
        ("dotted",): (3, 1),
        ("dotted", "inner", "deep"): (3, 1),
        ("quoted.key",): (4, 1),
        ("single",): (5, 1),
        ("text",): (6, 1),
        ("literal",): (10, 1),
        ("array",): (13, 1),
        ("array", item(0)): (14, 3),
        ("array", item(1)): (15, 3),
        ("array", item(1), "name"): (15, 5),
        ("array", item(1), "nested", "k"): (15, 28),
        ("array", item(2)): (16, 3),
        ("inline", "a"): (18, 12),
        ("inline", "b.c", "d"): (18, 29),
        ("plain",): (20, 1),
        ("plain", "key"): (21, 1),
        ("implicit",): (23, 1),
        ("implicit", "child", "x"): (24, 1),
        ("many",): (26, 1),
        ("many", item(0), "n"): (27, 1),
        ("many", item(0), "sub", "s"): (29, 1),
        ("many", item(1)): (31, 1),
        ("many", item(1), "n"): (32, 1),
        ("many", item(1), "deeper", item(0), "m"): (34, 1),
        ("spaced", "header"): (36, 3),
        ("spaced", "header", "y"): (37, 1),
    }
    assert {path: where.get(path) for path in expected} == expected
    # Nothing inside a string is taken for a table or a key.
    assert ("fake",) not in where and ("also",) not in where


def test_values_carry_their_positions_into_the_nodes() -> None:
    node, problems = toml_text(DOCUMENT, "doc.toml")
    assert node is not None and not problems
    many = node.get("many")
    assert many is not None and many.kind == "seq"
    second = many.children()[1].get("n")
    assert second is not None and (second.mark.line, second.mark.column) == (32, 1)
    deep = node.get("inline")
    assert deep is not None
    d = deep.get("b.c")
    assert d is not None and d.get("d") is not None


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        # A typo in a table that exists only through a deeper header.
        (
            "pyproject.toml",
            '[project]\nname = "app"\nversion = "1"\n\n[tool.redline]\nstore = "s.db"\n\n'
            '[tool.redline.models]\nlocal = "local:smollm2-135m-instruct-q4_1"\n\n'
            "# the local model\n\n[tool.redline.provders.local]\nthreads = 2\n",
            "pyproject.toml:13:1: unknown key 'provders'",
        ),
        (
            "redline.toml",
            '[models]\nlocal = "local:smollm2-135m-instruct-q4_1"\n[provders.local]\nthreads = 2\n',
            "redline.toml:3:1: unknown key 'provders'",
        ),
        # A dotted key, and one inside an inline table.
        (
            "redline.toml",
            'store = "a"\nmodels.local = "local:smollm2-135m-instruct-q4_1"\n'
            "provders.local.threads = 2\n",
            "redline.toml:3:1: unknown key 'provders'",
        ),
        (
            "redline.toml",
            'models = { local = "local:smollm2-135m-instruct-q4_1" }\n'
            "prices = { local = { input_per_mtok = 1.0, output_per_mtk = 2.0 } }\n",
            "redline.toml:2:44: [prices.local]: unknown key(s) output_per_mtk",
        ),
    ],
)
def test_a_config_problem_names_the_line_it_is_on(
    tmp_path: Path, name: str, text: str, where: str
) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_config(tmp_path)
    assert where in str(refused.value)
