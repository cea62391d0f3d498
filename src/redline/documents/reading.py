"""Typed reads of positioned values: the one way redline reads its YAML and TOML inputs.

Case files, assertion specs, rubrics, labels and the configuration are all read into
`Node`s (see `yamlsource` and `tomlsource`); a `NodeReader` then reads each value as the
kind it must be. An unusable value becomes one `Problem` at its file:line:column with a
hint, and the read returns None, so a caller reads everything and reports every
problem of a file at once.
"""

from __future__ import annotations

from collections.abc import Iterable

from redline.casemodel.values import is_number, is_whole, out_of_bounds
from redline.documents.yamlsource import Mark, Node, did_you_mean, type_name
from redline.errors import Problem


class NodeReader:
    """Reads values of one file, recording a problem for each unusable one.

    `label` prefixes every message (an assertion's type, say); each read takes the value's
    node (None when the key is absent, which returns `default`) and the key it was
    written under, for the message and its `e.g. key: example` hint.
    """

    def __init__(self, problems: list[Problem], label: str = "", assign: str = ": ") -> None:
        self.problems = problems
        self.label = label
        #: How the file's language writes `key<assign>value` in a hint (YAML `: `, TOML ` = `).
        self.assign = assign

    def add(self, mark: Mark, message: str, hint: str = "") -> None:
        self.problems.append(mark.problem(self.label + message, hint))

    def wrong_type(self, node: Node, key: str, expected: str, example: str = "") -> None:
        hint = f"e.g. {key}{self.assign}{example}" if example else ""
        self.add(node.mark, f"`{key}` must be {expected}, not {type_name(node)}", hint)

    def unknown_keys(self, node: Node, allowed: Iterable[str], where: str) -> None:
        """Every key of mapping `node` that is not `allowed`, with the closest allowed one."""
        options = frozenset(allowed)
        for key, child in node.items():
            if key not in options:
                self.add(
                    child.where,
                    f"unknown key {key!r}{did_you_mean(key, options)}",
                    f"allowed in {where}: {', '.join(sorted(options))}",
                )

    def mapping(self, node: Node | None, key: str, example: str) -> Node | None:
        if node is None:
            return None
        if not node.is_map:
            self.wrong_type(node, key, "a mapping", example)
            return None
        return node

    def text(
        self, node: Node | None, key: str, default: str | None = None, example: str = "some-text"
    ) -> str | None:
        """A non-empty string."""
        if node is None:
            return default
        if node.is_scalar and isinstance(node.value, str) and not node.value.strip():
            self.add(node.mark, f"`{key}` is empty", f"e.g. {key}{self.assign}{example}")
            return None
        if not node.is_scalar or not isinstance(node.value, str):
            self.wrong_type(node, key, "a non-empty string", example)
            return None
        return node.value

    def whole(
        self,
        node: Node | None,
        key: str,
        default: int | None = None,
        *,
        minimum: int | None = None,
        maximum: int | None = None,
        example: str = "",
        expected: str = "a whole number",
    ) -> int | None:
        if node is None:
            return default
        value = node.value
        if not node.is_scalar or not is_whole(value):
            self.wrong_type(node, key, expected, example or str(default or minimum or 1))
            return None
        if not self.in_range(node, key, value, minimum, maximum):
            return None
        return int(value)

    def number(
        self,
        node: Node | None,
        key: str,
        default: float | None = None,
        *,
        minimum: float | None = None,
        maximum: float | None = None,
        exclusive_minimum: bool = False,
        example: str = "0.5",
        expected: str = "a number",
    ) -> float | None:
        if node is None:
            return default
        value = node.value
        if not node.is_scalar or not is_number(value):
            self.wrong_type(node, key, expected, example)
            return None
        if not self.in_range(node, key, value, minimum, maximum, exclusive_minimum, example):
            return None
        return float(value)

    def in_range(
        self,
        node: Node,
        key: str,
        value: float,
        minimum: float | None,
        maximum: float | None,
        exclusive_minimum: bool = False,
        example: str = "",
    ) -> bool:
        """Whether `value` is within its bounds; else a problem naming the bound it crossed,
        with the nearest allowed value as the example."""
        problem = out_of_bounds(
            key, value, minimum, maximum, exclusive_minimum, example, self.assign
        )
        if problem is None:
            return True
        self.add(node.mark, *problem)
        return False

    def boolean(self, node: Node | None, key: str, default: bool | None = None) -> bool | None:
        if node is None:
            return default
        if not node.is_scalar or not isinstance(node.value, bool):
            self.wrong_type(node, key, "true or false", "true")
            return None
        return node.value

    def choice(
        self, node: Node | None, key: str, options: Iterable[str], default: str | None, hint: str
    ) -> str | None:
        """One of `options`, with the closest one suggested."""
        if node is None:
            return default
        allowed = tuple(options)
        if not node.is_scalar or node.value not in allowed:
            shown = node.value if node.is_scalar else type_name(node)
            suggestion = did_you_mean(str(shown), allowed)
            self.add(
                node.mark,
                f"`{key}` must be one of {', '.join(allowed)}, got {shown!r}{suggestion}",
                hint,
            )
            return None
        return str(node.value)
