"""Suites and cases: loading and validation (docs/rules.md: A case is an incident;
A rate, not a boolean; Pin the model in one file).

A suite is a folder with `suite.yaml` and case files `*.yaml` beside it;
`retired/` holds cases that are no longer run. Every problem in every file is
collected, with file:line:column and a hint, before anything runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import functools
import gc
import json
import multiprocessing
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redline.assertions import (
    Assertion,
    Spec,
    assertion_type,
)
from redline.casemodel import (
    CASE_SUFFIXES,
    DEFAULT_MAX_STEPS,
    RETIRED_DIR,
    SUITE_FILE,
    TARGET_KEY,
    prompt_file,
)
from redline.casemodel.effective import (
    EffectiveAssertion,
    EffectiveCase,
    Issue,
    SuiteBar,
    effective_case,
    suite_bar,
)
from redline.documents.reading import NodeReader
from redline.documents.yamlsource import (
    Node,
    did_you_mean,
    file_bytes,
    load_bytes,
    load_file,
    load_text,
    read_bytes,
)
from redline.documents.yamlsource import type_name as yaml_type
from redline.errors import Problem, ProblemsError, relpath
from redline.suite.parsecache import CheckedCase, ParseCache
from redline.targets.spec import TargetSpec, expand_globs
from redline.text.templates import TemplateProblem, is_jinja, render, template_names
from redline.vocabulary.messages import (
    Message,
    ResponseFormat,
    Role,
    TextPart,
    ToolChoice,
    ToolDefinition,
    ToolFixture,
)
from redline.vocabulary.outcome import scale_required
from redline.vocabulary.sequential import (
    SequentialPlan,
)
from redline.vocabulary.tiers import Tier

if TYPE_CHECKING:
    from redline.config import Config


@dataclass(frozen=True)
class Quarantine:
    """Between keeping a case and retiring it: it keeps sampling but cannot fail a run."""

    reason: str
    until: datetime.date
    ticket: str = ""

    def active(self, today: datetime.date) -> bool:
        return today <= self.until

    def describe(self) -> str:
        ticket = f" ({self.ticket})" if self.ticket else ""
        return f"quarantined until {self.until.isoformat()}{ticket}: {self.reason}"


@dataclass(frozen=True)
class Case:
    """One incident turned into a check: its inputs, its bar, its assertions."""

    id: str
    suite: str
    path: Path
    provenance: Mapping[str, str]
    vars: Mapping[str, str]
    tier: Tier
    samples: int
    required: int
    expect_refusal: bool
    assertions: tuple[Assertion, ...]
    #: Fixtures, schemas and other files the case reads (part of its hash).
    files: tuple[Path, ...] = ()
    #: Sequential sampling (`samples: {min, max}`): `samples` is then the most it may draw.
    sampling: SequentialPlan | None = None
    #: A reference answer written by whoever filed the incident (`golden:` inline text or
    #: the exact content of a file:// reference), shown beside the outputs; checks nothing.
    golden: str | None = None
    #: Runs and reports, but cannot turn a run red until `quarantine.until` has passed.
    quarantine: Quarantine | None = None
    #: The declared case settings it has (`redline.casemodel.declare_setting`), as read.
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: The case's conversation (`messages:`), after the suite's shared messages; empty for
    #: a one-turn case (the suite's `prompt.user` is then the user turn).
    messages: tuple[Message, ...] = ()
    #: Offline answers for the tools the model calls (`tool_results:`): given any, redline
    #: plays the tool loop until a final answer, an unanswered call or `max_steps`.
    tool_results: tuple[ToolFixture, ...] = ()
    #: The case's own structured-output schema, replacing the suite's.
    response_format: ResponseFormat | None = None
    #: `case_content` of the file as loaded (None: read from the file when asked), so a
    #: run's sample configurations do not parse every case file a second time.
    content: str | None = field(default=None, compare=False, repr=False)

    @property
    def plays_loop(self) -> bool:
        return bool(self.tool_results)

    @property
    def max_steps(self) -> int:
        """Requests a tool loop may make (the `max_steps` setting)."""
        return int(self.settings.get("max_steps", DEFAULT_MAX_STEPS))

    def required_for(self, n: int) -> int:
        """The same pass-rate bar at `n` samples (a rerun with more samples)."""
        return scale_required(self.required, self.samples, n)


#: Case-file keys that set the case's bar or describe it: not what a sample is asked or how
#: it is judged, so a sample drawn under a 3-of-4 bar is the same draw under 9-of-10.
_NOT_SAMPLE_KEYS = frozenset({"samples", "required", "tier", "provenance", "quarantine", "golden"})


def case_content(spec: Any) -> str:
    """A case file's plain data without its bar and provenance, as canonical JSON: the part
    of the case a sample's configuration (`manifest.sample_configuration`) is made of."""
    if isinstance(spec, dict):
        spec = {k: v for k, v in spec.items() if k not in _NOT_SAMPLE_KEYS}
    return json.dumps(spec, sort_keys=True, default=str, ensure_ascii=False)


