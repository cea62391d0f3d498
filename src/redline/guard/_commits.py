"""One commit (or the index) against its parent: which files are prompts, suites, cases."""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redline.casemodel import CONVERSATION_KEYS, RETIRED_DIR, SUITE_FILE
from redline.casemodel.diff import BarChange, diff_cases
from redline.casemodel.effective import EffectiveCase, case_id
from redline.config import pinned_in, redline_table, suite_folders
from redline.errors import ConfigError, GitError
from redline.gitio import (
    INDEX,
    FileChange,
    Repo,
    Snapshot,
    changed_files,
    commit_subject,
    parents,
    path_history,
    repo_path,
)
from redline.guard._documents import (
    Parsed,
    Side,
    bar_finding,
    compare_bars_in,
    compare_suite,
    issue_findings,
    join_path,
    name_of,
    suite_problems,
    without_bars,
)
from redline.guard._findings import Finding, GuardReport, Kind, unique

CONFIG_NAMES = ("redline.toml", "pyproject.toml")


@dataclass
class Context:
    """The two sides of one comparison."""

    old: Side
    new: Side


def project_prefix(repo: Repo, root: Path) -> str:
    """The folder of the project inside the repository: where its config file lives."""
    here = root.resolve()
    for folder in (here, *here.parents):
        if any((folder / name).is_file() for name in CONFIG_NAMES):
            try:
                return repo_path(repo, folder)
            except GitError:
                break
    return repo_path(repo, here)


def commit_label(repo: Repo, sha: str) -> str:
    return f"{sha[:12]} {commit_subject(repo, sha)}".rstrip()


def check_one_commit(repo: Repo, sha: str, prefix: str, allow_rewrite: bool) -> GuardReport:
    ups = parents(repo, sha)
    findings = compare_revisions(repo, ups[0] if ups else None, sha, prefix)
    if len(ups) > 1:
        findings.append(Finding(Kind.NOTE, "merge commit", "compared with its first parent"))
    return GuardReport(commit_label(repo, sha), tuple(findings), allow_rewrite)


def compare_revisions(repo: Repo, old_rev: str | None, new_rev: str, prefix: str) -> list[Finding]:
    old = Side(Snapshot(repo, old_rev), "old")
    new = Side(Snapshot(repo, new_rev), "new")
    changes = changed_files(repo, old_rev, new_rev)
    if not changes:
        return []
    ctx = Context(old, new)
    findings: list[Finding] = []

    old_cfg = _project_config(old, prefix)
    new_cfg = _project_config(new, prefix)
    findings += [c.problem for c in (old_cfg, new_cfg) if c.problem is not None]
    findings += _compare_models(old_cfg, new_cfg)

    roots = sorted(set(old_cfg.suite_roots) | set(new_cfg.suite_roots))
    old_suites = _suite_dirs(old, roots)
    new_suites = _suite_dirs(new, roots)
    findings += _suites_dropped_from_config(old_suites, old_cfg, new_cfg)
    changed = _ChangeSet(changes)
    others = [
        p
        for p in changed.paths
        if posixpath.basename(p) != SUITE_FILE
        and not _is_case_path(p, old_suites)
        and not _is_case_path(p, new_suites)
    ]
    old_refs = _references(old, old_suites, with_cases=bool(others))
    new_refs = _references(new, new_suites, with_cases=bool(others))
    suite_pairs = _pair_suites(ctx, changed, old_suites, new_suites)

    findings += _prompt_file_changes(ctx, changed, old_refs, new_refs)
    findings += _suite_changes(ctx, changed, suite_pairs, old_refs, new_refs)
    findings += _case_changes(ctx, changed, old_suites, new_suites, old_refs, new_refs, suite_pairs)
    findings += _rubric_changes(ctx, changed, old_refs, new_refs)
    findings += _submodule_notes(changed, roots)
    return unique(findings)


class _ChangeSet:
    def __init__(self, changes: Sequence[FileChange]) -> None:
        self.changes = [c for c in changes if not c.submodule]
        self.submodules = [c for c in changes if c.submodule]
        self.paths = {p for c in self.changes for p in (c.old_path, c.new_path) if p}

    def touches(self, path: str) -> bool:
        return path in self.paths


