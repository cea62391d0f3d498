"""YAML that remembers where every key and value was written.

Validation problems must name file:line:column, so every YAML input (suite and case
files, rubrics, labels, tone files) is read into `Node`s carrying pyyaml marks instead
of plain dicts, and checked by `redline.documents.reading.NodeReader`. Callers that only
look at values (the guard, the cause analysis) read the same documents as plain data.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml

from redline.casemodel import FILE_REF
from redline.casemodel.values import KIND_NAMES, did_you_mean, kind_name, utf8_problem
from redline.errors import Problem

__all__ = [
    "FILE_REF",
    "Mark",
    "Node",
    "did_you_mean",
    "file_bytes",
    "line_at",
    "load_bytes",
    "load_data",
    "load_file",
    "load_text",
    "plain_data",
    "read_bytes",
    "read_verbatim",
    "type_name",
    "utf8_problem",
]


@dataclass(frozen=True)
class Mark:
    """A 1-based position in a file."""

    path: str
    line: int
    column: int

    def problem(self, message: str, hint: str = "") -> Problem:
        return Problem(self.path, self.line, self.column, message, hint)


#: Where a YAML node was written before anyone asked: the file and libyaml's own mark
#: (0-based). Most nodes of a clean file are never pointed at, so their `Mark` is made
#: when first asked for.
_Place = tuple[str, Any]


class Node:
    """One YAML value with its position; mappings and sequences hold Nodes.

    `key_mark` is where the key of a mapping entry was written (None for
    top-level documents and sequence items). A node is read, never changed.
    """

    __slots__ = ("_entries", "_key_mark", "_mark", "kind", "value")

    def __init__(
        self,
        value: Any,
        mark: Mark | _Place,
        key_mark: Mark | _Place | None = None,
        kind: str = "scalar",
        entries: dict[str, Node] | None = None,
    ) -> None:
        self.value = value
        self._mark = mark
        self._key_mark = key_mark
        self.kind = kind
        self._entries: dict[str, Node] = {} if entries is None else entries

    def __repr__(self) -> str:
        return f"Node({self.plain()!r}, {self.mark})"

    @property
    def mark(self) -> Mark:
        mark = self._mark
        if type(mark) is not Mark:
            mark = self._mark = _placed(mark)
        return mark

    @property
    def key_mark(self) -> Mark | None:
        mark = self._key_mark
        if mark is not None and type(mark) is not Mark:
            mark = self._key_mark = _placed(mark)
        return mark

    @property
    def is_map(self) -> bool:
        return self.kind == "map"

    @property
    def is_seq(self) -> bool:
        return self.kind == "seq"

    @property
    def is_scalar(self) -> bool:
        return self.kind == "scalar"

    def get(self, key: str) -> Node | None:
        return self._entries.get(key) if self.is_map else None

    def keys(self) -> list[str]:
        return list(self._entries) if self.is_map else []

    def items(self) -> Iterator[tuple[str, Node]]:
        return iter(self._entries.items()) if self.is_map else iter(())

    def children(self) -> list[Node]:
        return list(self.value) if self.is_seq else []

    @property
    def where(self) -> Mark:
        """Where to point at this entry as a whole: its key if it has one."""
        return self.key_mark or self.mark

    def mark_at(self, path: Iterable[str | int], on_key: bool = False) -> Mark:
        """Where key path `path` is written: its value (its key, with `on_key`), else its
        nearest written ancestor."""
        node = self
        reached = True
        for step in path:
            if isinstance(step, int):
                items = node.children()
                child = items[step] if 0 <= step < len(items) else None
            else:
                child = node.get(step)
            if child is None:
                reached = False
                break
            node = child
        return node.where if on_key and reached else node.mark

    def plain(self) -> Any:
        """The value as plain Python data (dicts, lists, scalars)."""
        if self.kind == "map":
            return {k: v.plain() for k, v in self._entries.items()}
        if self.kind == "seq":
            return [child.plain() for child in self.value]
        return self.value


def _placed(place: Mark | _Place) -> Mark:
    if isinstance(place, Mark):
        return place
    path, mark = place
    return Mark(path, mark.line + 1, mark.column + 1)


def type_name(node: Node) -> str:
    """How a user would call the YAML type of a node, for error messages."""
    if node.is_map:
        return KIND_NAMES["mapping"]
    if node.is_seq:
        return KIND_NAMES["list"]
    return kind_name(node.value)


def load_text(text: str, path: str) -> tuple[Node | None, list[Problem]]:
    """Parse one YAML document; duplicate keys and non-string keys are problems."""
    parsed = _load_with_libyaml(text, path)
    if parsed is not None:
        return parsed
    loader = yaml.SafeLoader(text)
    problems: list[Problem] = []
    try:
        root = loader.get_single_node()
        if root is None:
            return None, problems
        return _document(loader, root, text, path)
    except yaml.MarkedYAMLError as exc:
        problems.append(yaml_problem(exc, text, path))
        return None, problems
    except yaml.YAMLError as exc:
        problems.append(Problem(path, 1, 1, f"not valid YAML: {exc}", "check the file encoding"))
        return None, problems
    finally:
        loader.dispose()


def _libyaml_loader() -> type[yaml.CSafeLoader] | None:
    """libyaml's safe loader (the same nodes and marks as the pure-Python one, ~20x faster),
    with PyYAML's tag resolution called from C made cheaper: the same lookup in PyYAML's own
    table of implicit tags (as it stands when redline is imported), without the list it
    builds on every scalar, and without the path-resolver hooks, which do nothing while no
    path resolver is registered."""
    base: type[yaml.CSafeLoader] | None = getattr(yaml, "CSafeLoader", None)
    if base is None:
        return None
    table = yaml.SafeLoader.yaml_implicit_resolvers
    scalar, seq, mapping = (
        yaml.SafeLoader.DEFAULT_SCALAR_TAG,
        yaml.SafeLoader.DEFAULT_SEQUENCE_TAG,
        yaml.SafeLoader.DEFAULT_MAPPING_TAG,
    )

    # Each first character's resolvers, then those for any first character, as PyYAML
    # tries them; tuples made once rather than on every scalar.
    anywhere = tuple((str(tag), regexp) for tag, regexp in table.get(None, ()))
    by_first = {
        first: (*((str(tag), regexp) for tag, regexp in resolvers), *anywhere)
        for first, resolvers in table.items()
        if first is not None
    }
    scalar_node, sequence_node = yaml.ScalarNode, yaml.SequenceNode

    def resolve(self: yaml.CSafeLoader, kind: type, value: Any, implicit: Any) -> str:
        if kind is scalar_node:
            if implicit[0]:
                for tag, regexp in by_first.get(value[:1], anywhere):
                    if regexp.match(value):
                        return tag
            return scalar
        return seq if kind is sequence_node else mapping

    members: dict[str, Any] = {"resolve": resolve}
    if not yaml.SafeLoader.yaml_path_resolvers:
        members["descend_resolver"] = staticmethod(operator.is_)
        members["ascend_resolver"] = staticmethod(int)
    return type("_LibyamlLoader", (base,), members)


_CLoader = _libyaml_loader()


def _load_with_libyaml(text: str, path: str) -> tuple[Node | None, list[Problem]] | None:
    """Parse valid YAML fast; None when it fails, and the pure-Python loader reports why
    (its messages name the offending character; the line and column are the same)."""
    if _CLoader is None:
        return None
    loader = _CLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None, []
        return _document(loader, root, text, path)
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()


def yaml_problem(exc: yaml.MarkedYAMLError, text: str, path: str) -> Problem:
    """Both of PyYAML's marks, in its own words: the problem, and where its context began.

    An unclosed quote or bracket is only noticed at the end of the file; the place worth
    pointing at is then where it opened, so the problem is reported there.
    """
    problem, context = exc.problem_mark, exc.context_mark
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    at_end = problem is not None and (problem.line + 1 > lines or problem.index >= len(text))
    parts = []
    if exc.context:
        parts.append(exc.context + (f" at {_at(context)}" if context is not None else ""))
    if exc.problem:
        where = f" at {_at(problem)}" if problem is not None else ""
        parts.append(exc.problem + where + (" (the end of the file)" if at_end else ""))
    primary = context if (at_end or problem is None) and context is not None else problem
    line, column = (primary.line + 1, primary.column + 1) if primary is not None else (1, 1)
    hint = "check indentation and quoting between these two places"
    if context is None or problem is None:
        hint = "check indentation and quoting near here"
    return Problem(path, line, column, "not valid YAML: " + ", ".join(parts), hint)


def _at(mark: yaml.Mark) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


def load_file(path: Path, display: str | None = None) -> tuple[Node | None, list[Problem]]:
    """Read and parse a YAML file (UTF-8)."""
    shown = display if display is not None else str(path)
    try:
        data = read_bytes(path)
    except OSError as exc:
        return None, [Problem(shown, 0, 0, f"cannot read: {exc.strerror}")]
    return load_bytes(data, shown)


def load_bytes(data: bytes, shown: str) -> tuple[Node | None, list[Problem]]:
    """Parse a YAML file's bytes (UTF-8), already read; `shown` names it in problems."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column, message = utf8_problem(exc)
        return None, [Problem(shown, line, column, message, "save the file as UTF-8")]
    return load_text(text, shown)


