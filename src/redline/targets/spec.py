"""What a suite's `target:` says: which code answers, where its prompt lives, its limits.

Every key of a target is declared once below (`TARGET_OPTIONS`, `HTTP_OPTIONS`); the
suite loader reads a written `target:` against these declarations, so `redline validate`
reports an unknown key or a bad value at its file:line before anything is called. Paths
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

from redline.documents.reading import NodeReader
from redline.documents.yamlsource import Node

#: The three ways a target is called; exactly one is written.
KINDS = ("python", "http", "command")
_PYTHON_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENV_USE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: Folders a default `code:` glob never descends into (environments, caches, history).
SKIPPED_DIRS = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", ".redline"})


class TargetKind(StrEnum):
    PYTHON = "python"
    HTTP = "http"
    COMMAND = "command"


@dataclass(frozen=True)
class Option:
    """One key of `target:` (or of `target.http:`): its meaning, for messages and docs."""

    key: str
    meaning: str
    example: str


TARGET_OPTIONS: tuple[Option, ...] = (
    Option("python", "a function `package.module:function` called with the case", "app.bot:answer"),
    Option("http", "your app's endpoint: url, method, headers, body, answer paths", "{url: ...}"),
    Option("command", "an executable reading the case as JSON on stdin", "[python, app/cli.py]"),
    Option("root", "the app's folder (sys.path for python, working folder for command)", "../.."),
    Option("prompt_files", "globs of the app's prompt files, under root", "[app/prompts/**/*.j2]"),
    Option("code", "globs of the rest of the app's code, hashed as one input", "[app/**/*.py]"),
    Option("model_env", "the environment variable the app reads its model id from", "APP_MODEL"),
    Option("timeout_s", "seconds one sample may take before the target is stopped", "60"),
    Option("workers", "python worker processes (default: the run's concurrency)", "4"),
    Option("max_memory_mb", "memory one python worker or command may use", "1024"),
    Option("env", "environment variables set for the target (values may use ${VAR})", "{}"),
)
HTTP_OPTIONS: tuple[Option, ...] = (
    Option("url", "the endpoint (http or https)", "http://127.0.0.1:8000/answer"),
    Option("method", "POST (default) or PUT", "POST"),
    Option("headers", "request headers; ${VAR} reads the environment, never written out", "{}"),
    Option("body", "the JSON body; strings are templates over the case", "{question: '{{q}}'}"),
    Option("answer", "JSONPath-style path of the answer text in the response", "$.answer"),
    Option("tool_calls", "path of the tool calls in the response", "$.tool_calls"),
    Option("usage", "path of {input_tokens, output_tokens} in the response", "$.usage"),
    Option("model", "path of the model id the app used", "$.model"),
    Option("max_retries", "retries after a transport error, 5xx or 429", "4"),
)
DEFAULT_TIMEOUT_S = 60.0


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

    def read(self, node: Node) -> TargetSpec | None:
        if not node.is_map:
            self.wrong_type(node, "target", "a mapping", "{python: app.bot:answer}")
            return None
        before = len(self.problems)
        self.unknown_keys(node, [o.key for o in TARGET_OPTIONS], "target")
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
        root = self.folder
        root_text = self.text(node.get("root"), "root", example="../..")
        if root_text is not None:
            root = Path(os.path.normpath(self.folder / root_text))
            if not root.is_dir():
                self.add(
                    node.get("root").mark,  # type: ignore[union-attr]
                    f"target root {root_text!r} is not a folder",
                    "root is relative to the suite folder",
                )
        ref, argv, http = self.kind_value(kind, node.get(kind.value), root)  # type: ignore[arg-type]
        prompt_globs = self.globs(node.get("prompt_files"), "prompt_files")
        code_globs = self.globs(node.get("code"), "code")
        model_env = self.env_name(node.get("model_env"), "model_env")
        timeout = self.number(
            node.get("timeout_s"),
            "timeout_s",
            DEFAULT_TIMEOUT_S,
            minimum=0,
            exclusive_minimum=True,
            example="60",
        )
        workers = self.whole(node.get("workers"), "workers", None, minimum=1, example="4")
        memory = self.whole(node.get("max_memory_mb"), "max_memory_mb", None, minimum=16)
        env = self.strings(node.get("env"), "env")
        if len(self.problems) > before or ref is None or timeout is None:
            return None
        spec = TargetSpec(
            kind=kind,
            ref=ref,
            root=root,
            argv=argv,
            http=http,
            prompt_globs=prompt_globs,
            code_globs=code_globs,
            model_env=model_env,
            timeout_s=timeout,
            workers=workers,
            max_memory_mb=memory,
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
        if kind is TargetKind.PYTHON:
            ref = self.text(node, "python", example="app.bot:answer")
            if ref is not None and not _PYTHON_REF.match(ref.strip()):
                self.add(
                    node.mark,
                    f"`python` must be `package.module:function`, got {ref!r}",
                    "e.g. python: app.bot:answer",
                )
                return None, (), None
            return (ref.strip() if ref else None), (), None
        if kind is TargetKind.COMMAND:
            argv = self.argv(node)
            return (shlex.join(argv) if argv else None), argv, None
        http = self.http(node)
        return (http.url if http else None), (), http

    def argv(self, node: Node) -> tuple[str, ...]:
        if node.is_scalar and isinstance(node.value, str) and node.value.strip():
            try:
                return tuple(shlex.split(node.value))
            except ValueError as exc:
                self.add(node.mark, f"`command` cannot be split into words: {exc}")
                return ()
        if (
            node.is_seq
            and node.children()
            and all(c.is_scalar and isinstance(c.value, str) and c.value for c in node.children())
        ):
            return tuple(str(c.value) for c in node.children())
        self.wrong_type(node, "command", "a command line or a list of words", "[python, cli.py]")
        return ()

    def http(self, node: Node) -> HttpSpec | None:
        if self.mapping(node, "http", "{url: http://127.0.0.1:8000/answer}") is None:
            return None
        self.unknown_keys(node, [o.key for o in HTTP_OPTIONS], "target.http")
        url = self.text(node.get("url"), "url", example="http://127.0.0.1:8000/answer")
        if node.get("url") is None:
            self.add(node.where, "`target.http` needs `url:`", "e.g. url: http://127.0.0.1:8000/a")
        elif url is not None and not re.match(r"^https?://[^/\s]+", url):
            self.add(node.get("url").mark, f"`url` must be an http(s) URL, got {url!r}")  # type: ignore[union-attr]
            url = None
        method = self.choice(node.get("method"), "method", ("POST", "PUT"), "POST", "POST or PUT")
        headers = self.strings(node.get("headers"), "headers")
        paths = {}
        for key in ("answer", "tool_calls", "usage", "model"):
            value = self.text(node.get(key), key, example="$.answer")
            if value is not None and not _is_path(value):
                self.add(
                    node.get(key).mark,  # type: ignore[union-attr]
                    f"`{key}` must be a path like $.answer or $.choices[0].text, got {value!r}",
                )
                value = None
            paths[key] = value
        retries = self.whole(node.get("max_retries"), "max_retries", 4, minimum=0, maximum=10)
        body_node = node.get("body")
        if url is None or method is None or retries is None:
            return None
        return HttpSpec(
            url=url,
            method=method,
            headers=headers,
            body=None if body_node is None else body_node.plain(),
            answer=paths["answer"] or "$",
            tool_calls=paths["tool_calls"],
            usage=paths["usage"],
            model=paths["model"],
            max_retries=retries,
        )

    def globs(self, node: Node | None, key: str) -> tuple[str, ...]:
        if node is None:
            return ()
        items = [node] if node.is_scalar else node.children() if node.is_seq else None
        if items is None or not all(
            c.is_scalar and isinstance(c.value, str) and c.value.strip() for c in items
        ):
            self.wrong_type(node, key, "a glob or a list of globs", "[app/prompts/**/*.j2]")
            return ()
        return tuple(str(c.value) for c in items)

    def env_name(self, node: Node | None, key: str) -> str | None:
        name = self.text(node, key, example="APP_MODEL")
        if name is not None and not _ENV_NAME.match(name):
            self.add(node.mark, f"`{key}` must name an environment variable, got {name!r}")  # type: ignore[union-attr]
            return None
        return name

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


def _is_path(text: str) -> bool:
    return bool(_PATH.match(text.strip()))


def path_steps(path: str) -> list[str | int]:
    """The keys and indices of a `$.a.b[0]` path."""
    steps: list[str | int] = []
    for match in re.finditer(r"\.([A-Za-z_][\w-]*)|\[(-?\d+)\]|\[['\"]([^'\"]+)['\"]\]", path):
        name, index, quoted = match.groups()
        steps.append(int(index) if index is not None else (name or quoted))
    return steps
