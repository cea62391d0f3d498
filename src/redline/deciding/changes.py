"""What changed for one case between its reference and its red run, read from git.

Both configurations are exported from git into a temporary folder and loaded with the
suite loader, so a change is what the loader sees (a comment edit of a case file is no
change); the pinned model is read from the config file as committed at each revision.
"""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any

from redline.casemodel import SUITE_FILE, prompt_file, suite_name
from redline.config import Config, ModelRef, pinned_models
from redline.documents.yamlsource import plain_data
from redline.errors import GitError, ProblemsError, RedlineError, UsageError
from redline.gitio import Repo, export_tree, file_at, list_files, repo_path, work_tree
from redline.running.manifest import CONVERSATION_PART, prompt_key, suite_manifest
from redline.suite.cases import Case, Suite, find_suite_dirs, load_suite
from redline.vocabulary.records import RunRecord

#: Settings that change how each sample is generated: the reference prompt arm takes them too.
GENERATION_SETTINGS = {"suite max_tokens", "suite temperature"}


class Change(StrEnum):
    PROMPT = "prompt"
    MODEL = "model"
    CASE = "case"
    VARS = "vars"
    SETTINGS = "settings"


@dataclass(frozen=True)
class ChangeItem:
    kind: Change
    detail: str

    @property
    def generation(self) -> bool:
        """A settings change that alters how a sample is generated (not only the bar)."""
        return self.kind is Change.SETTINGS and self.detail.split(":")[0] in GENERATION_SETTINGS


@dataclass
class SuiteAt:
    """A suite loaded as it was at a revision, and the model its alias pinned there."""

    suite: Suite
    model_id: str | None
    #: None: the red run's uncommitted files, read from the working tree.
    revision: str | None


def find_changes(red: SuiteAt, ref: SuiteAt | None, case_id: str) -> list[ChangeItem]:
    """Every difference between the reference and the red configuration of one case."""
    if ref is None:
        return [ChangeItem(Change.CASE, "the suite did not exist at the reference")]
    found: list[ChangeItem] = []
    rs, fs = red.suite, ref.suite
    if rs.system_template != fs.system_template:
        found.append(ChangeItem(Change.PROMPT, "system prompt text"))
    if rs.user_template != fs.user_template:
        found.append(ChangeItem(Change.PROMPT, "user prompt template"))
    for name in ("messages", "tools", "tool_choice", "response_format"):
        if getattr(rs, name) != getattr(fs, name):
            found.append(ChangeItem(Change.PROMPT, f"suite {name}"))
    if red.model_id and ref.model_id and pinned(red.model_id) != pinned(ref.model_id):
        found.append(ChangeItem(Change.MODEL, f"{ref.model_id} → {red.model_id}"))
    for name in ("max_tokens", "temperature", "samples", "tier"):
        old, new = getattr(fs, name), getattr(rs, name)
        if old != new:
            found.append(ChangeItem(Change.SETTINGS, f"suite {name}: {old} → {new}"))
    red_case = rs.case(case_id)
    try:
        ref_case = fs.case(case_id)
    except KeyError:
        found.append(ChangeItem(Change.CASE, "the case did not exist at the reference"))
        return found
    found.extend(_case_changes(ref_case, red_case))
    return found


def _case_changes(old: Case, new: Case) -> list[ChangeItem]:
    found: list[ChangeItem] = []
    if old.path.read_bytes() != new.path.read_bytes():
        before, after = _case_spec(old.path), _case_spec(new.path)
        if before.get("vars") != after.get("vars"):
            found.append(ChangeItem(Change.VARS, "the case's vars"))
        # The bar moved, not what is tested: the arms still compare rates, judged at the new bar.
        for key in ("samples", "required"):
            if before.get(key) != after.get(key):
                found.append(
                    ChangeItem(Change.SETTINGS, f"case {key}: {before.get(key)} → {after.get(key)}")
                )
        rest = {"vars", "samples", "required", "provenance"}
        other = sorted(
            k for k in set(before) | set(after) if k not in rest and before.get(k) != after.get(k)
        )
        if other:
            found.append(ChangeItem(Change.CASE, "case file: " + ", ".join(other)))
    old_files = {p.name: p.read_bytes() for p in old.files if p.is_file()}
    new_files = {p.name: p.read_bytes() for p in new.files if p.is_file()}
    for name in sorted(set(old_files) | set(new_files)):
        if old_files.get(name) != new_files.get(name):
            found.append(ChangeItem(Change.VARS, f"fixture {name}"))
    return found


def _case_spec(path: Path) -> dict[str, Any]:
    try:
        data = plain_data(path.read_bytes())
    except ValueError:
        return {"(unreadable)": path.read_bytes()}
    return data if isinstance(data, dict) else {"(not a mapping)": data}


def pinned(model_id: str) -> str:
    """The pinned id without a local model file's content hash."""
    return model_id.split("@sha256:", 1)[0]


def with_model(config: Config, alias: str, model_id: str) -> Config:
    """`config` with `alias` pinned to `model_id`."""
    provider, _, name = pinned(model_id).partition(":")
    models = {**config.models, alias: ModelRef(alias=alias, provider=provider, name=name)}
    return dataclasses.replace(config, models=models)


