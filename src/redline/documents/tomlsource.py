"""TOML read into the same positioned `Node`s as YAML, so one reader checks both.

`tomllib` parses the values but keeps no positions; the lines where tables and keys
are written are found by a small scan of the text (table headers and `key =` lines).
A value the scan cannot place (inside an inline table, say) points at the nearest
enclosing table or key that it can.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from redline.documents.yamlsource import Mark, Node
from redline.errors import Problem

_HEADER = re.compile(r"^\s*\[\[?\s*(?P<name>[^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(
    r"^(?P<indent>\s*)(?P<key>(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')"
    r"(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*="
)
_PART = re.compile(r"[A-Za-z0-9_-]+|\"(?:[^\"\\]|\\.)*\"|'[^']*'")

Where = dict[tuple[str, ...], tuple[int, int]]


def _parts(dotted: str) -> tuple[str, ...]:
    return tuple(p[1:-1] if p[0] in "\"'" else p for p in _PART.findall(dotted))


def positions(text: str) -> Where:
    """(line, column), 1-based, of each table header and `key =` line, by key path."""
    found: Where = {}
    table: tuple[str, ...] = ()
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header is not None:
            table = _parts(header.group("name"))
            found.setdefault(table, (number, line.index("[") + 1))
            continue
        key = _KEY.match(line)
        if key is not None:
            path = table + _parts(key.group("key"))
            found.setdefault(path, (number, len(key.group("indent")) + 1))
    return found


def load_toml(path: Path, display: str | None = None) -> tuple[Node | None, list[Problem]]:
    """Read and parse a TOML file into Nodes; an unreadable or invalid file is a problem."""
    shown = display if display is not None else str(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return None, [Problem(shown, 1, 1, "not UTF-8 text", "save the file as UTF-8")]
    except OSError as exc:
        return None, [Problem(shown, 0, 0, f"cannot read: {exc.strerror}")]
    return toml_text(text, shown)


def toml_text(text: str, shown: str) -> tuple[Node | None, list[Problem]]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line, column = _error_position(str(exc), text)
        return None, [Problem(shown, line, column, f"not valid TOML: {exc}", "fix the TOML syntax")]
    return toml_node(data, shown, positions(text)), []


def toml_node(data: Any, shown: str, where: Where, at: tuple[str, ...] = ()) -> Node:
    """`data` (parsed TOML) as Nodes marked with the positions in `where`."""
    return _node(data, shown, where, at, Mark(shown, *where.get(at, (1, 1))), None)


def _node(
    value: Any, shown: str, where: Where, at: tuple[str, ...], mark: Mark, key_mark: Mark | None
) -> Node:
    if isinstance(value, dict):
        entries: dict[str, Node] = {}
        for key, child in value.items():
            path = (*at, str(key))
            found = where.get(path)
            child_mark = Mark(shown, *found) if found is not None else mark
            entries[str(key)] = _node(child, shown, where, path, child_mark, child_mark)
        return Node(None, mark, key_mark, "map", entries)
    if isinstance(value, list):
        items = [_node(item, shown, where, at, mark, None) for item in value]
        return Node(items, mark, key_mark, "seq")
    return Node(value, mark, key_mark, "scalar")


def _error_position(message: str, text: str) -> tuple[int, int]:
    """Where tomllib's message says it stopped; "end of document" is the last line."""
    found = re.search(r"at line (\d+), column (\d+)", message)
    if found is not None:
        return int(found.group(1)), int(found.group(2))
    return max(1, len(text.splitlines())), 1