#: A plain string's tag: its value is the scalar's text (what the constructor returns).
_STR_TAG = "tag:yaml.org,2002:str"
#: Keys whose mapping PyYAML rewrites before constructing it (`<<` merges, `=` values).
_MERGE_TAG = "tag:yaml.org,2002:merge"
_REWRITTEN_KEYS = frozenset({_MERGE_TAG, "tag:yaml.org,2002:value"})


#: How many values a document may hold once its aliases are expanded: far more than any
#: case file, far fewer than exhaust memory (a file of nested aliases doubles at each level).
MAX_VALUES = 1_000_000

_Loader = yaml.SafeLoader | yaml.CSafeLoader


class _AliasProblem(Exception):
    """A document whose aliases cannot be read as values: one that contains itself, or
    one that expands past `MAX_VALUES`."""

    def __init__(self, place: _Place, message: str, hint: str) -> None:
        super().__init__(message)
        self.problem = _placed(place).problem(message, hint)


class _Expansion:
    """The values read so far, and the collections being read (an alias back into one of
    them would never end)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.left = MAX_VALUES
        self.open: set[int] = set()

    def enter(self, node: yaml.Node, key_mark: _Place | None) -> None:
        """Count `node` (reached from the key at `key_mark`, if any) as read."""
        self.left -= 1
        if self.left < 0:
            raise _AliasProblem(
                key_mark or (self.path, node.start_mark),
                f"the document's aliases expand to more than {MAX_VALUES:,} values",
                "write the values out, or use fewer nested aliases (*name)",
            )
        if id(node) in self.open:
            raise _AliasProblem(
                key_mark or (self.path, node.start_mark),
                "an alias (*name) refers to a value that contains it",
                "a value cannot contain itself; copy what you need instead",
            )


def _document(
    loader: _Loader, root: yaml.Node, text: str, path: str
) -> tuple[Node | None, list[Problem]]:
    """The document's nodes and the problems of its keys; an alias that never ends is the
    document's one problem."""
    problems: list[Problem] = []
    # Only an alias (`*name`, so a `*` in the text) reaches a node twice: without one the
    # document holds no more values than it writes, and none contains itself.
    seen = _Expansion(path) if "*" in text else None
    try:
        return _convert(loader, root, path, None, problems, seen), problems
    except _AliasProblem as exc:
        return None, [exc.problem]