class SuiteExport:
    """Suites as committed at a revision, exported into a temporary folder until `close()`."""

    def __init__(self, config: Config, suite: str) -> None:
        self.config = config
        self.suite = suite
        self.notes: list[str] = []
        self._tmp = tempfile.TemporaryDirectory(prefix="redline-cause-")

    def close(self) -> None:
        self._tmp.cleanup()

    def suite_dir(self, repo: Repo, red_commit: str) -> str:
        """The suite's folder, relative to the top of the repository."""
        for folder in find_suite_dirs(self.config.suites, []):
            if _suite_name(folder / SUITE_FILE) == self.suite:
                return repo_path(repo, folder)
        for path in list_files(repo, red_commit):
            if PurePosixPath(path).name != SUITE_FILE:
                continue
            data = file_at(repo, red_commit, path)
            parent = PurePosixPath(path).parent
            if data is not None and _suite_name_of(data, parent.name) == self.suite:
                return parent.as_posix()
        raise UsageError(
            f"suite {self.suite} is neither in the configured suites nor at the red run's "
            f"commit {red_commit[:12]}"
        )

    def red_suite(self, repo: Repo, suite_dir: str, red_commit: str, run: RunRecord) -> SuiteAt:
        """The red run's configuration: its commit, or its uncommitted files when still there."""
        at_commit = self.suite_at(repo, suite_dir, red_commit, "red")
        if at_commit is None:
            raise UsageError(f"suite {self.suite} is missing at commit {red_commit[:12]}")
        at_commit.model_id = run.model_id
        if not run.git_dirty or _matches(run, at_commit.suite):
            return at_commit
        tree = _work_tree_suite(repo, suite_dir, self.config)
        if tree is not None and _matches(run, tree):
            self.notes.append(
                f"run {run.id} ran on uncommitted files; the working tree still holds them, "
                "so they are used for the red configuration"
            )
            return SuiteAt(tree, run.model_id, None)
        self.notes.append(
            f"run {run.id} ran on uncommitted files that are gone; its commit "
            f"{red_commit[:12]} stands in for them"
        )
        return at_commit

    def suite_at(self, repo: Repo, suite_dir: str, rev: str, side: str) -> SuiteAt | None:
        """The suite as committed at `rev`, exported to a temporary folder; None if absent."""
        spec_bytes = file_at(repo, rev, f"{suite_dir}/{SUITE_FILE}".lstrip("/"))
        if spec_bytes is None:
            return None
        dest = Path(self._tmp.name) / side
        export_tree(repo, rev, suite_dir, dest / suite_dir)
        try:
            spec = plain_data(spec_bytes)
        except ValueError:
            spec = None
        for ref in _prompt_refs(spec):
            normal = PurePosixPath(*_normalise((PurePosixPath(suite_dir) / ref).as_posix()))
            data = file_at(repo, rev, str(normal))
            if data is not None:
                target = dest / normal
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
        alias = spec.get("model") if isinstance(spec, dict) else None
        model_id = self._pinned_at(repo, rev, alias) if isinstance(alias, str) else None
        config = self.config
        if isinstance(alias, str) and alias not in config.models:
            config = with_model(config, alias, model_id or "unknown:unknown")
        try:
            suite = load_suite(dest / suite_dir, config)
        except ProblemsError as exc:
            raise UsageError(
                f"suite {self.suite} at {rev[:12]} does not load ({exc}); "
                "pick another reference revision"
            ) from None
        return SuiteAt(suite, model_id, rev)

    def config_path(self, repo: Repo) -> list[str]:
        """The config file's repository path, when it is inside the repository."""
        try:
            return [repo_path(repo, self.config.source)]
        except GitError:
            return []

    def _pinned_at(self, repo: Repo, rev: str, alias: str) -> str | None:
        try:
            rel = repo_path(repo, self.config.source)
        except GitError:
            return None
        data = file_at(repo, rev, rel)
        if data is None:
            return None
        try:
            return pinned_models(text=data.decode("utf-8")).get(alias)
        except (ValueError, UnicodeDecodeError):
            return None


def _matches(run: RunRecord, suite: Suite) -> bool:
    """The suite's prompts are the ones the run's manifest recorded."""
    keys = [prompt_key(suite, part) for part in ("system", "user", CONVERSATION_PART)]
    mine = suite_manifest(suite, run.model_id)
    return all(run.manifest.get(k) == mine.get(k) for k in keys)


def _work_tree_suite(repo: Repo, suite_dir: str, config: Config) -> Suite | None:
    try:
        return load_suite(work_tree(repo) / suite_dir, config)
    except RedlineError:
        return None


def _prompt_refs(spec: object) -> list[str]:
    if not isinstance(spec, dict) or not isinstance(spec.get("prompt"), dict):
        return []
    refs = (prompt_file(str(k), v) for k, v in spec["prompt"].items() if isinstance(v, str))
    return [ref for ref in refs if ref is not None]


def _normalise(path: str) -> list[str]:
    parts: list[str] = []
    for part in PurePosixPath(path).parts:
        if part == "..":
            if parts:
                parts.pop()
        elif part != ".":
            parts.append(part)
    return parts


def _suite_name(path: Path) -> str | None:
    try:
        return _suite_name_of(path.read_bytes(), path.parent.name)
    except OSError:
        return None


def _suite_name_of(data: bytes, folder: str) -> str:
    try:
        return suite_name(plain_data(data), folder)
    except ValueError:
        return folder
