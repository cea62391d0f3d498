"""`{{var}}` placeholders in prompts and assertion values, and Jinja prompt templates."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}")


def placeholders(text: str) -> list[str]:
    """Variable names used in `text`, in order of first use."""
    return list(dict.fromkeys(m.group(1) for m in _PLACEHOLDER.finditer(text)))


def fill(text: str, values: Mapping[str, str]) -> tuple[str, list[str]]:
    """`text` with every known placeholder replaced verbatim, and the names that had no value."""
    missing: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in values:
            return values[name]
        if name not in missing:
            missing.append(name)
        return match.group(0)

    return _PLACEHOLDER.sub(replace, text), missing


# -- Jinja: prompts rendered as the app renders them -------------------------------------

#: Prompt files with these suffixes are always Jinja templates; other text is one when it
#: uses Jinja beyond a plain `{{var}}` (a block, a comment, a filter, an expression).
JINJA_SUFFIXES = (".j2", ".jinja", ".jinja2")
_JINJA_MARKS = re.compile(r"\{%|\{#")
_EXPRESSION = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)


class TemplateProblem(ValueError):
    """A template that cannot be read or rendered: `line` is 1-based within the template."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


def is_jinja(text: str, name: str = "") -> bool:
    """Whether `text` is rendered by Jinja (else by the plain `{{var}}` fill)."""
    if name.endswith(JINJA_SUFFIXES) or _JINJA_MARKS.search(text):
        return True
    return any(not _PLACEHOLDER.fullmatch(m.group(0)) for m in _EXPRESSION.finditer(text))


def _environment(folders: tuple[str, ...]) -> Any:
    from jinja2 import FileSystemLoader, StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(
        loader=FileSystemLoader(list(folders)),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


_ENVIRONMENTS: dict[tuple[str, ...], Any] = {}


def environment(folders: tuple[str, ...] = ()) -> Any:
    """The sandboxed, strict Jinja environment whose includes are read from `folders`."""
    found = _ENVIRONMENTS.get(folders)
    if found is None:
        found = _ENVIRONMENTS[folders] = _environment(folders)
    return found


def template_names(text: str, folders: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """(variables the template reads, templates it includes); TemplateProblem on bad syntax."""
    from jinja2 import TemplateSyntaxError, meta

    try:
        tree = environment(folders).parse(text)
    except TemplateSyntaxError as exc:
        raise TemplateProblem(f"template syntax error: {exc.message}", exc.lineno) from None
    names = sorted(meta.find_undeclared_variables(tree), key=text.find)
    included = [n for n in meta.find_referenced_templates(tree) if n is not None]
    return names, included


def template_vars(text: str, name: str = "") -> list[str]:
    """The vars a prompt text (from file `name`) reads: its `{{var}}`s, or a Jinja
    template's free names (none for a template that does not parse: its syntax error is
    reported where it is read)."""
    if not is_jinja(text, name):
        return placeholders(text)
    try:
        return template_names(text)[0]
    except TemplateProblem:
        return []


def render(
    text: str, values: Mapping[str, Any], *, name: str = "", folders: tuple[str, ...] = ()
) -> str:
    """`text` with the case's values: Jinja when the text is a template (see `is_jinja`),
    else each `{{var}}` filled verbatim. TemplateProblem on an undefined variable or an
    error inside the template, with the template's line."""
    if not is_jinja(text, name):
        return fill(text, {k: str(v) for k, v in values.items()})[0]
    from jinja2 import TemplateError, TemplateSyntaxError

    env = environment(folders)
    try:
        return str(env.from_string(text).render(dict(values)))
    except TemplateSyntaxError as exc:
        raise TemplateProblem(f"template syntax error: {exc.message}", exc.lineno) from None
    except TemplateError as exc:
        raise TemplateProblem(f"{type(exc).__name__}: {exc}", _template_line(exc)) from None


def _template_line(exc: BaseException) -> int:
    """The line of the template (not of redline) where rendering failed."""
    tb = exc.__traceback__
    line = 1
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line