def _value(loader: _Loader, node: yaml.Node) -> Any:
    if node.tag == _STR_TAG and type(node) is yaml.ScalarNode:
        return node.value
    return loader.construct_object(node, deep=True)


_SequenceNode, _ScalarNode = yaml.SequenceNode, yaml.ScalarNode


def _convert(
    loader: _Loader,
    node: yaml.Node,
    path: str,
    key_mark: _Place | None,
    problems: list[Problem],
    seen: _Expansion | None,
) -> Node:
    if seen is not None:
        seen.enter(node, key_mark)
    kind = type(node)
    if kind is _ScalarNode:
        return Node(_value(loader, node), (path, node.start_mark), key_mark)
    if seen is not None:
        seen.open.add(id(node))
    if kind is _SequenceNode:
        items = [_convert(loader, child, path, None, problems, seen) for child in node.value]
        if seen is not None:
            seen.open.discard(id(node))
        return Node(items, (path, node.start_mark), key_mark, "seq")
    #: The keys written in this mapping (None: all are); the others came from a `<<`
    #: merge, and a key written here overrides them as YAML says, without a problem.
    own: set[int] | None = None
    for key_node, _ in node.value:
        if key_node.tag in _REWRITTEN_KEYS:
            own = {id(key) for key, _ in node.value if key.tag != _MERGE_TAG}
            loader.flatten_mapping(cast(yaml.MappingNode, node))
            break
    merged: set[str] = set()
    entries: dict[str, Node] = {}
    for key_node, value_node in node.value:
        kmark = (path, key_node.start_mark)
        key = _value(loader, key_node)
        if not isinstance(key, str):
            problems.append(
                _placed(kmark).problem(
                    f"key {key!r} is not a string",
                    "quote it, or check that a list item is not written as a key",
                )
            )
            key = str(key)
        overrides = False
        if own is not None:
            overrides = key in merged
            if id(key_node) not in own:
                merged.add(key)
                overrides = True
            else:
                merged.discard(key)
        if key in entries and not overrides:
            first = entries[key].where
            problems.append(
                _placed(kmark).problem(
                    f"duplicate key {key!r} (first written at line {first.line})",
                    "keep only one; YAML would silently use the last",
                )
            )
        entries[key] = _convert(loader, value_node, path, kmark, problems, seen)
    if seen is not None:
        seen.open.discard(id(node))
    return Node(None, (path, node.start_mark), key_mark, "map", entries)


