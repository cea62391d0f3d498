"""TOML read into the same positioned `Node`s as YAML, so one reader checks both.

`tomllib` parses the values but keeps no positions; where each table, key and array
element starts is found by a walk of the text that knows every form TOML writes them in
(`_Scanner`). A value the walk cannot place points at the nearest enclosing one.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from redline.documents.yamlsource import Mark, Node
from redline.errors import Problem

Where = dict[tuple[str, ...], tuple[int, int]]

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_SCALAR_END = re.compile(r"[,\]}\n#]")


def item(index: int) -> str:
    """The path part of the index-th element of an array (or array of tables)."""
    return f"[{index}]"


class _Scanner:
    """Where each table, key and array element of a TOML document starts, by key path.

    tomllib has validated the text already, so this only walks it: headers (`[a.b]`,
    `[[a]]` arrays of tables), dotted and quoted keys, inline tables and arrays at any
    depth, and strings of every kind (a `key =` inside a multi-line string is text). A
    table that exists only through a deeper header or a dotted key (`[a.b]` makes `a`)
    is placed where it first appears.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.found: Where = {}
        self.tables: dict[tuple[str, ...], int] = {}  # array-of-tables path → last index

    def at(self) -> tuple[int, int]:
        line = self.text.count("\n", 0, self.i) + 1
        return line, self.i - (self.text.rfind("\n", 0, self.i) + 1) + 1

    def mark(self, path: tuple[str, ...], where: tuple[int, int]) -> None:
        for end in range(1, len(path) + 1):
            self.found.setdefault(path[:end], where)

    def peek(self, n: int = 1) -> str:
        return self.text[self.i : self.i + n]

    def skip(self, newlines: bool) -> None:
        """Whitespace and comments (and newlines when `newlines`)."""
        while self.i < len(self.text):
            c = self.text[self.i]
            if c == "#":
                end = self.text.find("\n", self.i)
                self.i = len(self.text) if end < 0 else end
            elif c in " \t\r" or (newlines and c == "\n"):
                self.i += 1
            else:
                return

    def scan(self) -> Where:
        table: tuple[str, ...] = ()
        while True:
            self.skip(newlines=True)
            if self.i >= len(self.text):
                return self.found
            start = self.i
            if self.peek() == "[":
                table = self.header()
            else:
                self.pair(table)
            self.i = max(self.i, start + 1)  # never stuck on text tomllib would refuse

    def header(self) -> tuple[str, ...]:
        where = self.at()
        many = self.peek(2) == "[["
        self.i += 2 if many else 1
        self.skip(newlines=False)
        path = self.resolve(self.key())
        self.skip(newlines=False)
        self.i += 2 if many else 1
        if many:
            index = self.tables.get(path, -1) + 1
            self.tables[path] = index
            self.mark(path, where)
            path = (*path, item(index))
        self.mark(path, where)
        return path

    def resolve(self, parts: tuple[str, ...]) -> tuple[str, ...]:
        """A header's path, through the last element of each array of tables it names."""
        out: tuple[str, ...] = ()
        for k, part in enumerate(parts):
            out = (*out, part)
            if k < len(parts) - 1 and out in self.tables:
                out = (*out, item(self.tables[out]))
        return out

    def key(self) -> tuple[str, ...]:
        parts = []
        while True:
            self.skip(newlines=False)
            c = self.peek()
            if c in "\"'":
                parts.append(self.string()[1])
            else:
                match = _BARE.match(self.text, self.i)
                if match is None:
                    break
                parts.append(match.group())
                self.i = match.end()
            self.skip(newlines=False)
            if self.peek() != ".":
                break
            self.i += 1
        return tuple(parts)

    def pair(self, table: tuple[str, ...]) -> None:
        where = self.at()
        path = (*table, *self.key())
        self.mark(path, where)
        self.skip(newlines=False)
        if self.peek() == "=":
            self.i += 1
        self.value(path)

    def value(self, path: tuple[str, ...]) -> None:
        self.skip(newlines=False)
        c = self.peek()
        if c in "\"'":
            self.string()
        elif c == "[":
            self.i += 1
            index = 0
            while True:
                self.skip(newlines=True)
                if self.peek() in ("]", ""):
                    self.i += 1
                    return
                element = (*path, item(index))
                self.mark(element, self.at())
                self.value(element)
                self.skip(newlines=True)
                if self.peek() == ",":
                    self.i += 1
                index += 1
        elif c == "{":
            self.i += 1
            while True:
                self.skip(newlines=True)
                if self.peek() in ("}", ""):
                    self.i += 1
                    return
                self.pair(path)
                self.skip(newlines=True)
                if self.peek() == ",":
                    self.i += 1
        else:
            end = _SCALAR_END.search(self.text, self.i)
            self.i = len(self.text) if end is None else end.start()

    def string(self) -> tuple[int, str]:
        """Skip one string of any kind; (its start, its text for a key)."""
        start = self.i
        quote = self.peek()
        if self.peek(3) == quote * 3:
            end = self.text.find(quote * 3, self.i + 3)
            end = len(self.text) if end < 0 else end + 3
            while self.text[end : end + 1] == quote:  # up to two quotes may close it
                end += 1
            self.i = end
            return start, self.text[start + 3 : end - 3]
        self.i += 1
        chars = []
        while self.i < len(self.text) and self.text[self.i] != quote:
            if quote == '"' and self.text[self.i] == "\\":
                chars.append(self.text[self.i : self.i + 2])
                self.i += 2
                continue
            chars.append(self.text[self.i])
            self.i += 1
        self.i += 1
        text = "".join(chars)
        if quote == '"':
            text = tomllib.loads(f'k = "{text}"')["k"]
        return start, text


def positions(text: str) -> Where:
    """(line, column), 1-based, of each table, key and array element, by key path (array
    elements as `item(i)`)."""
    return _Scanner(text).scan()


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
        items = []
        for index, element in enumerate(value):
            path = (*at, item(index))
            found = where.get(path)
            items.append(
                _node(element, shown, where, path, Mark(shown, *found) if found else mark, None)
            )
        return Node(items, mark, key_mark, "seq")
    return Node(value, mark, key_mark, "scalar")


def _error_position(message: str, text: str) -> tuple[int, int]:
    """Where tomllib's message says it stopped; "end of document" is the last line."""
    found = re.search(r"at line (\d+), column (\d+)", message)
    if found is not None:
        return int(found.group(1)), int(found.group(2))
    return max(1, len(text.splitlines())), 1