@dataclass(frozen=True)
class Suite:
    """A prompt under test, the pinned model alias it runs on, and its cases."""

    name: str
    path: Path
    model: str
    samples: int
    tier: Tier
    max_tokens: int | None
    temperature: float | None
    prompt_files: tuple[Path, ...]
    cases: tuple[Case, ...]
    system_template: str = ""
    user_template: str = ""
    description: str = ""
    retired_files: tuple[Path, ...] = field(default=())
    #: `seed: frozen` (0) or a base integer: seeds fixed per (case, sample index) across runs.
    seed: int | None = None
    #: Messages every case's conversation starts with (after the system prompt).
    messages: tuple[Message, ...] = ()
    tools: tuple[ToolDefinition, ...] = ()
    tool_choice: ToolChoice | None = None
    response_format: ResponseFormat | None = None
    #: The team's own code that answers instead of a model (`target:`).
    target: TargetSpec | None = None
    #: The file names of the system and user templates ("" when written inline): a `.j2`
    #: file is always rendered by Jinja.
    template_names: tuple[str, str] = ("", "")

    def render(self, case: Case) -> tuple[str, str]:
        """(system text, user text) rendered with the case's vars: Jinja templates as the
        app renders them, plain `{{var}}` placeholders filled in verbatim."""
        system, user = self.template_names
        folders = (str(self.path),)
        return (
            render(self.system_template, case.vars, name=system, folders=folders),
            render(self.user_template, case.vars, name=user, folders=folders),
        )

    def turns(self, case: Case) -> tuple[Message, ...]:
        """The conversation after the system prompt, `{{var}}` values filled in: the suite's
        shared messages, then the case's own (or, for a one-turn case, the user template);
        empty when the request is the one-turn `system` + `user`."""
        if not self.messages and not case.messages:
            return ()
        own = case.messages
        if not own and self.user_template:
            own = (Message(Role.USER, self.user_template),)
        return tuple(_filled(m, case.vars, str(self.path)) for m in self.messages + own)

    def conversation(self, case: Case) -> tuple[Message, ...]:
        """Every message a request of this case sends, the system prompt first."""
        system, user = self.render(case)
        head = (Message(Role.SYSTEM, system),) if system else ()
        return head + (self.turns(case) or (Message(Role.USER, user),))

    def response_format_for(self, case: Case) -> ResponseFormat | None:
        """The structured-output schema the case's requests carry: its own, else the suite's."""
        return case.response_format or self.response_format

    def case(self, case_id: str) -> Case:
        for case in self.cases:
            if case.id == case_id:
                return case
        raise KeyError(case_id)


def _filled(message: Message, vars: Mapping[str, str], folder: str) -> Message:
    """`message` with its text rendered from the case's vars (Jinja or `{{var}}`)."""
    folders = (folder,)
    if isinstance(message.content, str):
        return dataclasses.replace(message, content=render(message.content, vars, folders=folders))
    parts = tuple(
        TextPart(render(p.text, vars, folders=folders)) if isinstance(p, TextPart) else p
        for p in message.content
    )
    return dataclasses.replace(message, content=parts)


def load_suite(path: Path, config: Config | None = None) -> Suite:
    """Load one suite folder; raise ProblemsError listing every problem found."""
    problems: list[Problem] = []
    suite = _SuiteLoader(path, config, problems).load()
    if problems or suite is None:
        raise ProblemsError(problems)
    return suite


def load_suites(
    paths: Sequence[Path],
    config: Config | None = None,
    *,
    shard: tuple[int, int] | None = None,
) -> list[Suite]:
    """Load every suite under `paths` (suite folders or folders of them), all problems at once.

    With `shard` (k, n), each suite holds only the cases of shard k of n, and only their
    case files are read (`suite.shards`): a problem in another shard's case file is that
    shard's, and a case id used twice across shards is found by a full load or the merge.
    """
    return _load_all(paths, lambda f, p: _SuiteLoader(f, config, p, shard=shard))


