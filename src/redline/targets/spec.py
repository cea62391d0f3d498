"""What a suite's `target:` says: which code answers, where its prompt lives, its limits.

Every key of a target is declared once, beside the providers' options
(`redline.provider_options`: `TARGET_OPTIONS`, `HTTP_TARGET_OPTIONS`); the suite loader
reads a written `target:` against those declarations, so `redline validate` reports an
unknown key or a bad value at its file:line before anything is called. Paths
(`root`, `prompt_files`, `code`) are relative to the suite folder, like every path of a
suite.yaml; `prompt_files` and `code` are globs under `root`.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from redline.casemodel import TARGET_KEY
from redline.casemodel.effective import KeyReport, declare_suite_key
from redline.casemodel.values import did_you_mean, kind_name
from redline.provider_options import (
    HTTP_CLIENT_KEYS,
    HTTP_TARGET_OPTIONS,
    TARGET_OPTIONS,
    Option,
)

#: The three ways a target is called; exactly one is written.
KINDS = ("python", "http", "command")
_PYTHON_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_ENV_USE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: Folders a default `code:` glob never descends into (environments, caches, history).
SKIPPED_DIRS = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", ".redline"})


class TargetKind(StrEnum):
    PYTHON = "python"
    HTTP = "http"
    COMMAND = "command"


#: Seconds a sample may take when `timeout_s` is not written (its declared default).
DEFAULT_TIMEOUT_S = float(next(o.default for o in TARGET_OPTIONS if o.key == "timeout_s"))


@dataclass(frozen=True)
class HttpSpec:
    url: str
    method: str = "POST"
    headers: Mapping[str, str] = field(default_factory=dict)
    body: object = None
    answer: str = "$"
    tool_calls: str | None = None
    usage: str | None = None
    model: str | None = None
    #: The HTTP client's options (retries, limits, trust) as the declarations read them.
    client: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TargetSpec:
    """A suite's target as written, paths resolved against the suite folder."""

    kind: TargetKind
    #: `module:function`, the command's argv, or the endpoint URL.
    ref: str
    root: Path
    argv: tuple[str, ...] = ()
    http: HttpSpec | None = None
    prompt_globs: tuple[str, ...] = ()
    code_globs: tuple[str, ...] = ()
    model_env: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    workers: int | None = None
    max_memory_mb: int | None = None
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """How messages and the run record name the target: `python:app.bot:answer`."""
        return f"{self.kind}:{self.ref}"

    @property
    def travels_in_time(self) -> bool:
        """Whether an older checkout of the code can be run (not a deployed endpoint)."""
        return self.kind is not TargetKind.HTTP

    def model_choice(self) -> str | None:
        """How the target is told which model to use, in words; None when it cannot be."""
        if self.model_env:
            return f"the environment variable {self.model_env}"
        if self.http is not None and (self.http.body is None or _reads_model(self.http.body)):
            return "the `model` of the request body"
        return None

    def prompt_files(self) -> tuple[Path, ...]:
        return expand_globs(self.root, self.prompt_globs)

    def code_files(self) -> tuple[Path, ...]:
        """The app's code besides its prompt files: `code:` globs, else what the target
        runs (a python target's top-level package, a command's files under root)."""
        prompts = set(self.prompt_files())
        found = expand_globs(self.root, self.code_globs or self._default_code())
        return tuple(p for p in found if p not in prompts)

    def _default_code(self) -> tuple[str, ...]:
        if self.kind is TargetKind.PYTHON:
            top = self.ref.split(":", 1)[0].split(".", 1)[0]
            if (self.root / top).is_dir():
                return (f"{top}/**/*",)
            return (f"{top}.py",)
        if self.kind is TargetKind.COMMAND:
            return tuple(a for a in self.argv if (self.root / a).is_file())
        return ()