def load_data(text: str, path: str) -> tuple[Any, Problem | None]:
    """One YAML document as plain data, without positions: for callers that only compare
    or look up values (the guard, the cause analysis). Invalid YAML is the same problem,
    at the same place, as `load_text` reports."""
    loader = (_CLoader or yaml.SafeLoader)(text)
    try:
        return loader.get_single_data(), None
    except yaml.YAMLError:
        pass
    finally:
        loader.dispose()
    _, problems = load_text(text, path)
    return None, problems[0] if problems else Problem(path, 1, 1, "not valid YAML")


def line_at(text: str, path: Iterable[str | int]) -> int:
    """The line (1-based) where key path `path` is written in a YAML document, or its nearest
    written ancestor's; 0 when the text is not YAML. Composes only (libyaml when present),
    for callers that need one position, not the values."""
    try:
        node = yaml.compose(text, Loader=_CLoader or yaml.SafeLoader)
    except yaml.YAMLError:
        return 0
    line = node.start_mark.line + 1 if node is not None else 0
    for step in path:
        child: yaml.Node | None = None
        if isinstance(step, int) and isinstance(node, yaml.SequenceNode):
            child = node.value[step] if 0 <= step < len(node.value) else None
            line = child.start_mark.line + 1 if child is not None else line
        elif isinstance(step, str) and isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == step:
                    line, child = key.start_mark.line + 1, value
                    break
        if child is None:
            break
        node = child
    return line


def plain_data(data: bytes, path: str = "") -> Any:
    """A YAML file's bytes as plain data (None when empty); ValueError when they are not
    UTF-8 YAML."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(utf8_problem(exc)[2]) from None
    value, problem = load_data(text, path)
    if problem is not None:
        raise ValueError(str(problem))
    return value


def file_bytes(path: str) -> bytes | None:
    """A file's bytes by its path, None when there is no such file (a case reader's `Reader`)."""
    try:
        return read_bytes(path)
    except OSError:
        return None


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """A whole file's bytes, by the operating system's calls alone: a suite of 100,000 case
    files is read once each, and Python's buffered file objects add a third to every read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        chunks = []
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


_CHUNK = 1 << 20


def read_verbatim(path: Path) -> str:
    """A fixture's text exactly as stored: no newline, whitespace or BOM normalisation."""
    return path.read_bytes().decode("utf-8")