@dataclass
class _ProjectConfig:
    path: str | None
    models: dict[str, str]
    suite_roots: tuple[str, ...]
    problem: Finding | None = None


def _project_config(side: Side, prefix: str) -> _ProjectConfig:
    """The pinned models and suite folders at one side, read the way load_config reads them."""
    default_roots = (join_path(prefix, "cases"),)
    for name in CONFIG_NAMES:
        path = join_path(prefix, name)
        raw = side.read(path)
        if raw is None:
            continue
        try:
            table = redline_table(raw.decode("utf-8"), name)
        except (UnicodeDecodeError, ConfigError) as exc:
            problem = Finding(Kind.BROKEN, path, f"{side.name} side does not parse: {exc}", path)
            return _ProjectConfig(path, {}, default_roots, problem)
        if table is None:
            continue
        models = pinned_in(table)
        suite_roots = tuple(join_path(prefix, folder) for folder in suite_folders(table))
        return _ProjectConfig(path, models, suite_roots or default_roots)
    return _ProjectConfig(None, {}, default_roots)


def _compare_models(old: _ProjectConfig, new: _ProjectConfig) -> list[Finding]:
    where = new.path or old.path or "config"
    findings = []
    for alias in sorted(set(old.models) | set(new.models)):
        before, after = old.models.get(alias), new.models.get(alias)
        if before == after:
            continue
        detail = f"{alias} {before or '(none)'} → {after or '(removed)'}"
        findings.append(Finding(Kind.PROMPT, f"pinned model in {where}", detail, where))
    return findings


def _suite_dirs(side: Side, roots: Sequence[str]) -> dict[str, str]:
    """suite folder → its suite.yaml path, for every suite below the configured roots."""
    files = side.snap.files(roots)
    return {
        posixpath.dirname(p): p
        for p in files
        if posixpath.basename(p) == SUITE_FILE and _under_any(p, roots)
    }


def _suites_dropped_from_config(
    suites: Mapping[str, str], old: _ProjectConfig, new: _ProjectConfig
) -> list[Finding]:
    """A suite the old config ran that the new `suites` setting no longer reaches."""
    where = new.path or old.path or "config"
    return [
        Finding(
            Kind.LOOSENING,
            f"suite {folder}",
            f"no longer under the configured suites ({', '.join(new.suite_roots)}): "
            "its cases stop running",
            where,
        )
        for folder in sorted(suites)
        if _under_any(folder, old.suite_roots) and not _under_any(folder, new.suite_roots)
    ]


