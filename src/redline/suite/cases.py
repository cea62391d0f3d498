"""Suites and cases: loading and validation (docs/rules.md: A case is an incident;
A rate, not a boolean; Pin the model in one file).

A suite is a folder with `suite.yaml` and case files `*.yaml` beside it;
`retired/` holds cases that are no longer run. Every problem in every file is
collected, with file:line:column and a hint, before anything runs.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from redline.assertions import (
    Assertion,
    Spec,
    assertion_type,
    known_types,
)
from redline.casemodel import (
    CASE_KEYS,
    CASE_SUFFIXES,
    COMMON_KEYS,
    DEFAULT_MAX_STEPS,
    DEFAULT_SAMPLES,
    DEFAULT_TIER,
    FROZEN_SEED,
    PROMPT_KEYS,
    PROVENANCE_KEYS,
    QUARANTINE_KEYS,
    RETIRED_DIR,
    SAMPLES_KEYS,
    SUITE_FILE,
    SUITE_KEYS,
    TIERS,
    assertion_model,
    prompt_file,
)
from redline.casemodel.effective import default_required
from redline.casemodel.values import is_whole
from redline.documents.reading import NodeReader
from redline.documents.yamlsource import (
    FILE_REF,
    Node,
    did_you_mean,
    load_file,
    load_text,
    read_verbatim,
    utf8_problem,
)
from redline.documents.yamlsource import type_name as yaml_type
from redline.errors import Problem, ProblemsError, relpath
from redline.suite.conversation import ConversationReader
from redline.targets.spec import TargetReader, TargetSpec
from redline.text.templates import TemplateProblem, is_jinja, placeholders, render, template_names
from redline.transcript import answer_text
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
    MAX_MARGIN,
    SamplingSpec,
    SequentialPlan,
    passes_needed,
)

if TYPE_CHECKING:
    from redline.config import Config

_TYPE_HINTS = {
    "javascript": "redline evaluates Python: use `type: python` with an expression over "
    "output, json and vars",
    "is-valid-json": "use `type: is-json`",
    "contains-json": "use `type: is-json`; the whole output must be JSON",
    "llm-rubric": "use `type: judge` with `rubric: file://rubrics/<name>.yaml`",
}


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
    tier: str
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
    #: The case's conversation (`messages:`), after the suite's shared messages; empty for
    #: a one-turn case (the suite's `prompt.user` is then the user turn).
    messages: tuple[Message, ...] = ()
    #: Offline answers for the tools the model calls (`tool_results:`): given any, redline
    #: plays the tool loop until a final answer, an unanswered call or `max_steps`.
    tool_results: tuple[ToolFixture, ...] = ()
    max_steps: int = DEFAULT_MAX_STEPS
    #: The case's own structured-output schema, replacing the suite's.
    response_format: ResponseFormat | None = None

    @property
    def plays_loop(self) -> bool:
        return bool(self.tool_results)

    def required_for(self, n: int) -> int:
        """The same pass-rate bar at `n` samples (a rerun with more samples)."""
        return scale_required(self.required, self.samples, n)


@dataclass(frozen=True)
class Suite:
    """A prompt under test, the pinned model alias it runs on, and its cases."""

    name: str
    path: Path
    model: str
    samples: int
    tier: str
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


def load_suites(paths: Sequence[Path], config: Config | None = None) -> list[Suite]:
    """Load every suite under `paths` (suite folders or folders of them), all problems at once."""
    problems: list[Problem] = []
    suites: list[Suite] = []
    seen: dict[str, Path] = {}
    for folder in find_suite_dirs(paths, problems):
        suite = _SuiteLoader(folder, config, problems).load()
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
    ) -> None:
        super().__init__(problems)
        self.folder = folder.resolve()
        self._cwd = Path.cwd().resolve()
        self.config = config
        #: Case files read from these texts instead of the disk (None: left out).
        self.overrides = {p.resolve(): t for p, t in (overrides or {}).items()}
        #: The suite's conversation settings, which its cases build on.
        self.messages: tuple[Message, ...] = ()
        self.has_user = True
        self.system_vars: list[str] = []
        self.tools: tuple[ToolDefinition, ...] = ()
        self.response_format: ResponseFormat | None = None
        self.target: TargetSpec | None = None
        self.targeted = False
        #: The suite's Jinja prompt templates: (text, file shown, first line, name).
        self.templates: list[tuple[str, str, int, str]] = []
        self.template_names: dict[str, str] = {}

    def show(self, path: Path) -> str:
        """`path` as the user typed it (relative to the working directory when under it)."""
        if path.is_absolute():
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
            self.cases(self.folder.name, DEFAULT_SAMPLES, DEFAULT_TIER, None)
            return None
        before = len(self.problems)
        self.unknown_keys(root, SUITE_KEYS, "suite.yaml")
        name = self.text(root.get("name"), "name", default=self.folder.name)
        target_node = root.get("target")
        self.targeted = target_node is not None
        if target_node is not None:
            self.target = TargetReader(self, self.folder).read(target_node)
        model = self.model(root)
        samples, spec = self.sampling(root, DEFAULT_SAMPLES, None)
        tier = self.tier(root, DEFAULT_TIER)
        seed = self.seed(root)
        max_tokens = self.whole(root.get("max_tokens"), "max_tokens", minimum=1, example="400")
        temperature = self.number(
            root.get("temperature"), "temperature", minimum=0, maximum=2, example="0.7"
        )
        description = self.text(root.get("description"), "description", default="")
        prompt = self.prompt(root)
        conversation = ConversationReader(self, self.folder, self.show)
        self.messages = conversation.messages(root.get("messages"))
        self.tools = conversation.tools(root.get("tools"))
        tool_choice = conversation.tool_choice(root.get("tool_choice"), self.tools)
        self.response_format = conversation.response_format(root.get("response_format"))
        retired = self.retired_files()
        cases = self.cases(
            name or self.folder.name, samples or 1, tier or DEFAULT_TIER, prompt, spec
        )
        if len(self.problems) > before or prompt is None:
            return None
        system, user, files = prompt
        files += tuple(dict.fromkeys(conversation.files))
        if self.target is not None:
            files += tuple(p for p in self.target.prompt_files() if p not in files)
        return Suite(
            name=name or self.folder.name,
            path=self.folder,
            model=model or "",
            samples=samples or DEFAULT_SAMPLES,
            tier=tier or DEFAULT_TIER,
            max_tokens=max_tokens,
            temperature=temperature,
            prompt_files=files,
            cases=cases,
            system_template=system,
            user_template=user,
            description=description or "",
            retired_files=retired,
            seed=seed,
            messages=self.messages,
            tools=self.tools,
            tool_choice=tool_choice,
            response_format=self.response_format,
            target=self.target,
            template_names=(
                self.template_names.get("system", ""),
                self.template_names.get("user", ""),
            ),
        )

    # -- settings ------------------------------------------------------

    def sampling(
        self, parent: Node, default: int, spec: SamplingSpec | None
    ) -> tuple[int | None, SamplingSpec | None]:
        """`samples: N` (a fixed count) or `samples: {min, max, margin, bar}` (sequential)."""
        node = parent.get("samples")
        if node is None or not node.is_map:
            count = self.whole(node, "samples", default, minimum=1)
            return count, (spec if node is None else None)
        self.unknown_keys(node, SAMPLES_KEYS, "samples")
        base = SamplingSpec()
        low = self.whole(node.get("min"), "min", base.min, minimum=1)
        high = self.whole(node.get("max"), "max", max(base.max, low or 1), minimum=1)
        margin = self.rate(node.get("margin"), "margin", base.margin, upper=MAX_MARGIN)
        bar = self.rate(node.get("bar"), "bar", None, upper=1.0)
        if (
            low is None
            or high is None
            or margin is None
            or (node.get("bar") is not None and bar is None)
        ):
            return None, None
        if low > high:
            self.add(
                node.mark,
                f"`samples.min` ({low}) is more than `samples.max` ({high})",
                "a case starts with min samples and draws more, up to max, while undecided",
            )
            return None, None
        return high, SamplingSpec(min=low, max=high, margin=margin, bar=bar)

    def rate(
        self, node: Node | None, key: str, default: float | None, upper: float
    ) -> float | None:
        return self.number(
            node,
            key,
            default,
            minimum=0,
            maximum=upper,
            exclusive_minimum=True,
            example=f"{min(0.8, upper / 2):g}",
            expected="a rate between 0 and 1",
        )

    def seed(self, root: Node) -> int | None:
        node = root.get("seed")
        if node is None:
            return None
        if node.is_scalar and node.value == FROZEN_SEED:
            return 0
        if node.is_scalar and is_whole(node.value) and node.value >= 0:
            return int(node.value)
        self.wrong_type(node, "seed", f"`{FROZEN_SEED}` or a whole number", FROZEN_SEED)
        return None

    def tier(self, parent: Node, default: str) -> str | None:
        hint = "contract: every sample must pass; quality: one may miss"
        return self.choice(parent.get("tier"), "tier", TIERS, default, hint)

    def model(self, root: Node) -> str | None:
        node = root.get("model")
        if node is None and root.get("target") is not None:
            return None  # the target chooses its model and reports it with each answer
        if node is None:
            self.add(root.mark, "suite.yaml needs `model:`", "name a model alias from the config")
            return None
        if not node.is_scalar or not isinstance(node.value, str) or not node.value.strip():
            self.wrong_type(node, "model", "a model alias", "local")
            return None
        alias = node.value
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

    def prompt(self, root: Node) -> tuple[str, str, tuple[Path, ...]] | None:
        node = root.get("prompt")
        if node is None and root.get("target") is not None:
            self.has_user = False
            return "", "", ()  # the target's own prompt files are its prompt
        if node is None:
            self.add(
                root.mark,
                "suite.yaml needs `prompt:`",
                "prompt: {system: prompts/system.txt, user: '{{document}}'}",
            )
            return None
        if not node.is_map:
            self.wrong_type(node, "prompt", "a mapping", "{system: prompts/system.txt}")
            return None
        self.unknown_keys(node, PROMPT_KEYS, "prompt")
        files: list[Path] = []
        system_node = node.get("system")
        system: str | None = ""
        if system_node is None:
            self.add(node.where, "`prompt` needs `system:` (the system prompt file)")
            system = None
        else:
            system = self.prompt_text(system_node, "system", files)
        user_node = node.get("user")
        user: str | None = ""
        #: Without `user:`, the conversation (`messages:`) gives the turns.
        self.has_user = user_node is not None
        if user_node is not None:
            user = self.prompt_text(user_node, "user", files)
        if system is None or user is None:
            return None
        for text, shown, first, _name in self.templates:
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
        return system, user, tuple(files)

    def prompt_text(self, node: Node, key: str, files: list[Path]) -> str | None:
        if not node.is_scalar or not isinstance(node.value, str) or not node.value:
            self.wrong_type(node, f"prompt.{key}", "a file path or text", "prompts/system.txt")
            return None
        relative = prompt_file(key, node.value)
        if relative is None:
            text = str(node.value)
            if is_jinja(text):
                self.templates.append((text, node.mark.path, node.mark.line, ""))
            return text
        path = self.folder / relative
        if not path.is_file():
            self.add(
                node.mark,
                f"prompt file {self.show(path)} does not exist",
                "paths are relative to the suite folder",
            )
            return None
        files.append(path)
        try:
            text = read_verbatim(path)
        except UnicodeDecodeError as exc:
            line, _, message = utf8_problem(exc)
            self.add(node.mark, f"prompt file {self.show(path)}, line {line}: {message}")
            return None
        if is_jinja(text, path.name):
            self.templates.append((text, self.show(path), 1, path.name))
            self.template_names[key] = path.name
        return text

    def variables(self, text: str, key: str) -> list[str]:
        """The vars a prompt part reads: its `{{var}}`s, or a Jinja template's free names."""
        if not is_jinja(text, self.template_names.get(key, "")):
            return placeholders(text)
        try:
            return template_names(text, (str(self.folder),))[0]
        except TemplateProblem:
            return []  # reported once, where the template is read

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

    # -- cases ---------------------------------------------------------

    def case_files(self) -> list[Path]:
        with os.scandir(self.folder) as entries:
            on_disk = {
                # The folder is resolved: only a symlinked file needs resolving itself.
                Path(entry.path).resolve() if entry.is_symlink() else self.folder / entry.name
                for entry in entries
                if entry.is_file()
                and os.path.splitext(entry.name)[1] in CASE_SUFFIXES
                and entry.name != SUITE_FILE
            }
        planned = {
            p for p in self.overrides if p.parent == self.folder and p.suffix in CASE_SUFFIXES
        }
        return sorted(p for p in on_disk | planned if self.overrides.get(p, "") is not None)

    def retired_files(self) -> tuple[Path, ...]:
        retired = self.folder / RETIRED_DIR
        if not retired.is_dir():
            return ()
        return tuple(sorted(p for p in retired.iterdir() if p.suffix in CASE_SUFFIXES))

    def cases(
        self,
        suite: str,
        samples: int,
        tier: str,
        prompt: tuple[str, str, tuple[Path, ...]] | None,
        spec: SamplingSpec | None = None,
    ) -> tuple[Case, ...]:
        used = (
            self.variables(prompt[0], "system") + self.variables(prompt[1], "user")
            if prompt
            else []
        )
        used = list(dict.fromkeys(used))
        #: A case giving its own conversation sends no user template: only the system
        #: prompt's placeholders need its vars.
        self.system_vars = self.variables(prompt[0], "system") if prompt else []
        cases: list[Case] = []
        ids: dict[str, Path] = {}
        files = self.case_files()
        if not files:
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
            case = _CaseLoader(self, path, suite, samples, tier, used, spec).load()
            if case is None:
                continue
            if case.id in ids:
                self.problems.append(
                    Problem(
                        self.show(path),
                        1,
                        1,
                        f"case id {case.id!r} is also used by {self.show(ids[case.id])}",
                        "case ids must be unique within a suite",
                    )
                )
                continue
            ids[case.id] = path
            cases.append(case)
        return tuple(cases)


