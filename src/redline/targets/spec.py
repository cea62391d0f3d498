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

from redline.documents.reading import NodeReader
from redline.documents.yamlsource import Node
from redline.provider_options import HTTP_TARGET_OPTIONS, TARGET_OPTIONS, Option

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
    max_retries: int = 4
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0


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
        return _expand(self.root, self.prompt_globs)

    def code_files(self) -> tuple[Path, ...]:
        """The app's code besides its prompt files: `code:` globs, else what the target
        runs (a python target's top-level package, a command's files under root)."""
        prompts = set(self.prompt_files())
        found = _expand(self.root, self.code_globs or self._default_code())
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


def _expand(root: Path, globs: tuple[str, ...]) -> tuple[Path, ...]:
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


class TargetReader(NodeReader):
    """Reads `target:` of a suite.yaml into a `TargetSpec`, one problem per bad value."""

    def __init__(self, reader: NodeReader, folder: Path) -> None:
        super().__init__(reader.problems, reader.label, reader.assign)
        self.folder = folder

    def declared(self, node: Node, options: tuple[Option, ...], where: str) -> dict[str, Any]:
        """The values written in `node`, each checked against its declaration (an unusable
        one is reported at its line and read as its default), the defaults filled in."""
        self.unknown_keys(node, [o.key for o in options], where)
        values = {o.key: o.default for o in options}
        for option in options:
            child = node.get(option.key)
            if child is None:
                continue
            value = child.plain()
            problem = option.problem(value)
            if problem:
                example = option.suggestion
                hint = f"e.g. {option.key}: {example} ({option.meaning})" if example else ""
                self.add(child.mark, f"{where}.{problem}", hint or option.meaning)
            else:
                values[option.key] = value
        return values

    def read(self, node: Node) -> TargetSpec | None:
        if not node.is_map:
            self.wrong_type(node, "target", "a mapping", "{python: app.bot:answer}")
            return None
        before = len(self.problems)
        values = self.declared(node, TARGET_OPTIONS, "target")
        kinds = [k for k in KINDS if node.get(k) is not None]
        if len(kinds) != 1:
            named = ", ".join(kinds) if kinds else "none of them"
            self.add(
                node.where,
                f"`target` names exactly one of python, http, command (found {named})",
                "e.g. target: {python: app.bot:answer}",
            )
            return None
        kind = TargetKind(kinds[0])
        root = Path(os.path.normpath(self.folder / str(values["root"])))
        if not root.is_dir():
            self.add(
                node.get("root").mark if node.get("root") else node.where,  # type: ignore[union-attr]
                f"target root {values['root']!r} is not a folder",
                "root is relative to the suite folder",
            )
        ref, argv, http = self.kind_value(kind, node.get(kind.value), root)  # type: ignore[arg-type]
        env = self.strings(node.get("env"), "env")
        if len(self.problems) > before or ref is None:
            return None
        prompt_globs = _texts(values["prompt_files"])
        spec = TargetSpec(
            kind=kind,
            ref=ref,
            root=root,
            argv=argv,
            http=http,
            prompt_globs=prompt_globs,
            code_globs=_texts(values["code"]),
            model_env=values["model_env"] or None,
            timeout_s=float(values["timeout_s"]),
            workers=values["workers"],
            max_memory_mb=values["max_memory_mb"],
            env=env,
        )
        glob_node = node.get("prompt_files")
        for pattern in prompt_globs:
            if glob_node is not None and not _expand(root, (pattern,)):
                self.add(
                    glob_node.mark,
                    f"prompt_files {pattern!r} matches no file under {root}",
                    "globs are relative to the target's root (`**` matches any folders)",
                )
        return spec

    def kind_value(
        self, kind: TargetKind, node: Node, root: Path
    ) -> tuple[str | None, tuple[str, ...], HttpSpec | None]:
        """What names the code; nothing when its declaration refused the value already."""
        option = next(o for o in TARGET_OPTIONS if o.key == kind.value)
        if option.problem(node.plain()):
            return None, (), None
        if kind is TargetKind.PYTHON:
            ref = str(node.value)
            if not _PYTHON_REF.match(ref.strip()):
                self.add(
                    node.mark,
                    f"`python` must be `package.module:function`, got {ref!r}",
                    "e.g. python: app.bot:answer",
                )
                return None, (), None
            return ref.strip(), (), None
        if kind is TargetKind.COMMAND:
            argv = self.argv(node)
            return (shlex.join(argv) if argv else None), argv, None
        http = self.http(node)
        return (http.url if http else None), (), http

    def argv(self, node: Node) -> tuple[str, ...]:
        if node.is_scalar:
            try:
                return tuple(shlex.split(str(node.value)))
            except ValueError as exc:
                self.add(node.mark, f"`command` cannot be split into words: {exc}")
                return ()
        return tuple(str(c.value) for c in node.children())

    def http(self, node: Node) -> HttpSpec | None:
        values = self.declared(node, HTTP_TARGET_OPTIONS, "target.http")
        if node.get("url") is None:
            self.add(node.where, "`target.http` needs `url:`", "e.g. url: http://127.0.0.1:8000/a")
            return None
        method = str(values["method"]).upper()
        if method not in ("POST", "PUT"):
            self.add(node.get("method").mark, f"`method` must be POST or PUT, got {method!r}")  # type: ignore[union-attr]
        headers = self.strings(node.get("headers"), "headers")
        for key in ("answer", "tool_calls", "usage", "model"):
            value = values[key]
            if value is not None and not _is_path(str(value)):
                self.add(
                    node.get(key).mark,  # type: ignore[union-attr]
                    f"`{key}` must be a path like $.answer or $.choices[0].text, got {value!r}",
                )
                return None
        if method not in ("POST", "PUT"):
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
            max_retries=int(values["max_retries"]),
            backoff_base_s=float(values["backoff_base_s"]),
            backoff_max_s=float(values["backoff_max_s"]),
        )

    def strings(self, node: Node | None, key: str) -> dict[str, str]:
        if node is None:
            return {}
        if self.mapping(node, key, "{X-App: value}") is None:
            return {}
        out: dict[str, str] = {}
        for name, child in node.items():
            if not child.is_scalar or isinstance(child.value, (dict, list)) or child.value is None:
                self.wrong_type(child, f"{key}.{name}", "text", "value")
                continue
            out[name] = str(child.value)
        return out


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