def _under_any(path: str, roots: Sequence[str]) -> bool:
    return any(not r or path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


@dataclass
class _References:
    """Files that suites and cases at one side point to, with who points to them."""

    prompts: dict[str, list[str]] = field(default_factory=dict)
    rubrics: dict[str, list[str]] = field(default_factory=dict)
    #: Every file a case reads (fixtures, schemas, golden answers, rubrics) → case paths.
    files: dict[str, list[str]] = field(default_factory=dict)


def _references(side: Side, suites: Mapping[str, str], *, with_cases: bool) -> _References:
    """Prompt files of suites; with `with_cases`, every file each case reads."""
    refs = _References()
    for folder, suite_path in suites.items():
        parsed = side.yaml(suite_path)
        name = name_of(parsed.data, folder)
        for _role, target in _prompt_files(side, folder, parsed.data):
            refs.prompts.setdefault(target, []).append(f"suite {name}")
    if not with_cases or not suites:
        return refs
    cases = [
        p
        for p in side.snap.files(list(suites))
        if _is_case_path(p, suites) and posixpath.dirname(p) in suites
    ]
    side.snap.prefetch(cases)
    for path in cases:
        raw = side.read(path) or b""
        if b"file://" not in raw and b"rubric" not in raw:
            continue  # reads no file
        folder = posixpath.dirname(path)
        text = raw.decode("utf-8", errors="replace")
        # Found in the text, not the parsed YAML: cheap on every case, and a stray match
        # only makes the guard look at one more case.
        for ref in _FILE_REF.findall(text):
            refs.files.setdefault(join_path(folder, ref), []).append(path)
        rubrics = _RUBRIC_REF.findall(text)
        if rubrics:
            label = f"case {case_id(side.yaml(path).data, path)}"
            for ref in rubrics:
                target = join_path(folder, ref.removeprefix("file://"))
                refs.files.setdefault(target, []).append(path)
                refs.rubrics.setdefault(target, []).append(label)
    return refs


_FILE_REF = re.compile(r"file://([^\s'\",\]}#]+)")
_RUBRIC_REF = re.compile(r"\brubric:\s*['\"]?([^\s'\",\]}#]+)")


def _prompt_files(side: Side, folder: str, suite: Any) -> list[tuple[str, str]]:
    """(role, repository path) of each prompt part of a suite that lives in a file."""
    prompt = suite.get("prompt") if isinstance(suite, dict) else None
    parts = prompt.items() if isinstance(prompt, dict) else [("prompt", prompt)]
    found = []
    for role, value in parts:
        target = _file_ref(value, folder)
        if target is None and isinstance(value, str) and "\n" not in value and "{{" not in value:
            candidate = join_path(folder, value.strip())
            if side.read(candidate) is not None:
                target = candidate
        if target is not None:
            found.append((str(role), target))
    for key in CONVERSATION_KEYS:
        value = suite.get(key) if isinstance(suite, dict) else None
        found += [(key, join_path(folder, ref)) for ref in _nested_refs(value)]
    return found


def _nested_refs(value: Any) -> list[str]:
    """Every file:// reference inside a YAML value (a tools file, a schema, an image)."""
    if isinstance(value, str):
        return [value.removeprefix("file://")] if value.startswith("file://") else []
    if isinstance(value, dict):
        return [ref for v in value.values() for ref in _nested_refs(v)]
    if isinstance(value, list):
        return [ref for v in value for ref in _nested_refs(v)]
    return []


def _prompt_text(side: Side, folder: str, suite: Any) -> dict[str, tuple[str, bytes | None]]:
    """role → (where, content) of every prompt part, file or inline."""
    prompt = suite.get("prompt") if isinstance(suite, dict) else None
    parts = prompt.items() if isinstance(prompt, dict) else [("prompt", prompt)]
    files = dict(_prompt_files(side, folder, suite))
    result: dict[str, tuple[str, bytes | None]] = {}
    for role, value in parts:
        if value is None:
            continue
        if str(role) in files:
            result[str(role)] = (files[str(role)], side.read(files[str(role)]))
        else:
            result[str(role)] = ("inline", json.dumps(value, sort_keys=True).encode())
    return result


def _file_ref(value: Any, folder: str) -> str | None:
    if isinstance(value, str) and value.startswith("file://"):
        return join_path(folder, value.removeprefix("file://"))
    return None


def _refs_in(data: Any, key: str, folder: str) -> list[str]:
    """Paths given under `key` anywhere in a YAML document, resolved from `folder`."""
    found: list[str] = []
    if isinstance(data, dict):
        for k, v in data.items():
            if k == key and isinstance(v, str) and v.strip():
                found.append(join_path(folder, v.strip().removeprefix("file://")))
            else:
                found += _refs_in(v, key, folder)
    elif isinstance(data, list):
        for item in data:
            found += _refs_in(item, key, folder)
    return found


def _is_case_path(path: str, suites: Mapping[str, str]) -> bool:
    if not path.endswith((".yaml", ".yml")) or posixpath.basename(path) == SUITE_FILE:
        return False
    folder = posixpath.dirname(path)
    if folder in suites:
        return True
    return posixpath.basename(folder) == RETIRED_DIR and posixpath.dirname(folder) in suites


def _is_retired(path: str) -> bool:
    return posixpath.basename(posixpath.dirname(path)) == RETIRED_DIR


def _suite_of(path: str) -> str:
    folder = posixpath.dirname(path)
    return posixpath.dirname(folder) if posixpath.basename(folder) == RETIRED_DIR else folder


def _prompt_file_changes(
    ctx: Context, changed: _ChangeSet, old_refs: _References, new_refs: _References
) -> list[Finding]:
    findings = []
    for change in changed.changes:
        names = [p for p in (change.old_path, change.new_path) if p]
        users = sorted(
            {u for p in names for u in old_refs.prompts.get(p, []) + new_refs.prompts.get(p, [])}
        )
        if not users:
            continue
        before = ctx.old.read(change.old_path) if change.old_path else None
        after = ctx.new.read(change.new_path) if change.new_path else None
        if before == after:
            continue
        what = {"A": "added", "D": "deleted", "R": "renamed and changed"}.get(change.status, "")
        what = what or "changed"
        shown = f"{change.old_path} → {change.new_path}" if change.status == "R" else change.path
        findings.append(
            Finding(
                Kind.PROMPT, f"prompt {shown}", f"{what} (used by {_listing(users)})", change.path
            )
        )
    return findings


def _suite_changes(
    ctx: Context,
    changed: _ChangeSet,
    suite_pairs: Sequence[tuple[str | None, str | None]],
    old_refs: _References,
    new_refs: _References,
) -> list[Finding]:
    findings: list[Finding] = []
    prompt_paths = set(old_refs.prompts) | set(new_refs.prompts)
    for old_path, new_path in suite_pairs:
        old_p = ctx.old.yaml(old_path) if old_path else Parsed(None)
        new_p = ctx.new.yaml(new_path) if new_path else Parsed(None)
        old_folder = posixpath.dirname(old_path) if old_path else ""
        new_folder = posixpath.dirname(new_path) if new_path else ""
        name = name_of(new_p.data if new_path else old_p.data, new_folder or old_folder)
        if new_path is not None:
            broken = suite_problems(ctx.new, new_path, name)
            if broken:
                findings += broken
                continue
        if old_path is not None and suite_problems(ctx.old, old_path, name):
            detail = f"repairs {old_path}, which did not load before"
            findings.append(Finding(Kind.NOTE, f"suite {name}", detail, new_path or old_path))
            continue
        if old_path is None:
            findings.append(Finding(Kind.TIGHTENING, f"suite {name}", "new suite", new_path or ""))
            for role, (where, _c) in _prompt_text(ctx.new, new_folder, new_p.data).items():
                if where == "inline":
                    findings.append(Finding(Kind.PROMPT, f"suite {name}", f"new prompt.{role}"))
            continue
        if new_path is None:
            findings.append(Finding(Kind.LOOSENING, f"suite {name}", "suite removed", old_path))
            continue
        before = _prompt_text(ctx.old, old_folder, old_p.data)
        after = _prompt_text(ctx.new, new_folder, new_p.data)
        for role in sorted(set(before) | set(after)):
            b, a = before.get(role), after.get(role)
            if b is not None and a is not None and b[1] == a[1]:
                continue
            if any(x and x[0] in prompt_paths and changed.touches(x[0]) for x in (b, a)):
                continue  # already named as a changed prompt file
            detail = f"prompt.{role} {b[0] if b else '(none)'} → {a[0] if a else '(none)'}"
            findings.append(Finding(Kind.PROMPT, f"suite {name}", detail, new_path))
        findings += compare_suite(name, new_path, old_p.data, new_p.data, new_p.raw)
    return findings


def _pair_suites(
    ctx: Context,
    changed: _ChangeSet,
    old_suites: Mapping[str, str],
    new_suites: Mapping[str, str],
) -> list[tuple[str | None, str | None]]:
    """(old, new) suite.yaml pairs worth comparing: renames followed, then same name."""
    old_side, new_side = ctx.old, ctx.new
    renamed = {c.old_path: c.new_path for c in changed.changes if c.status == "R"}
    new_paths = set(new_suites.values())
    pairs: list[tuple[str | None, str | None]] = []
    gone: list[str] = []
    for path in old_suites.values():
        target = renamed.get(path, path)
        if target in new_paths:
            new_paths.discard(target)
            pairs.append((path, target))
        else:
            gone.append(path)
    by_name = {name_of(ctx.new.yaml(p).data, posixpath.dirname(p)): p for p in sorted(new_paths)}
    for path in gone:
        match = by_name.pop(name_of(ctx.old.yaml(path).data, posixpath.dirname(path)), None)
        pairs.append((path, match))
        new_paths.discard(match or "")
    pairs += [(None, p) for p in sorted(new_paths)]

    def worth(pair: tuple[str | None, str | None]) -> bool:
        old, new = pair
        if old is None or new is None or old != new:
            return True
        folder = posixpath.dirname(old)
        prompts = {p for _r, p in _prompt_files(old_side, folder, old_side.yaml(old).data)}
        prompts |= {p for _r, p in _prompt_files(new_side, folder, new_side.yaml(new).data)}
        return changed.touches(old) or any(changed.touches(p) for p in prompts)

    return [p for p in pairs if worth(p)]


def _case_changes(
    ctx: Context,
    changed: _ChangeSet,
    old_suites: Mapping[str, str],
    new_suites: Mapping[str, str],
    old_refs: _References,
    new_refs: _References,
    suite_pairs: Sequence[tuple[str | None, str | None]],
) -> list[Finding]:
    """Every case whose effective bar may have moved: its file, its suite's settings or a
    file it reads changed. Each is judged by what it enforces on both sides."""
    pairs = _changed_case_files(ctx, changed, old_suites, new_suites)
    renamed = {c.old_path: c.new_path for c in changed.changes if c.old_path and c.new_path}
    seen_old = {o for o, _n in pairs if o}
    seen_new = {n for _o, n in pairs if n}
    for old_path, new_path in [
        *_cases_of_changed_suites(ctx, new_suites, suite_pairs, renamed),
        *_cases_reading_changed_files(changed, old_suites, new_suites, old_refs, new_refs, renamed),
    ]:
        if (old_path and old_path in seen_old) or (new_path and new_path in seen_new):
            continue
        seen_old.add(old_path or "")
        seen_new.add(new_path or "")
        pairs[old_path, new_path] = None
    findings: list[Finding] = []
    for old_path, new_path in pairs:
        findings += _case_pair(ctx, old_path, new_path, old_suites, new_suites)
    return findings


def _changed_case_files(
    ctx: Context,
    changed: _ChangeSet,
    old_suites: Mapping[str, str],
    new_suites: Mapping[str, str],
) -> dict[tuple[str | None, str | None], None]:
    """(old, new) paths of the case files the change touches, in order, without repeats;
    a case deleted in one place and added in another with the same id is a move."""
    pairs: dict[tuple[str | None, str | None], None] = {}
    gone: list[str] = []
    born: list[str] = []
    for c in changed.changes:
        old_case = c.old_path if c.old_path and _is_case_path(c.old_path, old_suites) else None
        new_case = c.new_path if c.new_path and _is_case_path(c.new_path, new_suites) else None
        if old_case and new_case:
            pairs[old_case, new_case] = None
        elif old_case:
            gone.append(old_case)
        elif new_case:
            born.append(new_case)
    born_by_id: dict[str, str] = {}
    for path in born:
        parsed = ctx.new.yaml(path)
        if parsed.problem is None:
            born_by_id.setdefault(case_id(parsed.data, path), path)
    for path in gone:
        parsed = ctx.old.yaml(path)
        match = born_by_id.pop(case_id(parsed.data, path), None) if parsed.problem is None else None
        pairs[path, match] = None
    matched = {n for _o, n in pairs if n}
    for path in born:
        if path not in matched:
            pairs[None, path] = None
    return pairs


def _cases_of_changed_suites(
    ctx: Context,
    new_suites: Mapping[str, str],
    suite_pairs: Sequence[tuple[str | None, str | None]],
    renamed: Mapping[str, str],
) -> list[tuple[str | None, str]]:
    """(old, new) paths of every case in a suite whose settings changed."""
    back = {n: o for o, n in renamed.items()}
    found: list[tuple[str | None, str]] = []
    for old_suite, new_suite in suite_pairs:
        if old_suite is None or new_suite is None:
            continue
        if ctx.old.suite(old_suite) == ctx.new.suite(new_suite):
            continue
        old_folder, new_folder = posixpath.dirname(old_suite), posixpath.dirname(new_suite)
        for path in ctx.new.snap.files([new_folder]):
            if posixpath.dirname(path) == new_folder and _is_case_path(path, new_suites):
                before = back.get(path, join_path(old_folder, posixpath.basename(path)))
                found.append((before if ctx.old.read(before) is not None else None, path))
    return found


def _cases_reading_changed_files(
    changed: _ChangeSet,
    old_suites: Mapping[str, str],
    new_suites: Mapping[str, str],
    old_refs: _References,
    new_refs: _References,
    renamed: Mapping[str, str],
) -> list[tuple[str | None, str | None]]:
    """(old, new) paths of every case that reads a changed file (schema, prompt, golden)."""
    back = {n: o for o, n in renamed.items()}
    found: list[tuple[str | None, str | None]] = []
    for target in sorted(changed.paths):
        users = sorted(set(old_refs.files.get(target, [])) | set(new_refs.files.get(target, [])))
        for user in users:
            before, after = back.get(user, user), renamed.get(user, user)
            found.append(
                (
                    before if before and _is_case_path(before, old_suites) else None,
                    after if after and _is_case_path(after, new_suites) else None,
                )
            )
    return found


def _case_pair(
    ctx: Context,
    old_path: str | None,
    new_path: str | None,
    old_suites: Mapping[str, str],
    new_suites: Mapping[str, str],
) -> list[Finding]:
    """What one case's change does to its bar: deleted, retired, new, or edited."""
    old_p = ctx.old.yaml(old_path) if old_path else Parsed(None)
    new_p = ctx.new.yaml(new_path) if new_path else Parsed(None)
    name = case_id(
        new_p.data if new_path and new_p.problem is None else old_p.data, new_path or old_path or ""
    )
    subject = f"case {name}"
    old_active = old_path is not None and not _is_retired(old_path)
    new_active = new_path is not None and not _is_retired(new_path)
    if new_path is None:
        if not old_active:
            return []
        return [Finding(Kind.LOOSENING, subject, f"deleted ({old_path})", old_path or "")]
    if not new_active:
        if old_active:
            return [Finding(Kind.LOOSENING, subject, f"retired (moved to {new_path})", new_path)]
        return []
    if new_p.problem is not None:
        return [new_p.problem]
    new_case = ctx.new.case(new_path, new_suites.get(_suite_of(new_path)))
    if not new_case.valid:
        return issue_findings(ctx.new, new_case, new_p)
    if not old_active:
        what = "restored from retired/" if old_path else "new case"
        return [Finding(Kind.TIGHTENING, subject, what, new_path)]
    assert old_path is not None
    findings: list[Finding] = []
    if old_path != new_path:
        findings.append(Finding(Kind.NOTE, subject, f"moved {old_path} → {new_path}", new_path))
    old_suite = old_suites.get(_suite_of(old_path))
    old_case = ctx.old.case(old_path, old_suite) if old_p.problem is None else None
    old_raw = old_p.raw
    if old_case is None or not old_case.valid:
        repaired = last_valid_version(ctx.old, old_path, old_suite)
        findings.append(Finding(Kind.NOTE, subject, _repair_note(old_path, repaired), new_path))
        if repaired is None:
            return findings
        _sha, old_case, old_raw = repaired
    before = _CaseVersion(old_path, old_case, old_raw)
    return findings + _edit_findings(subject, before, _CaseVersion(new_path, new_case, new_p.raw))


def _repair_note(old_path: str, repaired: tuple[str, EffectiveCase, bytes | None] | None) -> str:
    """The note on a change that repairs a case file which did not load before."""
    if repaired is None:
        return (
            f"repairs {old_path}, which never loaded before: judged as a new case "
            "(nothing was enforced before, so nothing is loosened)"
        )
    return (
        f"repairs {old_path}, which did not load: compared with its last version "
        f"that loaded (commit {repaired[0][:12]})"
    )


@dataclass(frozen=True)
class _CaseVersion:
    """One version of an edited case: its path, what it enforces, and its file's bytes."""

    path: str
    case: EffectiveCase
    raw: bytes | None


def _edit_findings(subject: str, old: _CaseVersion, new: _CaseVersion) -> list[Finding]:
    """Each change of an edited case's bar, said where it was made."""
    diff = diff_cases(old.case, new.case)
    findings: list[Finding] = []
    for change in diff.changes:
        if (
            _suite_of(old.path) == _suite_of(new.path)
            and change.label in _BAR_LABELS
            and not (_own_bar(old.case) or _own_bar(new.case))
        ):
            continue  # the suite's own finding says it once for all its cases
        side = old if change.in_old_file else new
        if any(change.files):
            findings += _schema_findings(subject, change, side.path, side.raw)
        else:
            findings.append(bar_finding(subject, change, side.path, side.raw))
    findings += [bar_finding(subject, note, new.path, new.raw) for note in diff.notes]
    return findings


_BAR_LABELS = frozenset({"tier", "samples", "required"})


def _own_bar(case: EffectiveCase) -> bool:
    return not (case.samples.default and case.tier.default and case.required.default)


def _schema_findings(
    subject: str, change: BarChange, path: str, raw: bytes | None
) -> list[Finding]:
    """A schema file read by a case: named as the file, with the case that uses it."""
    old, new = change.files
    shown = old if old == new or not new else (new if not old else f"{old} → {new}")
    kind = bar_finding(subject, change, path, raw)
    where = new or old
    return [
        Finding(kind.kind, f"schema {shown}", change.detail, where),
        Finding(Kind.NOTE, f"schema {shown}", f"used by {subject}", kind.path, kind.line),
    ]


def last_valid_version(
    side: Side, path: str, suite_path: str | None
) -> tuple[str, EffectiveCase, bytes | None] | None:
    """The newest earlier version of a case file (up to the side's revision) that loaded."""
    rev = side.snap.rev
    if rev is None:
        return None
    base = side.snap.head if rev == INDEX else rev
    if base is None:
        return None
    for sha in path_history(side.snap.repo, base, path):
        earlier = Side(Snapshot(side.snap.repo, sha), side.name)
        parsed = earlier.yaml(path)
        if parsed.problem is not None or parsed.data is None:
            continue
        suite = suite_path if suite_path and earlier.read(suite_path) is not None else None
        case = earlier.case(path, suite)
        if case.valid:
            return sha, case, parsed.raw
    return None


def _rubric_changes(
    ctx: Context, changed: _ChangeSet, old_refs: _References, new_refs: _References
) -> list[Finding]:
    """Judge rubrics that changed under the cases using them."""
    rubric_pairs: dict[tuple[str, str], list[str]] = {}
    for c in changed.changes:
        old_path = c.old_path or c.new_path or ""
        new_path = c.new_path or ""
        users = old_refs.rubrics.get(old_path, []) + new_refs.rubrics.get(new_path, [])
        if users:
            rubric_pairs.setdefault((old_path, new_path), []).extend(users)
    findings: list[Finding] = []
    for (old_path, new_path), users in sorted(rubric_pairs.items()):
        findings += _rubric_file_change(ctx, old_path, new_path, sorted(set(users)))
    return findings


def _rubric_file_change(
    ctx: Context, old_path: str, new_path: str, users: Sequence[str]
) -> list[Finding]:
    subject = f"rubric {new_path or old_path} (used by {_listing(users)})"
    old = ctx.old.yaml(old_path)
    new = ctx.new.yaml(new_path) if new_path else Parsed(None)
    problems = [p.problem for p in (old, new) if p.problem is not None]
    if problems:
        return [*problems, Finding(Kind.PROMPT, subject, "judge rubric changed")]
    if new.data is None:
        return [Finding(Kind.LOOSENING, subject, "rubric removed", old_path)]
    findings = compare_bars_in(subject, old.data, new.data)
    if without_bars(old.data) != without_bars(new.data):
        findings.append(Finding(Kind.PROMPT, subject, "judge rubric changed", new_path))
    return findings


def _listing(names: Sequence[str], limit: int = 4) -> str:
    shown = ", ".join(names[:limit])
    return f"{shown} and {len(names) - limit} more" if len(names) > limit else shown


def _submodule_notes(changed: _ChangeSet, roots: Sequence[str]) -> list[Finding]:
    findings = []
    for c in changed.submodules:
        if _under_any(c.path, roots) or any(
            r.startswith(c.path.rstrip("/") + "/") for r in roots if r
        ):
            findings.append(
                Finding(
                    Kind.BROKEN,
                    f"submodule {c.path}",
                    "changed; files inside a submodule cannot be compared — "
                    "run `redline guard` inside the submodule's own repository",
                    c.path,
                )
            )
        else:
            findings.append(Finding(Kind.NOTE, f"submodule {c.path}", "changed (not inspected)"))
    return findings