def _load_all(
    paths: Sequence[Path], loader: Callable[[Path, list[Problem]], _SuiteLoader]
) -> list[Suite]:
    problems: list[Problem] = []
    suites: list[Suite] = []
    seen: dict[str, Path] = {}
    with _no_cycle_collection():
        folders = find_suite_dirs(paths, problems)
        loaded = [(folder, loader(folder, problems).load()) for folder in folders]
    for folder, suite in loaded:
        if suite is None:
            continue
        if suite.name in seen and seen[suite.name] != suite.path:
            problems.append(
                Problem(
                    relpath(folder / SUITE_FILE),
                    1,
                    1,
                    f"suite name {suite.name!r} is also used by {relpath(seen[suite.name])}",
                    "give each suite a unique `name:`",
                )
            )
            continue
        seen[suite.name] = suite.path
        suites.append(suite)
    if problems:
        raise ProblemsError(problems)
    return suites


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Reading case files makes many objects and no reference cycles worth collecting:
    Python's cycle collector, left on, spends a tenth of a large suite's load traversing
    them. It is paused for the load and resumes as it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass(frozen=True)
class CheckedSuite:
    """A suite as `redline validate` reports it: its own settings, and its cases counted
    (read, or found unchanged in the parse cache). `suite.cases` is empty."""

    suite: Suite
    cases: tuple[CheckedCase, ...]


#: A full check reads its case files in several processes from this many files on.
PARALLEL_FILES = 5_000


def check_suites(
    paths: Sequence[Path],
    config: Config | None,
    cache: ParseCache,
    *,
    shard: tuple[int, int] | None = None,
    jobs: int = 1,
) -> list[CheckedSuite]:
    """Every suite under `paths` checked as `load_suites` loads it, all problems at once;
    a case file found unchanged in `cache` is not read again.

    With `jobs` > 1 and at least `PARALLEL_FILES` case files, the files are split among
    `jobs` processes (forked: each starts as a copy of this one) by the shard rule; this
    process checks one share, and the suites' own problems, found by each, are one each.
    """
    parallel = jobs > 1 and shard is None and "fork" in multiprocessing.get_all_start_methods()
    if parallel:
        # The suite folders found once, here: each share starts from them, not from a
        # second walk of a tree that holds every case file.
        found: list[Problem] = []
        folders = find_suite_dirs(paths, found)
        parallel = not found and _holds_case_files(folders, PARALLEL_FILES)
        if parallel:
            paths = folders
    if not parallel:
        try:
            suites, checked, problems = _check_share(paths, config, cache, shard)
        finally:
            cache.close()
        if problems:
            raise ProblemsError(problems)
        return [CheckedSuite(s, checked[s.path]) for s in suites]
    return _check_in_parallel(paths, config, cache, jobs)


def _check_share(
    paths: Sequence[Path],
    config: Config | None,
    cache: ParseCache,
    shard: tuple[int, int] | None,
) -> tuple[list[Suite], dict[Path, tuple[CheckedCase, ...]], list[Problem]]:
    """The suites (none when there are problems), each suite folder's cases as counted, and
    the problems found, reading the case files of `shard` (all of them without one)."""
    loaders: list[_SuiteLoader] = []

    def loader(folder: Path, problems: list[Problem]) -> _SuiteLoader:
        loaders.append(_SuiteLoader(folder, config, problems, shard=shard, cache=cache))
        return loaders[-1]

    suites: list[Suite] = []
    problems: list[Problem] = []
    try:
        suites = _load_all(paths, loader)
    except ProblemsError as exc:
        problems = list(exc.problems)
    return suites, {lo.folder: tuple(lo.checked) for lo in loaders}, problems


def _share_in_a_worker(
    paths: Sequence[Path], config: Config | None, cache_path: Path | None, shard: tuple[int, int]
) -> tuple[dict[Path, tuple[CheckedCase, ...]], list[Problem]]:
    """One share checked in a worker process: its cases and its problems; it writes its own
    cache entries, while the other processes still read theirs."""
    cache = ParseCache(cache_path)
    try:
        _, checked, problems = _check_share(paths, config, cache, shard)
    finally:
        cache.close()
    return checked, problems


