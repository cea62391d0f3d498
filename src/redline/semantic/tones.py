"""Tone templates: shipped in `tones.yaml`, extended or overridden by a user YAML file."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path

import yaml

from redline.errors import ConfigError, relpath

#: Template groups used by grounded-in's courtesy detection, not requested as tones.
COURTESY_GROUP = "courtesy"
INFORMATIONAL_GROUP = "informational"
HELPER_GROUPS = frozenset({COURTESY_GROUP, INFORMATIONAL_GROUP})
#: Tones whose sentences carry feeling or politeness rather than claims.
COURTESY_TONES = frozenset({COURTESY_GROUP, "apologetic", "empathetic", "enthusiastic"})

ToneBook = Mapping[str, tuple[str, ...]]


def load_tones(extra: Path | None = None) -> dict[str, tuple[str, ...]]:
    """Shipped templates, with each tone named in `extra` replacing the shipped one."""
    shipped = resources.files("redline.semantic").joinpath("tones.yaml").read_text("utf-8")
    book = _parse(shipped, "redline/semantic/tones.yaml")
    if extra is not None:
        if not extra.is_file():
            raise ConfigError(f"[tool.redline.semantic] tones: {relpath(extra)} does not exist")
        book.update(_parse(extra.read_text(encoding="utf-8"), relpath(extra)))
    return book


def requestable_tones(book: ToneBook) -> list[str]:
    return sorted(t for t in book if t not in HELPER_GROUPS)


def _parse(text: str, where: str) -> dict[str, tuple[str, ...]]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        raise ConfigError(f"{where}{line}: not valid YAML: {exc}") from None
    tones = data.get("tones") if isinstance(data, dict) else None
    if not isinstance(tones, dict) or not tones:
        raise ConfigError(f"{where}: expected a mapping `tones:` of tone name → list of sentences")
    problems: list[str] = []
    book: dict[str, tuple[str, ...]] = {}
    for name, templates in tones.items():
        if not isinstance(templates, list) or not templates:
            problems.append(f"{where}: tones.{name} must be a non-empty list of sentences")
            continue
        bad = [t for t in templates if not isinstance(t, str) or not t.strip()]
        if bad:
            problems.append(f"{where}: tones.{name} has entries that are not sentences: {bad!r}")
            continue
        book[str(name)] = tuple(t.strip() for t in templates)
    if problems:
        raise ConfigError("\n".join(problems))
    return book
