"""`redline pull`: import every CI run not yet in the store, from any `CiProvider`.

Idempotent: an artifact read once is remembered and never downloaded again, and a run
already stored is never added twice. Each run is imported in its own transaction, so a
failed download, a rate limit or Ctrl-C keeps everything imported before it. The shards
of a nightly matrix are not imported beside the merged run that holds them.
"""

from __future__ import annotations

import fnmatch
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from redline.ci.provider import (
    CiArtifact,
    CiProvider,
    CiRun,
    RunQuery,
)
from redline.errors import ArtifactExpired, ArtifactFailed, CiError, ExportUnreadable, NoExport
from redline.running.exchange import ExportedRun, add_export, read_zip
from redline.running.store import RunStore
from redline.vocabulary.records import CiOrigin, RunRecord

#: Artifacts up to this size are held in memory, bigger ones spill to a temporary file.
_IN_MEMORY_BYTES = 64 * 1024 * 1024


class PullProgress(Protocol):
    def listed(self, runs: int) -> None:
        """Another CI run was listed (`runs` so far)."""

    def downloading(self, total: int) -> None:
        """Listing is done: `total` artifacts will be downloaded."""

    def downloaded(self, artifact: CiArtifact, note: str) -> None:
        """One artifact is done (`note` says what came of it)."""


@dataclass
class PullSummary:
    """What one pull did, for the closing lines and the exit code."""

    ci_runs: int = 0
    imported: list[RunRecord] = field(default_factory=list)
    #: Artifacts a previous pull already read: not downloaded again.
    already_pulled: int = 0
    #: Runs read from an artifact that the store already held (imported or run here).
    already_stored: int = 0
    expired: int = 0
    #: Shard runs whose merged run is stored: kept out of the history.
    superseded: int = 0
    #: Artifacts holding no redline export (other uploads of the workflow).
    not_exports: int = 0
    failed: list[str] = field(default_factory=list)
    #: Why the pull stopped before the end (credentials, access, rate limit), if it did.
    stopped: str | None = None

    @property
    def complete(self) -> bool:
        return self.stopped is None and not self.failed


def pull(
    store: RunStore,
    provider: CiProvider,
    query: RunQuery,
    *,
    artifacts: Sequence[str] = (),
    progress: PullProgress | None = None,
) -> PullSummary:
    """Import the runs of `query` that the store lacks; never raises for CI failures."""
    summary = PullSummary()
    seen = store.seen_artifacts(provider.name, provider.repo)
    todo: list[tuple[CiRun, list[CiArtifact]]] = []
    try:
        for run in provider.runs(query):
            summary.ci_runs += 1
            fresh = []
            for artifact in provider.artifacts(run):
                if artifacts and not any(fnmatch.fnmatchcase(artifact.name, p) for p in artifacts):
                    continue
                if artifact.id in seen:
                    summary.already_pulled += 1
                elif artifact.expired:
                    summary.expired += 1
                else:
                    fresh.append(artifact)
            if fresh:
                todo.append((run, fresh))
            if progress is not None:
                progress.listed(summary.ci_runs)
    except CiError as exc:
        summary.stopped = str(exc)
        return summary
    if progress is not None:
        progress.downloading(sum(len(fresh) for _, fresh in todo))
    merged_into = _merged_shards(store.runs())
    try:
        for run, fresh in todo:
            _pull_run(store, provider, run, fresh, merged_into, summary, progress)
    except CiError as exc:
        summary.stopped = str(exc)
    return summary


def _pull_run(
    store: RunStore,
    provider: CiProvider,
    run: CiRun,
    artifacts: Sequence[CiArtifact],
    merged_into: set[str],
    summary: PullSummary,
    progress: PullProgress | None,
) -> None:
    """Download one CI run's artifacts, then import its runs, leaving out merged shards.

    When a download fails, nothing of this CI run is imported yet (the next pull retries).
    """
    label = f"CI run #{run.number}" if run.number is not None else f"CI run {run.id}"
    read, complete = _download(store, provider, artifacts, label, summary, progress)
    if not complete:
        # Importing the rest now could add a night's shards beside the merged run that a
        # later pull brings: the whole CI run waits for the next pull instead.
        for artifact, _ in read:
            if progress is not None:
                progress.downloaded(artifact, "kept for the next pull (a sibling failed)")
        return
    for _, exports in read:
        merged_into |= _merged_shards(e.run for e in exports)
    for artifact, exports in read:
        origin = CiOrigin(
            provider=provider.name,
            repo=provider.repo,
            ci_run_id=run.id,
            run_number=run.number,
            url=run.url,
            event=run.event,
            branch=run.branch,
            artifact=artifact.name,
        )
        notes = [_add(store, exported, origin, merged_into, summary) for exported in exports]
        store.mark_artifact_seen(provider.name, provider.repo, artifact.id, "; ".join(notes))
        if progress is not None:
            progress.downloaded(artifact, ", ".join(notes))


def _download(
    store: RunStore,
    provider: CiProvider,
    artifacts: Sequence[CiArtifact],
    label: str,
    summary: PullSummary,
    progress: PullProgress | None,
) -> tuple[list[tuple[CiArtifact, list[ExportedRun]]], bool]:
    """The exports read from each artifact, and whether every download succeeded.

    An expired artifact, one without an export and an unreadable export are counted and
    skipped; a failed download is counted and makes the CI run incomplete.
    """
    read: list[tuple[CiArtifact, list[ExportedRun]]] = []
    complete = True
    for artifact in artifacts:
        note = ""
        with tempfile.SpooledTemporaryFile(max_size=_IN_MEMORY_BYTES) as buffer:
            try:
                provider.download(artifact, buffer)
                read.append((artifact, read_zip(buffer, f"{artifact.name}.zip")))
            except ArtifactExpired:
                summary.expired += 1
                note = "expired"
            except ArtifactFailed as exc:
                summary.failed.append(f"{label}: {exc}")
                complete = False
                note = "failed"
            except NoExport:
                summary.not_exports += 1
                store.mark_artifact_seen(provider.name, provider.repo, artifact.id, "no export")
                note = "no redline export"
            except ExportUnreadable as exc:
                summary.failed.append(f"{label}: {exc}")
                note = "unreadable"
        if note and progress is not None:
            progress.downloaded(artifact, note)
    return read, complete


def _add(
    store: RunStore,
    exported: ExportedRun,
    origin: CiOrigin,
    merged_into: set[str],
    summary: PullSummary,
) -> str:
    """Import one exported run unless a merged run holds it or it is stored; what was done."""
    run_id = exported.run.id
    if run_id in merged_into:
        summary.superseded += 1
        return "shard of a merged run"
    if store.has_run(run_id):
        summary.already_stored += 1
        if run_id not in store.ci_origins([run_id]):
            store.set_ci_origin(run_id, origin)
        return "already stored"
    summary.imported.append(add_export(store, exported, origin))
    return f"imported run {run_id}"


def _merged_shards(runs: Iterable[RunRecord]) -> set[str]:
    """Ids of shard runs that a merged run among `runs` holds."""
    ids: set[str] = set()
    for run in runs:
        merged_from = run.args.get("merged_from")
        if isinstance(merged_from, list | tuple):
            ids.update(str(i) for i in merged_from)
    return ids