def _check_in_parallel(
    paths: Sequence[Path], config: Config | None, cache: ParseCache, jobs: int
) -> list[CheckedSuite]:
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(jobs - 1, mp_context=context) as pool:
        others = [
            pool.submit(_share_in_a_worker, paths, config, cache.path, (k, jobs))
            for k in range(2, jobs + 1)
        ]
        try:
            suites, checked, problems = _check_share(paths, config, cache, (1, jobs))
        finally:
            cache.close()
        merged = {folder: list(cases) for folder, cases in checked.items()}
        for future in others:
            share, more = future.result()
            for folder, found in share.items():
                merged.setdefault(folder, []).extend(found)
            problems.extend(more)
    counted: dict[Path, tuple[CheckedCase, ...]] = {}
    for folder, every in merged.items():
        ids: dict[str, str] = {}
        kept: list[CheckedCase] = []
        show = _SuiteLoader(folder, config, []).show
        # In the order of a path's parts, as one process reads them (`case_files`).
        for case in sorted(every, key=lambda c: c.path.split(os.sep)):
            if case.id in ids:  # two shares' files with one id
                first = Path(ids[case.id])
                problems.append(_same_id(show, Path(case.path), case.id, first))
                continue
            ids[case.id] = case.path
            kept.append(case)
        counted[folder] = tuple(kept)
    if problems:
        raise ProblemsError(dict.fromkeys(problems))  # each share finds the suite's own
    return [CheckedSuite(s, counted[s.path]) for s in suites]


def _holds_case_files(folders: Sequence[Path], at_least: int) -> bool:
    """Whether `folders` hold `at_least` case files: a folder listing, no reading, that
    stops once it has counted them."""
    count = 0
    for folder in folders:
        with os.scandir(folder) as entries:
            for entry in entries:
                if os.path.splitext(entry.name)[1] in CASE_SUFFIXES:
                    count += 1
                    if count >= at_least:
                        return True
    return count >= at_least


def _same_id(show: Callable[[Path], str], path: Path, case_id: str, first: Path) -> Problem:
    return Problem(
        show(path),
        1,
        1,
        f"case id {case_id!r} is also used by {show(first)}",
        "case ids must be unique within a suite",
    )


def find_suite_dirs(paths: Sequence[Path], problems: list[Problem]) -> list[Path]:
    """Suite folders named by `paths`: a suite folder, its suite.yaml, or a folder of suites."""
    found: list[Path] = []
    for path in paths:
        if path.is_file() and path.name == SUITE_FILE:
            found.append(path.parent)
        elif (path / SUITE_FILE).is_file():
            found.append(path)
        elif path.is_dir():
            nested = sorted(
                p.parent
                for p in path.rglob(SUITE_FILE)
                if RETIRED_DIR not in p.relative_to(path).parts
            )
            if not nested:
                problems.append(
                    Problem(relpath(path), 0, 0, f"no {SUITE_FILE} found", "see `redline init`")
                )
            found.extend(nested)
        elif path.is_file():
            suite = relpath(path.parent)
            hint = (
                f"give its suite folder {suite}, with --case {path.stem} to run only it"
                if (path.parent / SUITE_FILE).is_file()
                else "give a suite folder (one holding suite.yaml) or a folder of suites"
            )
            problems.append(Problem(relpath(path), 0, 0, "is a file, not a suite folder", hint))
        else:
            problems.append(
                Problem(relpath(path), 0, 0, "does not exist", "give a suite folder or a folder")
            )
    unique: dict[Path, None] = {}
    for folder in found:
        unique.setdefault(folder.resolve(), None)
    return list(unique)