class _CaseLoader:
    def __init__(
        self,
        suite: _SuiteLoader,
        path: Path,
        suite_name: str,
        samples: int,
        tier: str,
        prompt_vars: list[str],
        spec: SamplingSpec | None = None,
    ) -> None:
        self.suite = suite
        self.default_spec = spec
        self.path = path
        self.suite_name = suite_name
        self.default_samples = samples
        self.default_tier = tier
        self.prompt_vars = prompt_vars
        self.files: list[Path] = []
        self.response_format: ResponseFormat | None = None

    def read_root(self) -> Node | None:
        """The case file as a mapping (from the disk, or from an edit not written yet)."""
        suite = self.suite
        shown = suite.show(self.path)
        text = suite.overrides.get(self.path)  # case_files gives resolved paths
        root, more = load_file(self.path, shown) if text is None else load_text(text, shown)
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
        suite.unknown_keys(root, CASE_KEYS, "a case")
        self.not_retired(root)
        case_id = suite.text(root.get("id"), "id", default=self.path.stem)
        provenance = self.provenance(root)
        variables = self.vars(root)
        tier, samples, sampling, required = self.bar(root)
        expect_refusal = suite.boolean(root.get("expect_refusal"), "expect_refusal", False)
        golden = self.golden(root)
        quarantine = self.quarantine(root)
        conversation = ConversationReader(suite, self.path.parent, suite.show)
        messages = conversation.messages(root.get("messages"), suite.messages)
        fixtures = conversation.tool_results(root.get("tool_results"), suite.tools, variables or {})
        max_steps = suite.whole(root.get("max_steps"), "max_steps", DEFAULT_MAX_STEPS, minimum=1)
        self.response_format = conversation.response_format(root.get("response_format"))
        self.files.extend(conversation.files)
        golden = self.golden_answer(conversation, golden)
        self.needs_turn(root, messages)
        assertions = self.assertions(root, variables or {}, bool(expect_refusal))
        if variables is not None:
            self.check_prompt_vars(root, variables, own_turns=root.get("messages") is not None)
            if len(suite.problems) == before:
                suite.check_templates(root, variables)
                self.check_message_templates(root, messages, variables)
        if len(suite.problems) > before:
            return None
        assert case_id is not None and tier is not None and samples is not None
        assert required is not None and variables is not None and provenance is not None
        return Case(
            id=case_id,
            suite=self.suite_name,
            path=self.path.resolve(),
            provenance=provenance,
            vars=variables,
            tier=tier,
            samples=samples,
            required=required,
            expect_refusal=bool(expect_refusal),
            assertions=assertions,
            files=tuple(dict.fromkeys(self.files)),
            sampling=sampling,
            golden=golden,
            quarantine=quarantine,
            messages=messages,
            tool_results=fixtures,
            max_steps=max_steps or DEFAULT_MAX_STEPS,
            response_format=self.response_format,
        )

    def check_message_templates(
        self, root: Node, messages: tuple[Message, ...], variables: Mapping[str, str]
    ) -> None:
        """Render each Jinja message of the conversation with the case's vars, as a request
        will: a problem names the message and the template's line."""
        folders = (str(self.suite.folder),)
        for number, message in enumerate((*self.suite.messages, *messages), 1):
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

    def needs_turn(self, root: Node, messages: tuple[Message, ...]) -> None:
        """A case of a suite without `prompt.user` gives its conversation."""
        suite = self.suite
        if messages or suite.messages or root.get("messages") is not None:
            return
        if suite.targeted:
            return  # the target is given the case's vars; its own prompt makes the turn
        if not suite.has_user:
            suite.add(
                root.mark,
                "the suite's prompt has no `user:` template and this case has no `messages:`",
                "give the conversation (messages: [{role: user, content: ...}]), or a "
                "`user:` template under the suite's `prompt:`",
            )

    def not_retired(self, root: Node) -> None:
        retired = root.get("retired")
        if retired is not None:
            self.suite.add(
                retired.where,
                f"this case is marked retired but is not in {RETIRED_DIR}/",
                f"move it to {RETIRED_DIR}/ to retire it, or remove `retired:` to run it again",
            )

    def bar(self, root: Node) -> tuple[str | None, int | None, SequentialPlan | None, int | None]:
        """Tier, samples, sequential plan and required passes: how much this case asks."""
        suite = self.suite
        tier = suite.tier(root, self.default_tier)
        samples, spec = suite.sampling(root, self.default_samples, self.default_spec)
        sampling = spec.plan(tier) if spec is not None and tier is not None else None
        if sampling is None:
            return tier, samples, None, self.required(root, tier, samples)
        node = root.get("required")
        if node is not None:
            suite.add(
                node.mark,
                "`required` counts samples, but with `samples: {min, max}` the count varies",
                "give the bar as a rate instead: samples: {min: 3, max: 10, bar: 0.8}",
            )
        return tier, samples, sampling, passes_needed(sampling.bar, sampling.max)

    def golden(self, root: Node) -> str | None:
        """The reference answer, verbatim: inline text as written, or a file's exact text."""
        node = root.get("golden")
        if node is None or (node.is_scalar and node.value is None):
            return None
        if not node.is_scalar or not isinstance(node.value, str) or not node.value:
            self.suite.wrong_type(node, "golden", "text or a file:// reference", "file://x.txt")
            return None
        value = node.value
        if not value.startswith(FILE_REF):
            return value
        path = self.path.parent / value[len(FILE_REF) :]
        if not path.is_file():
            self.suite.add(
                node.mark,
                f"golden answer {self.suite.show(path)} does not exist",
                "file:// paths are relative to the case file's folder",
            )
            return None
        try:
            text = read_verbatim(path)
        except UnicodeDecodeError:
            self.suite.add(node.mark, f"golden answer {self.suite.show(path)} is not UTF-8 text")
            return None
        self.files.append(path.resolve())
        return text

    def golden_answer(self, conversation: ConversationReader, golden: str | None) -> str | None:
        """A golden given as an assistant turn, read as an answer is shown and compared: its
        text, then each tool call (`redline.transcript`); any other golden stays verbatim."""
        if golden is None:
            return None
        turn = conversation.assistant_turn(golden, self.suite.show(self.path))
        return golden if turn is None else answer_text(turn.text, turn.tool_calls, with_ids=False)

    def quarantine(self, root: Node) -> Quarantine | None:
        suite = self.suite
        node = root.get("quarantine")
        if node is None:
            return None
        example = "{reason: flaky on the new model, ticket: SUP-3001, until: 2026-12-31}"
        if not node.is_map:
            suite.wrong_type(node, "quarantine", "a mapping", example)
            return None
        suite.unknown_keys(node, QUARANTINE_KEYS, "quarantine")
        reason, until, ticket = node.get("reason"), node.get("until"), node.get("ticket")
        if reason is None or not isinstance(reason.value, str) or not reason.value.strip():
            suite.add(
                (reason or node).mark,
                "a quarantine needs a `reason` (why this case may not fail a run for now)",
                example,
            )
            return None
        if until is None or not isinstance(until.value, datetime.date):
            suite.add(
                (until or node).mark,
                "a quarantine needs `until:` as a date (YYYY-MM-DD): it ends by itself",
                example,
            )
            return None
        shown = "" if ticket is None or ticket.value is None else str(ticket.value)
        day = until.value.date() if isinstance(until.value, datetime.datetime) else until.value
        return Quarantine(reason.value.strip(), day, shown)

    def provenance(self, root: Node) -> dict[str, str] | None:
        suite = self.suite
        node = root.get("provenance")
        if node is None:
            suite.add(
                root.mark,
                "case has no `provenance:` (a case is an incident: where did it come from?)",
                "provenance: {ticket: SUP-2411, reported: 2026-02-03, note: why this case exists}",
            )
            return None
        if not node.is_map:
            suite.wrong_type(node, "provenance", "a mapping", "{ticket: SUP-2411, note: ...}")
            return None
        suite.unknown_keys(node, PROVENANCE_KEYS, "provenance")
        values: dict[str, str] = {}
        for key, child in node.items():
            value = child.value
            if not child.is_scalar or value is None:
                suite.wrong_type(child, f"provenance.{key}", "text or a date", "2026-02-03")
                continue
            values[key] = value.isoformat() if isinstance(value, datetime.date) else str(value)
        return values

    def vars(self, root: Node) -> dict[str, str] | None:
        suite = self.suite
        node = root.get("vars")
        if node is None:
            return {}
        if not node.is_map:
            suite.wrong_type(node, "vars", "a mapping", "{document: file://fixtures/x.txt}")
            return None
        values: dict[str, str] = {}
        for key, child in node.items():
            # A var reported below still exists: its uses must not be reported as missing (or
            # empty) too, so until it is read it stands for itself.
            values[key] = "{{" + key + "}}"
            value = child.value
            if not child.is_scalar or value is None or isinstance(value, bool):
                suite.wrong_type(child, f"vars.{key}", "text or a file:// reference", "text")
                continue
            if isinstance(value, str) and value.startswith(FILE_REF):
                path = self.path.parent / value[len(FILE_REF) :]
                if not path.is_file():
                    suite.add(
                        child.mark,
                        f"fixture {suite.show(path)} does not exist",
                        "file:// paths are relative to the case file's folder",
                    )
                    continue
                try:
                    values[key] = read_verbatim(path)
                except UnicodeDecodeError as exc:
                    line, _, message = utf8_problem(exc)
                    suite.add(
                        child.mark,
                        f"fixture {suite.show(path)}, line {line}: {message}",
                        "save it as UTF-8; its bytes are otherwise kept exactly as they are",
                    )
                    continue
                self.files.append(path.resolve())
            elif isinstance(value, datetime.date):
                values[key] = value.isoformat()
            else:
                values[key] = str(value)
        return values

    def required(self, root: Node, tier: str | None, samples: int | None) -> int | None:
        if tier is None or samples is None:
            return None
        node = root.get("required")
        if node is None:
            return default_required(tier, samples)
        if node.is_scalar and is_whole(node.value) and not 1 <= node.value <= samples:
            self.suite.add(
                node.mark,
                f"`required` must be between 1 and samples ({samples}), got {node.value}",
                "required is how many of the samples must pass",
            )
            return None
        return self.suite.whole(
            node, "required", expected="a whole number of samples", example=str(samples)
        )

    def check_prompt_vars(
        self, root: Node, variables: Mapping[str, str], *, own_turns: bool = False
    ) -> None:
        used = self.suite.system_vars if own_turns else self.prompt_vars
        missing = [name for name in used if name not in variables]
        if missing:
            node = root.get("vars")
            mark = node.where if node is not None else root.mark
            names = ", ".join(missing)
            self.suite.add(
                mark,
                f"the suite prompt uses {{{{{missing[0]}}}}} but this case has no var(s) {names}",
                f"add under vars: {missing[0]}: ...",
            )

    def assertions(
        self, root: Node, variables: Mapping[str, str], expect_refusal: bool
    ) -> tuple[Assertion, ...]:
        suite = self.suite
        node = root.get("assert")
        if node is None or (node.is_scalar and node.value is None):
            if not expect_refusal:
                suite.add(
                    root.mark,
                    "case has no `assert:` list and does not expect a refusal",
                    "add assertions: the reporter's complaint, expressed literally",
                )
            return ()
        if not node.is_seq:
            suite.wrong_type(node, "assert", "a list", "[{type: contains, value: ...}]")
            return ()
        parsed: list[Assertion] = []
        for index, entry in enumerate(node.children()):
            assertion = self.assertion(index, entry, variables)
            if assertion is not None:
                parsed.append(assertion)
        return tuple(parsed)

    def assertion(self, index: int, entry: Node, variables: Mapping[str, str]) -> Assertion | None:
        suite = self.suite
        if not entry.is_map:
            suite.add(
                entry.mark,
                f"an assertion must be a mapping, not {yaml_type(entry)}",
                "write - type: contains\n  value: ...",
            )
            return None
        type_node = entry.get("type")
        if type_node is None:
            suite.add(entry.mark, "assertion has no `type:`", f"one of {', '.join(known_types())}")
            return None
        name = type_node.value
        if not type_node.is_scalar or not isinstance(name, str):
            suite.wrong_type(type_node, "type", "an assertion type name", "contains")
            return None
        cls = assertion_type(name)
        if cls is None:
            if assertion_model(name) is not None:
                suite.add(
                    type_node.mark,
                    f"assertion type {name!r} is not available in this installation "
                    "(the module that provides it could not be imported)",
                    "reinstall redline with its optional dependencies, or remove this assertion",
                )
                return None
            hint = _TYPE_HINTS.get(name, f"known types: {', '.join(known_types())}")
            suite.add(
                type_node.mark,
                f"unknown assertion type {name!r}{did_you_mean(name, known_types())}",
                hint,
            )
            return None
        model = assertion_model(name)
        assert model is not None  # a registered type is always declared
        NodeReader(suite.problems, f"{name}: ").unknown_keys(entry, model.keys | COMMON_KEYS, name)
        spec = Spec(
            type_name=name,
            node=entry,
            index=index,
            case_dir=self.path.parent,
            case_vars=variables,
            config=suite.config,
            display=suite.show,
            tools=suite.tools,
            response_format=self.response_format or suite.response_format,
        )
        assertion = cls.parse(spec)
        suite.problems.extend(spec.problems)
        self.files.extend(p.resolve() for p in spec.files)
        return None if spec.problems else assertion


def check_suite_edit(folder: Path, edits: Mapping[Path, str | None], config: Config | None) -> None:
    """Load the suite in `folder` as it would be after `edits` (new case-file texts; None
    removes a file) without writing anything; raise ProblemsError listing every problem."""
    problems: list[Problem] = []
    suite = _SuiteLoader(folder, config, problems, edits).load()
    if problems or suite is None:
        raise ProblemsError(problems)


def summary(suites: Sequence[Suite]) -> dict[str, int]:
    """Counts for `redline validate`: suites, cases, assertions, samples per run."""
    cases = [c for s in suites for c in s.cases]
    return {
        "suites": len(suites),
        "cases": len(cases),
        "assertions": sum(len(c.assertions) for c in cases),
        "samples": sum(c.samples for c in cases),
    }