def glob_matcher(globs: Sequence[str]) -> Callable[[str], bool]:
    """Whether a `/`-separated path relative to the target's root matches one of `globs`
    (`*` and `?` within one folder, `**` across any number of them): the one reading of
    these globs, for the run (files on disk) and the guard (files of a commit)."""
    parts = []
    for pattern in globs:
        regex = ""
        rest = pattern.strip().removeprefix("./")
        i = 0
        while i < len(rest):
            if rest.startswith("**/", i):
                regex, i = regex + "(?:.*/)?", i + 3
            elif rest.startswith("**", i):
                regex, i = regex + ".*", i + 2
            elif rest[i] == "*":
                regex, i = regex + "[^/]*", i + 1
            elif rest[i] == "?":
                regex, i = regex + "[^/]", i + 1
            else:
                regex, i = regex + re.escape(rest[i]), i + 1
        parts.append(regex)
    compiled = re.compile("|".join(f"(?:{p})" for p in parts)) if parts else None
    return lambda path: compiled is not None and compiled.fullmatch(path) is not None


def _reads_model(body: object) -> bool:
    """Whether an http body template hands the target the `model` the suite pins."""
    if isinstance(body, str):
        return bool(re.search(r"\{\{[^}]*\bmodel\b", body))
    if isinstance(body, Mapping):
        return any(_reads_model(v) for v in body.values())
    if isinstance(body, list):
        return any(_reads_model(v) for v in body)
    return False


def expand_globs(root: Path, globs: tuple[str, ...]) -> tuple[Path, ...]:
    """The files under `root` that `globs` match, in folder order."""
    if not globs:
        return ()
    matches = glob_matcher(globs)
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        relative = os.path.relpath(folder, root)
        for name in sorted(files):
            path = name if relative == "." else f"{Path(relative).as_posix()}/{name}"
            if matches(path):
                found.append(Path(folder) / name)
    return tuple(found)


def resolve_env(value: str, env: Mapping[str, str]) -> tuple[str, list[str]]:
    """`value` with each `${VAR}` replaced from `env`, and the names that are not set."""
    missing: list[str] = []

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env:
            missing.append(name)
            return ""
        return env[name]

    return _ENV_USE.sub(one, value), missing


def env_names(value: str) -> list[str]:
    return _ENV_USE.findall(value)


KeyPath = tuple[str | int, ...]
_KINDS_HINT = "e.g. target: {python: app.bot:answer}"


def read_target(value: Any, folder: str, report: KeyReport) -> TargetSpec | None:
    """A suite's `target:` (its plain value) as a spec, each problem reported at its key
    path; the suite loader and the guard read it alike (see `declare_suite_key`). Whether
    `root` and `prompt_files` exist is for the loader, which has the files."""
    return _TargetReader(Path(folder), report).read(value)