class _SuiteLoader(NodeReader):
    """One suite folder: suite.yaml, then each case file, every problem recorded."""

    def __init__(
        self,
        folder: Path,
        config: Config | None,
        problems: list[Problem],
        overrides: Mapping[Path, str | None] | None = None,
        *,
        shard: tuple[int, int] | None = None,
        cache: ParseCache | None = None,
    ) -> None:
        super().__init__(problems)
        #: Only the case files of this shard (k, n) are read.
        self.shard = shard
        self._resolved: dict[Path, Path] = {}
        #: What earlier checks found in unchanged case files (`redline validate`); with
        #: it, cases are counted in `checked`, and the suite holds none.
        self.cache = cache
        self._context: str | None = None
        #: Every case loaded, cached or read, as validate counts it (with a cache only).
        self.checked: list[CheckedCase] = []
        self.folder = folder.resolve()
        self._cwd = Path.cwd().resolve()
        self._cwd_prefix = os.path.join(self._cwd, "")
        self.config = config
        #: Case files read from these texts instead of the disk (None: left out).
        self.overrides = {p.resolve(): t for p, t in (overrides or {}).items()}
        self.target: TargetSpec | None = None
        #: The suite's Jinja prompt templates: (text, file shown, first line, name).
        self.templates: list[tuple[str, str, int, str]] = []
        self.template_names: dict[str, str] = {}

    def resolved(self, path: Path) -> Path:
        """`path.resolve()`, once per file for all the cases that read it (a shared fixture)."""
        real = self._resolved.get(path)
        if real is None:
            real = self._resolved[path] = path.resolve()
        return real

    def show(self, path: Path) -> str:
        """`path` as the user typed it (relative to the working directory when under it)."""
        if path.is_absolute():
            text = str(path)
            if text.startswith(self._cwd_prefix):  # relative_to's answer, without its cost
                return text[len(self._cwd_prefix) :]
            try:
                return str(path.relative_to(self._cwd))
            except ValueError:
                pass
        return relpath(path)

    def load(self) -> Suite | None:
        suite_path = self.folder / SUITE_FILE
        root, more = load_file(suite_path, self.show(suite_path))
        self.problems.extend(more)
        if root is None or not root.is_map:
            if root is not None:
                self.add(root.mark, f"{SUITE_FILE} must be a mapping, not {yaml_type(root)}")
            elif not more:
                self.problems.append(
                    Problem(self.show(suite_path), 1, 1, "empty file", "see `redline init`")
                )
            # The case files' own problems are reported too, checked against the defaults.
            self.cases(self.folder.name, suite_bar({}))
            return None
        before = len(self.problems)
        bar = suite_bar(
            root.plain(), self.folder.as_posix(), file_bytes, lambda p: self.show(Path(p))
        )
        self.report(root, bar.issues)
        name = bar.name or self.folder.name
        model = self.model(root, bar.model)
        target_node = root.get(TARGET_KEY)
        self.target = bar.extras.get(TARGET_KEY)
        if self.target is not None:
            self.target_files(root, self.target)
        prompt = None
        if bar.templates is not None:
            prompt_paths = [Path(p) for p in bar.prompt_files]
            self.jinja_templates(root, bar.prompt or {}, bar.templates, prompt_paths)
            prompt = (*bar.templates, tuple(prompt_paths))
        elif target_node is not None and bar.prompt is None and root.get("prompt") is None:
            prompt = ("", "", ())  # the target's own prompt files are its prompt
        retired = self.retired_files()
        if self.cache is not None and prompt is not None and len(self.problems) == before:
            self._context = self.cache.context(
                name,
                self.folder,
                [suite_path, *prompt[2], *(Path(p) for p in bar.conversation.files)],
                self.config.source if self.config is not None else None,
            )
        cases = self.cases(name, bar)
        if len(self.problems) > before or prompt is None:
            return None
        system, user, files = prompt
        shared = bar.conversation
        files += tuple(dict.fromkeys(Path(p).resolve() for p in shared.files))
        if self.target is not None:
            files += tuple(p for p in self.target.prompt_files() if p not in files)
        samples = bar.samples.value
        return Suite(
            name=name,
            path=self.folder,
            model=model or "",
            samples=int(samples["max"] if isinstance(samples, dict) else samples),
            tier=Tier(bar.tier.value),
            max_tokens=bar.max_tokens,
            temperature=bar.temperature,
            prompt_files=files,
            cases=cases,
            system_template=system,
            user_template=user,
            description=bar.description,
            retired_files=retired,
            seed=bar.seed,
            messages=shared.messages,
            tools=shared.tools,
            tool_choice=shared.tool_choice,
            response_format=shared.response_format,
            target=self.target,
            template_names=(
                self.template_names.get("system", ""),
                self.template_names.get("user", ""),
            ),
        )

    def target_files(self, root: Node, target: TargetSpec) -> None:
        """What the target's reader cannot see without the files: its root is a folder,
        each of its prompt_files globs matches a file there."""
        if not target.root.is_dir():
            self.add(
                root.mark_at((TARGET_KEY, "root")),
                f"target root {self.show(target.root)} is not a folder",
                "root is relative to the suite folder",
            )
            return
        for pattern in target.prompt_globs:
            if not expand_globs(target.root, (pattern,)):
                self.add(
                    root.mark_at((TARGET_KEY, "prompt_files")),
                    f"prompt_files {pattern!r} matches no file under {self.show(target.root)}",
                    "globs are relative to the target's root (`**` matches any folders)",
                )

    def jinja_templates(
        self,
        root: Node,
        prompt: Mapping[str, str],
        texts: tuple[str, str],
        files: list[Path],
    ) -> None:
        """Parse each prompt part that is a Jinja template: a syntax error or a missing
        include is reported at the template's file:line; included files join the prompt's."""
        for key, text in zip(("system", "user"), texts, strict=True):
            value = prompt.get(key)
            if value is None:
                continue
            relative = prompt_file(key, value)
            if relative is None:
                node = root.get("prompt")
                entry = node.get(key) if node is not None else None
                mark = entry.mark if entry is not None else root.mark
                shown, first, name = mark.path, mark.line, ""
            else:
                path = self.folder / relative
                shown, first, name = self.show(path), 1, path.name
                self.template_names[key] = name
            if not is_jinja(text, name):
                continue
            self.templates.append((text, shown, first, name))
            try:
                _names, included = template_names(text, (str(self.folder),))
            except TemplateProblem as exc:
                self.problems.append(
                    Problem(shown, first + exc.line - 1, 1, str(exc), "see docs/targets.md")
                )
                continue
            for include in included:
                path = self.folder / include
                if not path.is_file():
                    self.problems.append(
                        Problem(
                            shown,
                            first,
                            1,
                            f"the template includes {include!r}, which does not exist",
                            "include paths are relative to the suite folder",
                        )
                    )
                elif path not in files:
                    files.append(path)

    def check_templates(self, root: Node, variables: Mapping[str, str]) -> None:
        """Render each Jinja prompt template with the case's vars: an undefined name or an
        error inside the template is reported at the template's file:line."""
        for text, shown, first, name in self.templates:
            try:
                render(text, variables, name=name or ".j2", folders=(str(self.folder),))
            except TemplateProblem as exc:
                case = self.show(Path(root.mark.path)) if root.mark.path else "this case"
                self.problems.append(
                    Problem(
                        shown,
                        first + exc.line - 1,
                        1,
                        f"{exc} (rendering for {case})",
                        "give the case the var under `vars:`, or guard it in the template "
                        "with {% if name is defined %}",
                    )
                )

    def report(self, root: Node, issues: Sequence[Issue]) -> None:
        """The reader's issues at the line and column where each was written."""
        for issue in issues:
            mark = root.mark_at(issue.at, issue.on_key)
            self.problems.append(mark.problem(self.label + issue.message, issue.hint))

    # -- what the reader cannot check: the configuration ------------------------------

    def model(self, root: Node, alias: str | None) -> str | None:
        node = root.get("model")
        if node is None or alias is None:
            return None
        if ":" in alias:
            models_table = (
                self.config.table("models") if self.config is not None else "the config's models"
            )
            self.add(
                node.mark,
                f"`model` must be an alias, not a model id ({alias!r})",
                f"pin the id once under {models_table} and name its alias here",
            )
            return None
        if self.config is not None and alias not in self.config.models:
            known = ", ".join(sorted(self.config.models)) or "none"
            self.add(
                node.mark,
                f"model alias {alias!r} is not pinned in {self.config.source.name} "
                f"(pinned: {known}){did_you_mean(alias, self.config.models)}",
                f'add {alias} = "provider:exact-model-id" under {self.config.table("models")}',
            )
            return None
        return alias

    # -- cases ---------------------------------------------------------

    def case_files(self, suite: str) -> tuple[list[Path], bool]:
        """The case files to read, in order, and whether the folder holds any at all (a
        shard may own none of them): with a shard only its own, picked by name before a
        path is made for each of a large suite's files."""
        wanted: Callable[[str], bool] | None = None
        if self.shard is not None:
            from redline.suite.shards import owns  # CI only: kept off a plain load

            wanted = functools.partial(owns, self.shard, suite)
        found = False
        #: The folder's own files by name (the folder is resolved: they need no resolving),
        #: and the files that symlinks in it name, wherever they are.
        names: list[str] = []
        linked: set[Path] = set()
        with os.scandir(self.folder) as entries:
            for entry in entries:
                if (
                    os.path.splitext(entry.name)[1] not in CASE_SUFFIXES
                    or entry.name == SUITE_FILE
                    or not entry.is_file()
                ):
                    continue
                found = True
                if entry.is_symlink():
                    path = Path(entry.path).resolve()
                    if wanted is None or wanted(path.name):
                        linked.add(path)
                elif wanted is None or wanted(entry.name):
                    names.append(entry.name)
        if not linked and not self.overrides:  # in one folder, name order is path order
            return [self.folder / name for name in sorted(names)], found
        on_disk = {self.folder / name for name in names} | linked
        planned = {
            p
            for p in self.overrides
            if p.parent == self.folder
            and p.suffix in CASE_SUFFIXES
            and (wanted is None or wanted(p.name))
        }
        found = found or bool(planned)
        if self.overrides:
            on_disk = {p for p in on_disk | planned if self.overrides.get(p, "") is not None}
        return sorted(on_disk, key=lambda p: p.parts), found

    def retired_files(self) -> tuple[Path, ...]:
        retired = self.folder / RETIRED_DIR
        if not retired.is_dir():
            return ()
        return tuple(sorted(p for p in retired.iterdir() if p.suffix in CASE_SUFFIXES))

    def cases(self, suite: str, bar: SuiteBar) -> tuple[Case, ...]:
        cases: list[Case] = []
        ids: dict[str, Path] = {}
        files, found = self.case_files(suite)
        if not found:
            self.problems.append(
                Problem(
                    self.show(self.folder / SUITE_FILE),
                    1,
                    1,
                    "suite has no case files",
                    "add cases as *.yaml beside suite.yaml",
                )
            )
        for path in files:
            data, key, known = self.known_case(path)
            case = None if known is not None else _CaseLoader(self, path, suite, bar, data).load()
            case_id = known.id if known is not None else case.id if case is not None else None
            if case_id is None:
                continue
            if case_id in ids:
                self.problems.append(_same_id(self.show, path, case_id, ids[case_id]))
                continue
            ids[case_id] = path
            if case is not None:
                known = self.checked_case(key, case)
                if known is None:  # a check counts cases; it does not keep them
                    cases.append(case)
            if known is not None:
                self.checked.append(known)
        return tuple(cases)

    def known_case(self, path: Path) -> tuple[bytes | None, str | None, CheckedCase | None]:
        """A case file's bytes, cache key, and what an earlier check found in it (None: read
        it). Without a cache, or for a suite with problems of its own: all None."""
        if self.cache is None or self._context is None or path in self.overrides:
            return None, None, None
        try:
            data = read_bytes(path)
        except OSError:
            return None, None, None
        key = self.cache.key(self._context, data)
        return data, key, self.cache.get(key, str(path))

    def checked_case(self, key: str | None, case: Case) -> CheckedCase | None:
        """`case` as validate counts it, kept under `key` for the next check."""
        if self.cache is None:
            return None
        checked = CheckedCase(
            id=case.id,
            suite=case.suite,
            path=str(case.path),
            tier=case.tier,
            samples=case.samples,
            required=case.required,
            assertions=len(case.assertions),
            sampling=case.sampling,
        )
        if key is not None:
            self.cache.put(key, checked, case.files)
        return checked


