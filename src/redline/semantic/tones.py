"""Tone templates: shipped in `tones.yaml`, extended or overridden by a user YAML file."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from redline.documents.reading import NodeReader
from redline.documents.yamlsource import Mark, load_text
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
    """A tones file: `tones:` mapping each tone name to its example sentences."""
    root, problems = load_text(text, where)
    read = NodeReader(problems)
    tones = root.get("tones") if root is not None else None
    if not problems and (tones is None or not tones.is_map or not tones.keys()):
        read.add(
            (tones or root).where if root is not None else Mark(where, 1, 1),
            "expected a mapping `tones:` of tone name → list of sentences",
            "tones:\n  apologetic: [We are sorry for the trouble.]",
        )
    book: dict[str, tuple[str, ...]] = {}
    for name, templates in tones.items() if tones is not None else ():
        if not templates.is_seq or not templates.children():
            expected = "a non-empty list of sentences"
            if templates.is_seq:
                read.add(templates.where, f"`tones.{name}` is empty: it needs {expected}")
            else:
                read.wrong_type(templates, f"tones.{name}", expected, "[...]")
            continue
        sentences = [
            read.text(t, f"tones.{name}", example="a sentence") for t in templates.children()
        ]
        if all(sentence is not None for sentence in sentences):
            book[name] = tuple(str(sentence).strip() for sentence in sentences)
    if problems:
        raise ConfigError("\n".join(str(p) for p in sorted(problems)))
    return book