class _TargetReader:
    def __init__(self, folder: Path, report: KeyReport) -> None:
        self.folder = folder
        self.report = report
        self.problems = 0

    def add(self, at: KeyPath, message: str, hint: str = "") -> None:
        self.problems += 1
        self.report(at, message, hint)

    def declared(
        self, data: Mapping[str, Any], at: KeyPath, options: tuple[Option, ...], where: str
    ) -> dict[str, Any]:
        """The values written in `data`, each checked against its declaration (an unusable
        one is reported and read as its default), the defaults filled in."""
        keys = [o.key for o in options]
        for key in data:
            if key not in keys:
                self.add(
                    (*at, str(key)),
                    f"unknown key {key!r}{did_you_mean(str(key), keys)}",
                    f"allowed in {where}: {', '.join(sorted(keys))}",
                )
        values = {o.key: o.default for o in options}
        for option in options:
            if option.key not in data:
                continue
            value = data[option.key]
            problem = option.problem(value)
            if problem:
                example = option.suggestion
                hint = f"e.g. {option.key}: {example} ({option.meaning})" if example else ""
                self.add((*at, option.key), f"{where}.{problem}", hint or option.meaning)
            else:
                values[option.key] = value
        return values

    def read(self, data: Any) -> TargetSpec | None:
        at: KeyPath = ("target",)
        if not isinstance(data, dict):
            self.add(at, f"`target` must be a mapping, not {kind_name(data)}", _KINDS_HINT)
            return None
        values = self.declared(data, at, TARGET_OPTIONS, "target")
        kinds = [k for k in KINDS if data.get(k) is not None]
        if len(kinds) != 1:
            named = ", ".join(kinds) if kinds else "none of them"
            message = f"`target` names exactly one of python, http, command (found {named})"
            self.add(at, message, _KINDS_HINT)
            return None
        kind = TargetKind(kinds[0])
        ref, argv, http = self.kind_value(kind, data[kind.value])
        env = self.strings(data.get("env"), (*at, "env"))
        if self.problems or ref is None:
            return None
        return TargetSpec(
            kind=kind,
            ref=ref,
            root=Path(os.path.normpath(self.folder / str(values["root"]))),
            argv=argv,
            http=http,
            prompt_globs=_texts(values["prompt_files"]),
            code_globs=_texts(values["code"]),
            model_env=values["model_env"] or None,
            timeout_s=float(values["timeout_s"]),
            workers=values["workers"],
            max_memory_mb=values["max_memory_mb"],
            env=env,
        )

    def kind_value(
        self, kind: TargetKind, value: Any
    ) -> tuple[str | None, tuple[str, ...], HttpSpec | None]:
        """What names the code; nothing when its declaration refused the value already."""
        option = next(o for o in TARGET_OPTIONS if o.key == kind.value)
        if option.problem(value):
            return None, (), None
        at: KeyPath = ("target", kind.value)
        if kind is TargetKind.PYTHON:
            ref = str(value).strip()
            if not _PYTHON_REF.match(ref):
                self.add(
                    at,
                    f"`python` must be `package.module:function`, got {ref!r}",
                    "e.g. python: app.bot:answer",
                )
                return None, (), None
            return ref, (), None
        if kind is TargetKind.COMMAND:
            if isinstance(value, list):
                argv = tuple(str(v) for v in value)
            else:
                try:
                    argv = tuple(shlex.split(str(value)))
                except ValueError as exc:
                    self.add(at, f"`command` cannot be split into words: {exc}")
                    return None, (), None
            return shlex.join(argv), argv, None
        http = self.http(value, at)
        return (http.url if http else None), (), http

    def http(self, data: Mapping[str, Any], at: KeyPath) -> HttpSpec | None:
        values = self.declared(data, at, HTTP_TARGET_OPTIONS, "target.http")
        if "url" not in data:
            self.add(at, "`target.http` needs `url:`", "e.g. url: http://127.0.0.1:8000/answer")
            return None
        method = str(values["method"]).upper()
        if method not in ("POST", "PUT"):
            self.add((*at, "method"), f"`method` must be POST or PUT, got {method!r}")
        headers = self.strings(data.get("headers"), (*at, "headers"))
        for key in ("answer", "tool_calls", "usage", "model"):
            path = values[key]
            if path is not None and not _is_path(str(path)):
                self.add(
                    (*at, key),
                    f"`{key}` must be a path like $.answer or $.choices[0].text, got {path!r}",
                )
        if self.problems:
            return None
        return HttpSpec(
            url=str(values["url"]),
            method=method,
            headers=headers,
            body=values["body"],
            answer=str(values["answer"]),
            tool_calls=values["tool_calls"],
            usage=values["usage"],
            model=values["model"],
            client={key: values[key] for key in HTTP_CLIENT_KEYS},
        )

    def strings(self, data: Any, at: KeyPath) -> dict[str, str]:
        """A mapping of texts (headers, environment variables); its declaration has checked
        that it is a mapping."""
        if not isinstance(data, dict):
            return {}
        out: dict[str, str] = {}
        for name, value in data.items():
            if value is None or isinstance(value, dict | list):
                self.add((*at, str(name)), f"`{name}` must be text, not {kind_name(value)}")
                continue
            out[str(name)] = str(value)
        return out


declare_suite_key(TARGET_KEY, read_target)


_PATH = re.compile(r"^\$(\.[A-Za-z_][\w-]*|\[-?\d+\]|\[['\"][^'\"]+['\"]\])*$")


def _texts(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _is_path(text: str) -> bool:
    return bool(_PATH.match(text.strip()))


def path_steps(path: str) -> list[str | int]:
    """The keys and indices of a `$.a.b[0]` path."""
    steps: list[str | int] = []
    for match in re.finditer(r"\.([A-Za-z_][\w-]*)|\[(-?\d+)\]|\[['\"]([^'\"]+)['\"]\]", path):
        name, index, quoted = match.groups()
        steps.append(int(index) if index is not None else (name or quoted))
    return steps