class _CaseLoader:
    """One case file: the case reader's reading, placed at lines, built into a `Case`."""

    def __init__(
        self,
        suite: _SuiteLoader,
        path: Path,
        suite_name: str,
        bar: SuiteBar,
        data: bytes | None = None,
    ) -> None:
        self.suite = suite
        self.path = path
        self.folder = path.parent
        #: The file's bytes when already read (to find it in the parse cache).
        self.data = data
        self.suite_name = suite_name
        self.bar = bar
        self.files: list[Path] = []
        self.response_format: ResponseFormat | None = None

    def read_root(self) -> Node | None:
        """The case file as a mapping (from the disk, or from an edit not written yet)."""
        suite = self.suite
        shown = suite.show(self.path)
        text = suite.overrides.get(self.path)  # case_files gives resolved paths
        if text is not None:
            root, more = load_text(text, shown)
        elif self.data is not None:
            root, more = load_bytes(self.data, shown)
        else:
            root, more = load_file(self.path, shown)
        suite.problems.extend(more)
        if root is None:
            if not more:
                suite.problems.append(Problem(shown, 1, 1, "empty case file"))
            return None
        if not root.is_map:
            suite.add(root.mark, f"a case must be a mapping, not {yaml_type(root)}")
            return None
        return root

    def load(self) -> Case | None:
        suite = self.suite
        root = self.read_root()
        if root is None:
            return None
        before = len(suite.problems)
        data = root.plain()
        # An edit not written yet is not what the file on disk holds; a check (with a
        # cache) counts the case and lets it go, so nothing will hash it.
        unused = self.path in suite.overrides or suite.cache is not None
        content = None if unused else case_content(data)
        case = effective_case(
            data, self.path.as_posix(), self.bar, file_bytes, lambda p: suite.show(Path(p))
        )
        types = {r.index: assertion_type(r.type) for r in case.assertions}
        # A type this installation lacks is reported as that alone, not by its parameters.
        missing = {i for i, cls in types.items() if cls is None}
        suite.report(root, [i for i in case.issues if _assertion_index(i) not in missing])
        self.files.extend(suite.resolved(Path(p)) for p in case.files)
        #: What the case's assertions check calls and JSON against.
        self.response_format = case.conversation.response_format or (
            self.bar.conversation.response_format
        )
        assertions = self.assertions(root, data.get("assert"), case, types)
        if len(suite.problems) == before:
            suite.check_templates(root, case.vars)
            self.check_message_templates(root, case.conversation.messages, case.vars)
        if len(suite.problems) > before:
            return None
        return Case(
            id=case.id,
            suite=self.suite_name,
            path=self.path,  # case_files gives resolved paths
            provenance=case.provenance,
            vars=case.vars,
            tier=Tier(case.tier.value),
            samples=int(case.samples.value),
            required=int(case.required.value),
            expect_refusal=bool(case.expect_refusal.value),
            assertions=assertions,
            files=tuple(dict.fromkeys(self.files)),
            sampling=_plan(case),
            golden=None if case.golden is None else str(case.golden.value),
            quarantine=_quarantine(case),
            settings={key: setting.value for key, setting in case.settings.items()},
            messages=case.conversation.messages,
            tool_results=case.conversation.tool_results,
            response_format=case.conversation.response_format,
            content=content,
        )

    def check_message_templates(
        self, root: Node, messages: tuple[Message, ...], variables: Mapping[str, str]
    ) -> None:
        """Render each Jinja message of the conversation with the case's vars, as a request
        will: a problem names the message and the template's line."""
        folders = (str(self.suite.folder),)
        for number, message in enumerate((*self.bar.conversation.messages, *messages), 1):
            if not is_jinja(message.text):
                continue
            try:
                render(message.text, variables, folders=folders)
            except TemplateProblem as exc:
                self.suite.add(
                    root.mark,
                    f"message {number} of the conversation, template line {exc.line}: {exc}",
                    "give the case the var under `vars:`, or fix the template",
                )

    def assertions(
        self,
        root: Node,
        written: Any,
        case: EffectiveCase,
        types: Mapping[int, type[Assertion] | None],
    ) -> tuple[Assertion, ...]:
        """Each assertion the reader found usable, built by its registered type (`written`:
        the `assert:` list as plain data, read once with the whole case)."""
        entries = root.get("assert")
        unusable = {_assertion_index(i) for i in case.issues}
        parsed: list[Assertion] = []
        for reading in case.assertions:
            cls = types[reading.index]
            if entries is None or (cls is not None and reading.index in unusable):
                continue
            entry = entries.children()[reading.index]
            if cls is None:
                self.suite.add(
                    entry.mark_at(("type",)),
                    f"assertion type {reading.type!r} is not available in this installation "
                    "(the module that provides it could not be imported)",
                    "reinstall redline with its optional dependencies, or remove this assertion",
                )
                continue
            assertion = self.assertion(cls, entry, written[reading.index], reading, case.vars)
            if assertion is not None:
                parsed.append(assertion)
        return tuple(parsed)

    def assertion(
        self,
        cls: type[Assertion],
        entry: Node,
        written: Mapping[str, Any],
        reading: EffectiveAssertion,
        variables: Mapping[str, str],
    ) -> Assertion | None:
        suite = self.suite
        spec = Spec(
            type_name=reading.type,
            node=entry,
            written=written,
            index=reading.index,
            case_dir=self.folder,
            case_vars=variables,
            config=suite.config,
            display=suite.show,
            reading=reading,
            tools=self.bar.conversation.tools,
            response_format=self.response_format,
        )
        assertion = cls.parse(spec)
        suite.problems.extend(spec.problems)
        self.files.extend(suite.resolved(p) for p in spec.files)
        return None if spec.problems else assertion


def _assertion_index(issue: Issue) -> int | None:
    """The index of the assertion an issue is about, None when it is about the case."""
    at = issue.at
    return at[1] if len(at) > 1 and at[0] == "assert" and isinstance(at[1], int) else None


def _plan(case: EffectiveCase) -> SequentialPlan | None:
    """`samples: {min, max, margin, bar}` as the runner draws it (the bar resolved by tier)."""
    if case.sampling is None:
        return None
    written = case.sampling
    return SequentialPlan(
        min=int(written["min"]),
        max=int(written["max"]),
        bar=float(written["bar"]),
        margin=float(written["margin"]),
        contract=case.tier.value == Tier.CONTRACT,
    )


def _quarantine(case: EffectiveCase) -> Quarantine | None:
    if case.quarantine is None:
        return None
    value = case.quarantine.value
    return Quarantine(value["reason"], datetime.date.fromisoformat(value["until"]), value["ticket"])


def check_suite_edit(folder: Path, edits: Mapping[Path, str | None], config: Config | None) -> None:
    """Load the suite in `folder` as it would be after `edits` (new case-file texts; None
    removes a file) without writing anything; raise ProblemsError listing every problem."""
    problems: list[Problem] = []
    suite = _SuiteLoader(folder, config, problems, edits).load()
    if problems or suite is None:
        raise ProblemsError(problems)
